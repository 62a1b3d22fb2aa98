package ingress

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// errorSummary is each error as "Type path: detail", sorted.
func errorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", string(e.Type), e.Field, e.Detail))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := errorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func backend(name string, port int32) networkingv1.IngressBackend {
	return networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: name, Port: networkingv1.ServiceBackendPort{Number: port}}}
}

func httpRule(host, path string, pathType networkingv1.PathType) networkingv1.IngressRule {
	return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
		Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: ptr.To(pathType), Backend: backend("web", 80)}},
	}}}
}

func ingress(mutate ...func(*networkingv1.Ingress)) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec:       networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{httpRule("foo.example.com", "/", networkingv1.PathTypePrefix)}},
	}
	for _, m := range mutate {
		m(ing)
	}
	return ing
}

func path0(mutate func(*networkingv1.HTTPIngressPath)) func(*networkingv1.Ingress) {
	return func(ing *networkingv1.Ingress) { mutate(&ing.Spec.Rules[0].HTTP.Paths[0]) }
}

func TestValidateIngressCreate(t *testing.T) {
	const p0 = "spec.rules[0].http.paths[0]"
	tests := []struct {
		name string
		ing  *networkingv1.Ingress
		want []string
	}{
		{name: "valid", ing: ingress()},
		{name: "default backend only", ing: ingress(func(ing *networkingv1.Ingress) {
			ing.Spec.Rules = nil
			ing.Spec.DefaultBackend = ptr.To(backend("web", 80))
		})},
		{name: "wildcard host, implementation-specific empty path", ing: ingress(func(ing *networkingv1.Ingress) {
			ing.Spec.Rules = []networkingv1.IngressRule{httpRule("*.example.com", "", networkingv1.PathTypeImplementationSpecific)}
		})},
		{name: "service name with a leading digit (relaxed)", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend.Service.Name = "1web" }))},
		{name: "neither rules nor default backend", ing: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules = nil }),
			want: []string{"FieldValueInvalid spec: either `defaultBackend` or `rules` must be specified"}},
		{name: "no pathType", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.PathType = nil })),
			want: []string{"FieldValueRequired " + p0 + ".pathType: pathType must be specified"}},
		{name: "unknown pathType", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.PathType = ptr.To(networkingv1.PathType("Regex")) })),
			want: []string{`FieldValueNotSupported ` + p0 + `.pathType: supported values: "Exact", "ImplementationSpecific", "Prefix"`}},
		{name: "relative prefix path", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Path = "foo" })),
			want: []string{"FieldValueInvalid " + p0 + ".path: must be an absolute path"}},
		{name: "path with //", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Path = "/foo//bar" })),
			want: []string{"FieldValueInvalid " + p0 + ".path: must not contain '//'"}},
		{name: "path ending /..", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Path = "/foo/.." })),
			want: []string{"FieldValueInvalid " + p0 + ".path: cannot end with '/..'"}},
		{name: "no paths", ing: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].HTTP.Paths = nil }),
			want: []string{"FieldValueRequired spec.rules[0].http.paths: "}},
		{name: "IP host", ing: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "1.2.3.4" }),
			want: []string{"FieldValueInvalid spec.rules[0].host: must be a DNS name, not an IP address"}},
		{name: "bad wildcard host", ing: ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "foo.*.com" }),
			want: []string{`FieldValueInvalid spec.rules[0].host: a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\*\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`}},
		{name: "both backends", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) {
			p.Backend.Resource = &corev1TypedRef
		})), want: []string{"FieldValueInvalid " + p0 + ".backend: cannot set both resource and service backends"}},
		{name: "no backend", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend = networkingv1.IngressBackend{} })),
			want: []string{"FieldValueInvalid " + p0 + ".backend: resource or service backend is required"}},
		{name: "resource backend without kind", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) {
			p.Backend = networkingv1.IngressBackend{Resource: ptrRef("", "bucket")}
		})), want: []string{"FieldValueRequired " + p0 + ".backend.resource.kind: "}},
		{name: "both port name and number", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend.Service.Port.Name = "http" })),
			want: []string{"FieldValueInvalid " + p0 + ".backend: cannot set both port name & port number"}},
		{name: "no port", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend.Service.Port.Number = 0 })),
			want: []string{"FieldValueRequired " + p0 + ".backend: port name or number is required"}},
		{name: "port out of range", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend.Service.Port.Number = 70000 })),
			want: []string{"FieldValueInvalid " + p0 + ".backend.service.port.number: must be between 1 and 65535, inclusive"}},
		{name: "no service name", ing: ingress(path0(func(p *networkingv1.HTTPIngressPath) { p.Backend.Service.Name = "" })),
			want: []string{"FieldValueRequired " + p0 + ".backend.service.name: "}},
		{name: "bad TLS secret name", ing: ingress(func(ing *networkingv1.Ingress) {
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"foo.example.com"}, SecretName: "Bad_Name"}}
		}), want: []string{"FieldValueInvalid spec.tls[0].secretName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "bad class name", ing: ingress(func(ing *networkingv1.Ingress) { ing.Spec.IngressClassName = ptr.To("Nginx") }),
			want: []string{"FieldValueInvalid spec.ingressClassName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "annotation disagrees with class", ing: ingress(func(ing *networkingv1.Ingress) {
			ing.Annotations = map[string]string{ClassAnnotation: "traefik"}
			ing.Spec.IngressClassName = ptr.To("nginx")
		}), want: []string{"FieldValueInvalid annotations.kubernetes.io/ingress.class: must match `ingressClassName` when both are specified"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateIngressCreate(tt.ing), tt.want)
		})
	}
}

var corev1TypedRef = *ptrRef("StorageBucket", "static")

func TestValidateIngressUpdate(t *testing.T) {
	// A stored invalid TLS secret name stays acceptable; the annotation check is create-only.
	old := ingress(func(ing *networkingv1.Ingress) {
		ing.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "Bad_Name"}}
	})
	ing := old.DeepCopy()
	ing.Annotations = map[string]string{ClassAnnotation: "traefik"}
	ing.Spec.IngressClassName = ptr.To("nginx")
	assertFieldErrors(t, ValidateIngressUpdate(ing, old), nil)
	assertFieldErrors(t, ValidateIngressUpdate(ing, ingress()), []string{
		"FieldValueInvalid spec.tls[0].secretName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
	})
}

func TestValidateIngressStatusUpdate(t *testing.T) {
	old := ingress()
	ing := old.DeepCopy()
	ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}, {IP: "300.0.0.1"}, {Hostname: "10.0.0.2"}}
	assertFieldErrors(t, StatusStrategy.ValidateUpdate(context.Background(), ing, old), []string{
		"FieldValueInvalid status.loadBalancer.ingress[1].ip: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
		"FieldValueInvalid status.loadBalancer.ingress[2].hostname: must be a DNS name, not an IP address",
	})
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	ing := ingress(func(ing *networkingv1.Ingress) {
		ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}
	})
	Strategy.PrepareForCreate(ctx, ing)
	if ing.Generation != 1 || len(ing.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("after create: generation %d, status %+v; want 1 and none", ing.Generation, ing.Status)
	}
	stored := ing.DeepCopy()
	stored.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.1"}}

	update := stored.DeepCopy()
	update.Status = networkingv1.IngressStatus{}
	update.Spec.Rules[0].Host = "bar.example.com"
	Strategy.PrepareForUpdate(ctx, update, stored)
	if update.Generation != 2 || len(update.Status.LoadBalancer.Ingress) != 1 {
		t.Errorf("after a spec update: generation %d, status %+v; want 2 and the stored status", update.Generation, update.Status)
	}

	status := stored.DeepCopy()
	status.Spec.Rules = nil
	status.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{Hostname: "lb.example.com"}}
	StatusStrategy.PrepareForUpdate(ctx, status, stored)
	if len(status.Spec.Rules) != 1 || status.Status.LoadBalancer.Ingress[0].Hostname != "lb.example.com" {
		t.Errorf("after a status update: %+v", status)
	}

	warn := ingress(func(ing *networkingv1.Ingress) { ing.Annotations = map[string]string{ClassAnnotation: "nginx"} })
	if w := Strategy.WarningsOnCreate(ctx, warn); len(w) != 1 {
		t.Errorf("warnings %q, want the deprecated annotation", w)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	conv := newTableConvertor(clocktesting.NewFakePassiveClock(now))
	tests := []struct {
		name string
		ing  *networkingv1.Ingress
		want string
	}{
		{"plain", ingress(), "[web <none> foo.example.com  80 2m]"},
		{"class, TLS, addresses", ingress(func(ing *networkingv1.Ingress) {
			ing.Spec.IngressClassName = ptr.To("nginx")
			ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"foo.example.com"}}}
			ing.Status.LoadBalancer.Ingress = []networkingv1.IngressLoadBalancerIngress{{IP: "10.0.0.2"}, {Hostname: "lb.example.com"}, {IP: "10.0.0.2"}}
		}), "[web nginx foo.example.com 10.0.0.2,lb.example.com 80, 443 2m]"},
		{"no hosts", ingress(func(ing *networkingv1.Ingress) { ing.Spec.Rules[0].Host = "" }), "[web <none> *  80 2m]"},
		{"many hosts", ingress(func(ing *networkingv1.Ingress) {
			ing.Spec.Rules = []networkingv1.IngressRule{{Host: "a"}, {}, {Host: "b"}, {Host: "c"}, {Host: "d"}, {Host: "e"}}
		}), "[web <none> a,b,c + 3 more...  80 2m]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ing.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Minute))
			tbl, err := conv.ConvertToTable(context.Background(), tt.ing, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(tbl.Rows[0].Cells); got != tt.want {
				t.Errorf("row %s, want %s", got, tt.want)
			}
			if len(tbl.ColumnDefinitions) != 6 || tbl.ColumnDefinitions[1].Name != "Class" {
				t.Errorf("columns %+v", tbl.ColumnDefinitions)
			}
		})
	}
}

func ptrRef(kind, name string) *corev1.TypedLocalObjectReference {
	return &corev1.TypedLocalObjectReference{APIGroup: ptr.To("storage.example.com"), Kind: kind, Name: name}
}
