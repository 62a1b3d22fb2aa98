package dns

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestEnsureService: kube-system/kube-dns as kubeadm makes it, without a selector, and slices
// of where the server listens; a second run writes nothing; edits and stale slices are put
// right; a Service of another DNS is left alone.
func TestEnsureService(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	if err := EnsureService(ctx, client, "", []string{"192.0.2.10:53", "2001:db8::10"}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err != nil {
		t.Errorf("kube-system: %v", err)
	}
	svc, err := client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != DefaultClusterIP || len(svc.Spec.Selector) != 0 || svc.Labels["k8s-app"] != "kube-dns" ||
		svc.Labels["kubernetes.io/cluster-service"] != "true" || svc.Labels["kubernetes.io/name"] != "CoreDNS" {
		t.Errorf("the Service: %+v %+v", svc.Labels, svc.Spec)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, p.Name+":"+string(p.Protocol)+":"+p.TargetPort.String())
	}
	if got := strings.Join(ports, " "); got != "dns:UDP:53 dns-tcp:TCP:53 metrics:TCP:9153" {
		t.Errorf("ports %s", got)
	}
	slices := func() map[string]string {
		list, err := client.DiscoveryV1().EndpointSlices("kube-system").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, s := range list.Items {
			var addrs []string
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || !*e.Conditions.Ready {
					t.Errorf("%s: endpoint %v not ready", s.Name, e.Addresses)
				}
				addrs = append(addrs, e.Addresses...)
			}
			if s.Labels[discoveryv1.LabelServiceName] != "kube-dns" || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
				t.Errorf("%s: labels %v", s.Name, s.Labels)
			}
			if len(s.Ports) != 2 || *s.Ports[0].Name != "dns" || *s.Ports[0].Port != 53 || *s.Ports[1].Name != "dns-tcp" || *s.Ports[1].Protocol != v1.ProtocolTCP {
				t.Errorf("%s: ports %+v", s.Name, s.Ports)
			}
			out[s.Name] = string(s.AddressType) + " " + strings.Join(addrs, ",")
		}
		return out
	}
	if got := slices(); len(got) != 2 || got["kube-dns-berth-ipv4"] != "IPv4 192.0.2.10" || got["kube-dns-berth-ipv6"] != "IPv6 2001:db8::10" {
		t.Errorf("slices %v", got)
	}

	// Nothing to do the second time.
	client.ClearActions()
	if err := EnsureService(ctx, client, "", []string{"192.0.2.10:53", "2001:db8::10"}); err != nil {
		t.Fatal(err)
	}
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" {
			t.Errorf("a second run wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	// Edited ports are put back; a family no longer served loses its slice; a moved address
	// updates the other.
	svc.Spec.Ports = svc.Spec.Ports[:1]
	if _, err := client.CoreV1().Services("kube-system").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := EnsureService(ctx, client, "", []string{"192.0.2.11"}); err != nil {
		t.Fatal(err)
	}
	if svc, _ := client.CoreV1().Services("kube-system").Get(ctx, "kube-dns", metav1.GetOptions{}); len(svc.Spec.Ports) != 3 {
		t.Errorf("ports not restored: %+v", svc.Spec.Ports)
	}
	if got := slices(); len(got) != 1 || got["kube-dns-berth-ipv4"] != "IPv4 192.0.2.11" {
		t.Errorf("slices %v", got)
	}

	// Another cluster IP cannot be had.
	if err := EnsureService(ctx, client, "10.96.0.53", []string{"192.0.2.11"}); err == nil {
		t.Error("a different cluster IP was accepted")
	}
}

func TestEnsureServiceLeavesAnotherDNSAlone(t *testing.T) {
	ctx := context.Background()
	theirs := Service(DefaultClusterIP)
	theirs.Spec.Selector = map[string]string{"k8s-app": "kube-dns"}
	client := fake.NewClientset(apiNamespace("kube-system"), theirs)
	if err := EnsureService(ctx, client, "", []string{"192.0.2.10"}); err == nil {
		t.Fatal("no error for a Service with a selector")
	}
	for _, a := range client.Actions() {
		if _, ok := a.(k8stesting.CreateAction); ok {
			t.Errorf("created %s", a.GetResource().Resource)
		}
		if _, ok := a.(k8stesting.UpdateAction); ok {
			t.Errorf("updated %s", a.GetResource().Resource)
		}
	}
}

func TestEndpointSlicesRefuses(t *testing.T) {
	for _, endpoints := range [][]string{nil, {"0.0.0.0:53"}, {"[::]:53"}, {"dns.example.com:53"}, {"192.0.2.1:53", "192.0.2.2:5353"}, {"192.0.2.1:0"}, {"fe80::1%eth0"}} {
		if _, err := EndpointSlices(endpoints); err == nil {
			t.Errorf("EndpointSlices(%q) did not fail", endpoints)
		}
	}
}

// TestTheServerAnswersForItsService: the slices EnsureService writes give the server the
// name server records of its own zone.
func TestTheServerAnswersForItsService(t *testing.T) {
	client := fake.NewClientset()
	if err := EnsureService(context.Background(), client, "", []string{"192.0.2.10"}); err != nil {
		t.Fatal(err)
	}
	s := newTestServer(t, client, Config{})
	for name, want := range map[string]int{"kube-dns.kube-system.svc.cluster.local.": 1, "ns.dns.cluster.local.": 1, "192-0-2-10.kube-dns.kube-system.svc.cluster.local.": 1} {
		if m, _ := ask(t, s, name, 1, false, 0); len(m.Answer) != want {
			t.Errorf("%s: %v", name, m)
		}
	}
}
