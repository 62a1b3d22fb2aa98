package ipaddress

import (
	"fmt"
	"slices"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

func serviceRef() *networkingv1.ParentReference {
	return &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}
}

func addressForValidation(name string, mutate ...func(*networkingv1.IPAddress)) *networkingv1.IPAddress {
	ip := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec:       networkingv1.IPAddressSpec{ParentRef: serviceRef()},
	}
	for _, m := range mutate {
		m(ip)
	}
	return ip
}

func withRef(mutate func(*networkingv1.ParentReference)) func(*networkingv1.IPAddress) {
	return func(ip *networkingv1.IPAddress) { mutate(ip.Spec.ParentRef) }
}

const dnsSubdomainMsg = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " +
	"and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is " +
	`'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`

func TestValidateIPAddress(t *testing.T) {
	tests := []struct {
		name string
		ip   *networkingv1.IPAddress
		want []string
	}{
		{name: "IPv4", ip: addressForValidation("10.96.0.1")},
		{name: "IPv6", ip: addressForValidation("2001:db8::1")},
		{name: "group, no namespace", ip: addressForValidation("10.0.0.2", withRef(func(r *networkingv1.ParentReference) {
			r.Group, r.Resource, r.Namespace, r.Name = "gateway.networking.k8s.io", "gateways", "", "gw"
		}))},
		{name: "allocator labels and finalizer", ip: addressForValidation("10.0.0.3", func(ip *networkingv1.IPAddress) {
			ip.Labels = map[string]string{networkingv1.LabelIPAddressFamily: "IPv4", networkingv1.LabelManagedBy: ManagedByAllocator}
			ip.Finalizers = []string{"networking.k8s.io/ip-protection"}
		})},
		{name: "not an address", ip: addressForValidation("web"),
			want: []string{"FieldValueInvalid metadata.name: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}},
		{name: "a CIDR", ip: addressForValidation("10.0.0.0/24"),
			want: []string{"FieldValueInvalid metadata.name: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"}},
		{name: "IPv6 not canonical", ip: addressForValidation("2001:db8:0::1"),
			want: []string{`FieldValueInvalid metadata.name: must be in canonical form ("2001:db8::1")`}},
		{name: "IPv6 upper case", ip: addressForValidation("2001:DB8::1"),
			want: []string{`FieldValueInvalid metadata.name: must be in canonical form ("2001:db8::1")`}},
		{name: "leading zeros", ip: addressForValidation("010.0.0.1"),
			want: []string{"FieldValueInvalid metadata.name: must not have leading 0s"}},
		{name: "IPv4-mapped IPv6", ip: addressForValidation("::ffff:10.0.0.1"),
			want: []string{"FieldValueInvalid metadata.name: must not be an IPv4-mapped IPv6 address"}},
		{name: "no name", ip: addressForValidation(""),
			want: []string{"FieldValueRequired metadata.name: name or generateName is required"}},
		{name: "generateName is kept as the name", ip: addressForValidation("10.0.0.", func(ip *networkingv1.IPAddress) { ip.GenerateName = "10.0.0." }),
			want: []string{
				"FieldValueInvalid metadata.generateName: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
				"FieldValueInvalid metadata.name: must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
			}},
		{name: "namespaced", ip: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Namespace = "default" }),
			want: []string{"FieldValueForbidden metadata.namespace: not allowed on this type"}},
		{name: "finalizer without a domain", ip: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Finalizers = []string{"mine"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]: name is neither a standard finalizer name nor is it fully qualified"}},
		{name: "no parentRef", ip: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Spec.ParentRef = nil }),
			want: []string{"FieldValueRequired spec.parentRef: "}},
		{name: "empty parentRef", ip: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Spec.ParentRef = &networkingv1.ParentReference{} }),
			want: []string{"FieldValueRequired spec.parentRef.resource: ", "FieldValueRequired spec.parentRef.name: "}},
		{name: "bad group", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Group = "Apps" })),
			want: []string{"FieldValueInvalid spec.parentRef.group: " + dnsSubdomainMsg}},
		{name: "resource with a slash", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Resource = "services/status" })),
			want: []string{"FieldValueInvalid spec.parentRef.resource: may not contain '/'"}},
		{name: "name is ..", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Name = ".." })),
			want: []string{"FieldValueInvalid spec.parentRef.name: may not be '..'"}},
		{name: "name with both", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Name = "a/%b" })),
			want: []string{"FieldValueInvalid spec.parentRef.name: may not contain '/'", "FieldValueInvalid spec.parentRef.name: may not contain '%'"}},
		{name: "namespace is .", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Namespace = "." })),
			want: []string{"FieldValueInvalid spec.parentRef.namespace: may not be '.'"}},
		{name: "resource and name are not DNS-checked", ip: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) {
			r.Resource, r.Name, r.Namespace = "Services", "Web_1", "Default"
		}))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateIPAddress(tc.ip), tc.want)
		})
	}
}

func TestValidateIPAddressName(t *testing.T) {
	if msgs := ValidateIPAddressName("10.0.0.1", true); msgs != nil {
		t.Errorf("valid name: %q", msgs)
	}
	if msgs := ValidateIPAddressName("10.0.0.", true); len(msgs) != 1 {
		t.Errorf("prefix is not a pass: %q", msgs)
	}
}

func TestValidateIPAddressUpdate(t *testing.T) {
	old := addressForValidation("10.0.0.1")
	tests := []struct {
		name string
		new  *networkingv1.IPAddress
		want []string
	}{
		{name: "no change", new: addressForValidation("10.0.0.1")},
		{name: "labels", new: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Labels = map[string]string{"a": "b"} })},
		{name: "parentRef moves", new: addressForValidation("10.0.0.1", withRef(func(r *networkingv1.ParentReference) { r.Name = "other" })),
			want: []string{"FieldValueInvalid spec.parentRef: field is immutable"}},
		{name: "parentRef removed", new: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Spec.ParentRef = nil }),
			want: []string{"FieldValueInvalid spec.parentRef: field is immutable"}},
		{name: "rename", new: addressForValidation("10.0.0.2"),
			want: []string{"FieldValueInvalid metadata.name: field is immutable"}},
		{name: "no resourceVersion", new: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.ResourceVersion = "" }),
			want: []string{"FieldValueInvalid metadata.resourceVersion: must be specified for an update"}},
		{name: "finalizer without a domain", new: addressForValidation("10.0.0.1", func(ip *networkingv1.IPAddress) { ip.Finalizers = []string{"mine"} }),
			want: []string{"FieldValueInvalid metadata.finalizers[0]: name is neither a standard finalizer name nor is it fully qualified"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateIPAddressUpdate(tc.new, old), tc.want)
		})
	}
}
