package dns

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

const (
	noError  = dns.RcodeSuccess
	nxDomain = dns.RcodeNameError
)

// TestRecords: every record kind of the specification and of CoreDNS's kubernetes plugin, and
// their NXDOMAIN and NODATA, answered from informers of a fake cluster through ServeDNS.
func TestRecords(t *testing.T) {
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{})
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		rcode  int
		answer []string // nil: none (NODATA or NXDOMAIN: the SOA must be in the authority section)
		extra  []string
	}{
		// 2.2 The schema version.
		{"dns-version", "dns-version.cluster.local.", dns.TypeTXT, noError, []string{`dns-version.cluster.local. 28800 IN TXT "1.1.0"`}, nil},
		{"dns-version of another type", "dns-version.cluster.local.", dns.TypeA, noError, nil, nil},

		// 2.3 A Service with a cluster IP.
		{"cluster IP", "kubernetes.default.svc.cluster.local.", dns.TypeA, noError, []string{"kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1"}, nil},
		{"dual-stack A", "web.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"web.ns1.svc.cluster.local. 5 IN A 10.96.1.1"}, nil},
		{"dual-stack AAAA", "web.ns1.svc.cluster.local.", dns.TypeAAAA, noError, []string{"web.ns1.svc.cluster.local. 5 IN AAAA fd00:96::1"}, nil},
		{"single-stack AAAA is NODATA", "kubernetes.default.svc.cluster.local.", dns.TypeAAAA, noError, nil, nil},
		{"another type is NODATA", "web.ns1.svc.cluster.local.", dns.TypeMX, noError, nil, nil},
		{"names are case-insensitive", "Web.NS1.svc.Cluster.Local.", dns.TypeA, noError, []string{"Web.NS1.svc.Cluster.Local. 5 IN A 10.96.1.1"}, nil},
		{"SRV of a named port", "_http._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, noError,
			[]string{"_http._tcp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 80 web.ns1.svc.cluster.local."},
			[]string{"web.ns1.svc.cluster.local. 5 IN A 10.96.1.1", "web.ns1.svc.cluster.local. 5 IN AAAA fd00:96::1"}},
		{"SRV of a UDP port", "_dns._udp.web.ns1.svc.cluster.local.", dns.TypeSRV, noError,
			[]string{"_dns._udp.web.ns1.svc.cluster.local. 5 IN SRV 0 100 53 web.ns1.svc.cluster.local."},
			[]string{"web.ns1.svc.cluster.local. 5 IN A 10.96.1.1", "web.ns1.svc.cluster.local. 5 IN AAAA fd00:96::1"}},
		{"SRV of the wrong protocol", "_dns._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, nxDomain, nil, nil},
		{"SRV of no such port", "_nope._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV, nxDomain, nil, nil},
		{"an SRV name's A is NODATA", "_http._tcp.web.ns1.svc.cluster.local.", dns.TypeA, noError, nil, nil},
		{"SRV at the Service's name: every port (CoreDNS)", "web.ns1.svc.cluster.local.", dns.TypeSRV, noError, []string{
			"web.ns1.svc.cluster.local. 5 IN SRV 0 33 53 web.ns1.svc.cluster.local.",
			"web.ns1.svc.cluster.local. 5 IN SRV 0 33 80 web.ns1.svc.cluster.local.",
			"web.ns1.svc.cluster.local. 5 IN SRV 0 33 8080 web.ns1.svc.cluster.local.",
		}, []string{"web.ns1.svc.cluster.local. 5 IN A 10.96.1.1", "web.ns1.svc.cluster.local. 5 IN AAAA fd00:96::1"}},
		{"an endpoint of a cluster-IP Service by dashed address (CoreDNS)", "10-244-0-5.web.ns1.svc.cluster.local.", dns.TypeA, noError,
			[]string{"10-244-0-5.web.ns1.svc.cluster.local. 5 IN A 10.244.0.5"}, nil},
		{"a not-ready endpoint has no name", "10-244-0-6.web.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"PTR of a cluster IP", "1.1.96.10.in-addr.arpa.", dns.TypePTR, noError, []string{"1.1.96.10.in-addr.arpa. 5 IN PTR web.ns1.svc.cluster.local."}, nil},
		{"PTR of an IPv6 cluster IP", reverse(t, "fd00:96::1"), dns.TypePTR, noError, []string{reverse(t, "fd00:96::1") + " 5 IN PTR web.ns1.svc.cluster.local."}, nil},
		{"PTR of a cluster-IP Service's endpoint (CoreDNS)", "5.0.244.10.in-addr.arpa.", dns.TypePTR, noError,
			[]string{"5.0.244.10.in-addr.arpa. 5 IN PTR 10-244-0-5.web.ns1.svc.cluster.local."}, nil},

		// 2.4 A headless Service.
		{"headless: the ready endpoints", "db.ns1.svc.cluster.local.", dns.TypeA, noError, []string{
			"db.ns1.svc.cluster.local. 5 IN A 10.244.1.1", "db.ns1.svc.cluster.local. 5 IN A 10.244.1.2", "db.ns1.svc.cluster.local. 5 IN A 10.244.1.3",
		}, nil},
		{"headless AAAA", "db.ns1.svc.cluster.local.", dns.TypeAAAA, noError, []string{"db.ns1.svc.cluster.local. 5 IN AAAA fd00:244::1"}, nil},
		{"an endpoint by hostname", "db-0.db.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"db-0.db.ns1.svc.cluster.local. 5 IN A 10.244.1.1"}, nil},
		{"an endpoint by hostname, AAAA", "db-0.db.ns1.svc.cluster.local.", dns.TypeAAAA, noError, []string{"db-0.db.ns1.svc.cluster.local. 5 IN AAAA fd00:244::1"}, nil},
		{"an endpoint of unknown readiness is ready", "db-1.db.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"db-1.db.ns1.svc.cluster.local. 5 IN A 10.244.1.2"}, nil},
		{"an endpoint without hostname by dashed address", "10-244-1-3.db.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"10-244-1-3.db.ns1.svc.cluster.local. 5 IN A 10.244.1.3"}, nil},
		{"a not-ready endpoint's hostname", "db-3.db.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"an endpoint's other type is NODATA", "db-1.db.ns1.svc.cluster.local.", dns.TypeTXT, noError, nil, nil},
		{"headless SRV: one per endpoint", "_pg._tcp.db.ns1.svc.cluster.local.", dns.TypeSRV, noError, []string{
			"_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 10-244-1-3.db.ns1.svc.cluster.local.",
			"_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 db-0.db.ns1.svc.cluster.local.",
			"_pg._tcp.db.ns1.svc.cluster.local. 5 IN SRV 0 33 5432 db-1.db.ns1.svc.cluster.local.",
		}, []string{
			"10-244-1-3.db.ns1.svc.cluster.local. 5 IN A 10.244.1.3",
			"db-0.db.ns1.svc.cluster.local. 5 IN A 10.244.1.1",
			"db-0.db.ns1.svc.cluster.local. 5 IN AAAA fd00:244::1",
			"db-1.db.ns1.svc.cluster.local. 5 IN A 10.244.1.2",
		}},
		{"PTR of a headless endpoint with hostname", "1.1.244.10.in-addr.arpa.", dns.TypePTR, noError, []string{"1.1.244.10.in-addr.arpa. 5 IN PTR db-0.db.ns1.svc.cluster.local."}, nil},
		{"PTR of a headless endpoint without", "3.1.244.10.in-addr.arpa.", dns.TypePTR, noError, []string{"3.1.244.10.in-addr.arpa. 5 IN PTR 10-244-1-3.db.ns1.svc.cluster.local."}, nil},
		{"PTR of an IPv6 endpoint", reverse(t, "fd00:244::1"), dns.TypePTR, noError, []string{reverse(t, "fd00:244::1") + " 5 IN PTR db-0.db.ns1.svc.cluster.local."}, nil},
		{"publishNotReadyAddresses", "lazy.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"lazy.ns1.svc.cluster.local. 5 IN A 10.244.2.1"}, nil},
		{"publishNotReadyAddresses, by hostname", "lazy-0.lazy.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"lazy-0.lazy.ns1.svc.cluster.local. 5 IN A 10.244.2.1"}, nil},
		{"headless without ready endpoints is NXDOMAIN", "empty.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"slices of other ports: one", "_http._tcp.multi.ns1.svc.cluster.local.", dns.TypeSRV, noError,
			[]string{"_http._tcp.multi.ns1.svc.cluster.local. 5 IN SRV 0 100 80 1-2-3-4.multi.ns1.svc.cluster.local."},
			[]string{"1-2-3-4.multi.ns1.svc.cluster.local. 5 IN A 1.2.3.4"}},
		{"slices of other ports: the other", "_https._tcp.multi.ns1.svc.cluster.local.", dns.TypeSRV, noError,
			[]string{"_https._tcp.multi.ns1.svc.cluster.local. 5 IN SRV 0 100 443 5-6-7-8.multi.ns1.svc.cluster.local."},
			[]string{"5-6-7-8.multi.ns1.svc.cluster.local. 5 IN A 5.6.7.8"}},
		{"slices of other ports: A", "multi.ns1.svc.cluster.local.", dns.TypeA, noError,
			[]string{"multi.ns1.svc.cluster.local. 5 IN A 1.2.3.4", "multi.ns1.svc.cluster.local. 5 IN A 5.6.7.8"}, nil},

		// 2.5 ExternalName.
		{"ExternalName: CNAME", "ext.ns1.svc.cluster.local.", dns.TypeCNAME, noError, []string{"ext.ns1.svc.cluster.local. 5 IN CNAME foo.example.com."}, nil},
		{"ExternalName: A without upstreams is the CNAME", "ext.ns1.svc.cluster.local.", dns.TypeA, noError, []string{"ext.ns1.svc.cluster.local. 5 IN CNAME foo.example.com."}, nil},
		{"ExternalName into the zone is followed here", "alias.ns1.svc.cluster.local.", dns.TypeA, noError, []string{
			"alias.ns1.svc.cluster.local. 5 IN CNAME web.ns1.svc.cluster.local.", "web.ns1.svc.cluster.local. 5 IN A 10.96.1.1",
		}, nil},
		{"ExternalName of an address has no record (CoreDNS)", "byip.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"ExternalName has no endpoints", "x.ext.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"ExternalName has no SRV names", "_http._tcp.ext.ns1.svc.cluster.local.", dns.TypeSRV, nxDomain, nil, nil},

		// Pods ("pods insecure").
		{"pod A", "10-244-0-9.ns1.pod.cluster.local.", dns.TypeA, noError, []string{"10-244-0-9.ns1.pod.cluster.local. 5 IN A 10.244.0.9"}, nil},
		{"pod AAAA", "fd00--9.ns1.pod.cluster.local.", dns.TypeAAAA, noError, []string{"fd00--9.ns1.pod.cluster.local. 5 IN AAAA fd00::9"}, nil},
		{"pod of the other family is NODATA", "10-244-0-9.ns1.pod.cluster.local.", dns.TypeAAAA, noError, nil, nil},
		{"pod in no namespace", "10-244-0-9.nowhere.pod.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"pod name that is no address", "web-0.ns1.pod.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"under a pod name", "x.10-244-0-9.ns1.pod.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"a namespace's pod.zone", "ns1.pod.cluster.local.", dns.TypeA, noError, nil, nil},

		// The zone's structure.
		{"a namespace is NODATA", "ns1.svc.cluster.local.", dns.TypeA, noError, nil, nil},
		{"a namespace without Services is NODATA", "empty-ns.svc.cluster.local.", dns.TypeA, noError, nil, nil},
		{"no such namespace", "nowhere.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"no such Service", "missing.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"a slice without its Service", "ghost.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"svc.zone", "svc.cluster.local.", dns.TypeA, noError, nil, nil},
		{"pod.zone", "pod.cluster.local.", dns.TypeA, noError, nil, nil},
		{"the apex's A", "cluster.local.", dns.TypeA, noError, nil, nil},
		{"the apex's NS", "cluster.local.", dns.TypeNS, noError, []string{"cluster.local. 5 IN NS ns.dns.cluster.local."}, []string{"ns.dns.cluster.local. 5 IN A 10.96.0.10"}},
		{"the name server", "ns.dns.cluster.local.", dns.TypeA, noError, []string{"ns.dns.cluster.local. 5 IN A 10.96.0.10"}, nil},
		{"a search-path miss", "www.example.com.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"another label under the zone", "www.example.com.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"too many labels", "a.b._http._tcp.web.ns1.svc.cluster.local.", dns.TypeA, nxDomain, nil, nil},
		{"no zone transfers", "cluster.local.", dns.TypeAXFR, dns.RcodeRefused, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := ask(t, s, tt.qname, tt.qtype, false, 1232)
			if m.Rcode != tt.rcode {
				t.Fatalf("rcode %s, want %s\n%v", dns.RcodeToString[m.Rcode], dns.RcodeToString[tt.rcode], m)
			}
			if diff := cmp.Diff(tt.answer, rrStrings(m.Answer)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.extra, rrStrings(m.Extra)); diff != "" {
				t.Errorf("additional (-want +got):\n%s", diff)
			}
			if !m.Authoritative && tt.rcode != dns.RcodeRefused {
				t.Error("not authoritative")
			}
			negative := len(m.Answer) == 0 && (m.Rcode == noError || m.Rcode == nxDomain)
			if soa := len(m.Ns) == 1 && m.Ns[0].Header().Rrtype == dns.TypeSOA; negative && !soa {
				t.Errorf("a negative answer without the zone's SOA: %v", m.Ns)
			}
			if m.IsEdns0() == nil {
				t.Error("no OPT record in the answer to a query with one")
			}
		})
	}
}

func reverse(t testing.TB, ip string) string {
	t.Helper()
	r, err := dns.ReverseAddr(ip)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRecordsFollowTheCluster: records appear, change and go as the API objects do.
func TestRecordsFollowTheCluster(t *testing.T) {
	client := fake.NewClientset(apiNamespace("ns1"))
	s := newTestServer(t, client, Config{})
	ctx := context.Background()
	a := func(name string) func() []string {
		return func() []string {
			m, _ := ask(t, s, name, dns.TypeA, false, 0)
			return rrStrings(m.Answer)
		}
	}
	eventually := func(what string, got func() []string, want ...string) {
		t.Helper()
		waitFor(t, what, func() bool { return slices.Equal(got(), want) })
	}

	svc, err := client.CoreV1().Services("ns1").Create(ctx, headlessService("ns1", "late"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slice := apiSlice("ns1", "late", "late-1", discoveryv1.AddressTypeIPv4, nil, apiEndpoint("10.244.3.1", "late-0", notReady))
	if _, err := client.DiscoveryV1().EndpointSlices("ns1").Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a not-ready endpoint stays out", a("late.ns1.svc.cluster.local."))
	slice.Endpoints[0].Conditions.Ready = ready
	if _, err := client.DiscoveryV1().EndpointSlices("ns1").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the endpoint once ready", a("late.ns1.svc.cluster.local."), "late.ns1.svc.cluster.local. 5 IN A 10.244.3.1")
	eventually("its hostname", a("late-0.late.ns1.svc.cluster.local."), "late-0.late.ns1.svc.cluster.local. 5 IN A 10.244.3.1")
	ptr := func() []string {
		m, _ := ask(t, s, "1.3.244.10.in-addr.arpa.", dns.TypePTR, false, 0)
		return rrStrings(m.Answer)
	}
	eventually("its PTR", ptr, "1.3.244.10.in-addr.arpa. 5 IN PTR late-0.late.ns1.svc.cluster.local.")

	// The slice moves to another Service.
	slice.Labels[discoveryv1.LabelServiceName] = "other"
	if _, err := client.DiscoveryV1().EndpointSlices("ns1").Update(ctx, slice, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("a slice that moved away", a("late.ns1.svc.cluster.local."))

	// A headless Service turned ExternalName, then deleted.
	svc.Spec = v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "db.example.org"}
	if _, err := client.CoreV1().Services("ns1").Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the Service turned ExternalName", a("late.ns1.svc.cluster.local."), "late.ns1.svc.cluster.local. 5 IN CNAME db.example.org.")
	if err := client.CoreV1().Services("ns1").Delete(ctx, "late", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	rcode := func() []string {
		m, _ := ask(t, s, "late.ns1.svc.cluster.local.", dns.TypeA, false, 0)
		return []string{dns.RcodeToString[m.Rcode]}
	}
	eventually("the deleted Service", rcode, "NXDOMAIN")
	eventually("no PTR once gone", ptr)

	// A namespace deleted: its name goes.
	ns := func() []string {
		m, _ := ask(t, s, "ns1.svc.cluster.local.", dns.TypeA, false, 0)
		return []string{dns.RcodeToString[m.Rcode]}
	}
	eventually("the namespace", ns, "NOERROR")
	if err := client.CoreV1().Namespaces().Delete(ctx, "ns1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the deleted namespace", ns, "NXDOMAIN")
}

// TestNotSynced: until the first lists are in, a name not found is SERVFAIL, not a denial a
// client would cache; what is known is answered.
func TestNotSynced(t *testing.T) {
	s, err := newServer(fake.NewClientset(), Config{}, noResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := ask(t, s, "missing.ns1.svc.cluster.local.", dns.TypeA, false, 0); m.Rcode != dns.RcodeServerFailure {
		t.Errorf("before sync: %s, want SERVFAIL", dns.RcodeToString[m.Rcode])
	}
	if m, _ := ask(t, s, "dns-version.cluster.local.", dns.TypeTXT, false, 0); m.Rcode != noError || len(m.Answer) != 1 {
		t.Errorf("dns-version before sync: %v", m)
	}
}

// TestPanicIsServfail: a panic while answering costs that query a SERVFAIL, is counted, and
// ends nothing.
func TestPanicIsServfail(t *testing.T) {
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{})
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(component))
	req := new(dns.Msg)
	req.SetQuestion("web.ns1.svc.cluster.local.", dns.TypeA)
	w := &recorder{panicAddr: true}
	s.ServeDNS(w, req)
	if w.msg == nil || w.msg.Rcode != dns.RcodeServerFailure || w.msg.Id != req.Id {
		t.Fatalf("got %v, want SERVFAIL", w.msg)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(component)); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=dns} = %v, want %v", got, before+1)
	}
	// The next query is answered as usual.
	if m, _ := ask(t, s, "web.ns1.svc.cluster.local.", dns.TypeA, false, 0); len(m.Answer) != 1 {
		t.Errorf("after the panic: %v", m)
	}
}

// TestMalformedQueries: what is not one query of one question gets the error the RFCs say.
func TestMalformedQueries(t *testing.T) {
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{})
	tests := []struct {
		name  string
		req   func() *dns.Msg
		rcode int
	}{
		{"no question", func() *dns.Msg { return &dns.Msg{MsgHdr: dns.MsgHdr{Id: 7}} }, dns.RcodeFormatError},
		{"two questions", func() *dns.Msg {
			m := new(dns.Msg)
			m.SetQuestion("a.cluster.local.", dns.TypeA)
			m.Question = append(m.Question, m.Question[0])
			return m
		}, dns.RcodeFormatError},
		{"an update", func() *dns.Msg {
			m := new(dns.Msg)
			m.SetUpdate("cluster.local.")
			return m
		}, dns.RcodeNotImplemented},
		{"EDNS version 1", func() *dns.Msg {
			m := new(dns.Msg)
			m.SetQuestion("web.ns1.svc.cluster.local.", dns.TypeA)
			m.SetEdns0(1232, false)
			m.IsEdns0().SetVersion(1)
			return m
		}, dns.RcodeBadVers},
		{"a chaos-class name of the zone", func() *dns.Msg {
			m := new(dns.Msg)
			m.SetQuestion("web.ns1.svc.cluster.local.", dns.TypeTXT)
			m.Question[0].Qclass = dns.ClassCHAOS
			return m
		}, dns.RcodeRefused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &recorder{}
			req := tt.req()
			s.ServeDNS(w, req)
			if w.msg == nil || w.msg.Rcode != tt.rcode {
				t.Fatalf("got %v, want %s", w.msg, dns.RcodeToString[tt.rcode])
			}
		})
	}
}

// TestTruncation: over UDP an answer fits 512 bytes, or the client's EDNS0 size up to 1232;
// the additional section goes first without TC; past that TC is set, and TCP has it all.
func TestTruncation(t *testing.T) {
	objs := []runtime.Object{apiNamespace("big"), headlessService("big", "many", port("http", 80, v1.ProtocolTCP)), headlessService("big", "some", port("http", 80, v1.ProtocolTCP))}
	var many, some []discoveryv1.Endpoint
	for i := range 100 {
		many = append(many, apiEndpoint(netip.AddrFrom4([4]byte{10, 244, 5, byte(i)}).String(), "", ready))
	}
	for i := range 8 {
		some = append(some, apiEndpoint(netip.AddrFrom4([4]byte{10, 244, 6, byte(i)}).String(), "", ready))
	}
	httpPort := []discoveryv1.EndpointPort{slicePort("http", 80, v1.ProtocolTCP)}
	objs = append(objs,
		apiSlice("big", "many", "many-1", discoveryv1.AddressTypeIPv4, httpPort, many...),
		apiSlice("big", "some", "some-1", discoveryv1.AddressTypeIPv4, httpPort, some...))
	s := newTestServer(t, fake.NewClientset(objs...), Config{})

	tests := []struct {
		name       string
		qname      string
		qtype      uint16
		tcp        bool
		edns       uint16
		wantTC     bool
		wantAnswer int // -1: fewer than all
		wantExtra  int
		maxWire    int
	}{
		{"UDP without EDNS0", "many.big.svc.cluster.local.", dns.TypeA, false, 0, true, -1, 0, 512},
		{"UDP with a large EDNS0 buffer is capped", "many.big.svc.cluster.local.", dns.TypeA, false, 4096, true, -1, 0, 1232},
		{"UDP with EDNS0 below 512", "many.big.svc.cluster.local.", dns.TypeA, false, 100, true, -1, 0, 512},
		{"TCP has all", "many.big.svc.cluster.local.", dns.TypeA, true, 0, false, 100, 0, 65535},
		{"SRV: the additional section goes first, without TC", "_http._tcp.some.big.svc.cluster.local.", dns.TypeSRV, false, 0, false, 8, 0, 512},
		{"SRV over TCP has the additionals", "_http._tcp.some.big.svc.cluster.local.", dns.TypeSRV, true, 0, false, 8, 8, 65535},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, wire := ask(t, s, tt.qname, tt.qtype, tt.tcp, tt.edns)
			if m.Truncated != tt.wantTC {
				t.Errorf("TC = %v, want %v", m.Truncated, tt.wantTC)
			}
			if wire > tt.maxWire {
				t.Errorf("%d bytes, more than %d", wire, tt.maxWire)
			}
			switch n := len(m.Answer); {
			case tt.wantAnswer < 0 && (n == 0 || n >= 100):
				t.Errorf("%d answers, want some but not all", n)
			case tt.wantAnswer >= 0 && n != tt.wantAnswer:
				t.Errorf("%d answers, want %d", n, tt.wantAnswer)
			}
			if n := len(rrStrings(m.Extra)); n != tt.wantExtra {
				t.Errorf("%d additionals, want %d", n, tt.wantExtra)
			}
		})
	}
}

func TestParseReverse(t *testing.T) {
	for _, ip := range []string{"10.96.0.10", "0.0.0.0", "255.255.255.255", "fd00:96::1", "2001:db8::ff00:42:8329", "::"} {
		want := netip.MustParseAddr(ip)
		got, ok := parseReverse(reverse(t, ip))
		if !ok || got != want {
			t.Errorf("parseReverse(%s) = %v, %v", reverse(t, ip), got, ok)
		}
	}
	for _, name := range []string{"96.10.in-addr.arpa.", "1.0.96.010.in-addr.arpa.", "300.0.96.10.in-addr.arpa.", "x.0.96.10.in-addr.arpa.",
		"1.0.ip6.arpa.", strings.Repeat("g.", 32) + "ip6.arpa.", strings.Repeat("10.", 16) + "ip6.arpa.", "example.com."} {
		if ip, ok := parseReverse(name); ok {
			t.Errorf("parseReverse(%s) = %v, want no address", name, ip)
		}
	}
}

func TestPodIP(t *testing.T) {
	for label, want := range map[string]string{"10-244-0-5": "10.244.0.5", "fd00--5": "fd00::5", "fd00-0-0-0-0-0-0-5": "fd00::5", "--1": "::1"} {
		if got, ok := podIP(label); !ok || got != netip.MustParseAddr(want) {
			t.Errorf("podIP(%s) = %v, %v; want %s", label, got, ok, want)
		}
	}
	for _, label := range []string{"web-0", "10-244-0", "10-244-0-5-6", "1-2-3-256", ""} {
		if ip, ok := podIP(label); ok {
			t.Errorf("podIP(%s) = %v, want none", label, ip)
		}
	}
}

func TestDashed(t *testing.T) {
	for ip, want := range map[string]string{"10.244.1.5": "10-244-1-5", "fd00::5": "fd00--5", "fd00::": "fd00--0"} {
		if got := dashed(netip.MustParseAddr(ip)); got != want {
			t.Errorf("dashed(%s) = %s, want %s", ip, got, want)
		}
	}
}

// TestOddQuestions: odd names of every type get an answer, and no panic.
func TestOddQuestions(t *testing.T) {
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{})
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(component))
	names := []string{
		".", "local.", "\\000.cluster.local.", "a\\.cluster.local.", "\\099luster.local.",
		strings.Repeat("a", 63) + ".ns1.svc.cluster.local.", "_._.web.ns1.svc.cluster.local.", "__.___.web.ns1.svc.cluster.local.",
		"-.ns1.pod.cluster.local.", "--.ns1.pod.cluster.local.", "fe80--1%eth0.ns1.pod.cluster.local.", "1-2-3-4.kube-system.pod.cluster.local.",
		"*.ns1.svc.cluster.local.", "*.*.svc.cluster.local.", "in-addr.arpa.", "1.in-addr.arpa.", "ip6.arpa.", "x.ip6.arpa.",
		"alias.ns1.svc.cluster.local.", "ext.ns1.svc.cluster.local.", "WEB.NS1.SVC.CLUSTER.LOCAL.", "dns.cluster.local.", "ns.dns.cluster.local.",
	}
	for _, name := range names {
		for qtype := uint16(0); qtype < 300; qtype++ {
			if qtype == dns.TypeOPT {
				continue
			}
			req := new(dns.Msg)
			req.SetQuestion(name, qtype)
			w := &recorder{tcp: qtype%2 == 0}
			s.ServeDNS(w, req)
			if w.msg == nil {
				t.Fatalf("%s %d: no answer", name, qtype)
			}
		}
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(component)); got != before {
		t.Errorf("%v panics", got-before)
	}
}

// FuzzServeDNS: whatever message arrives, ServeDNS answers without panicking (go test runs the
// seeds; go test -fuzz FuzzServeDNS looks further).
func FuzzServeDNS(f *testing.F) {
	for _, q := range []struct {
		name  string
		qtype uint16
	}{{"web.ns1.svc.cluster.local.", dns.TypeA}, {"_pg._tcp.db.ns1.svc.cluster.local.", dns.TypeSRV}, {"1.1.96.10.in-addr.arpa.", dns.TypePTR}, {"10-244-0-9.ns1.pod.cluster.local.", dns.TypeAAAA}} {
		m := new(dns.Msg)
		m.SetQuestion(q.name, q.qtype)
		m.SetEdns0(1232, true)
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	s := newTestServer(f, fake.NewClientset(cluster()...), Config{})
	f.Fuzz(func(t *testing.T, b []byte) {
		req := new(dns.Msg)
		if err := req.Unpack(b); err != nil || req.Response {
			return
		}
		if len(req.Question) == 1 && !s.resolver.inZone(strings.ToLower(dns.Fqdn(req.Question[0].Name))) {
			return // would go upstream; there is none
		}
		w := &recorder{}
		before := testutil.ToFloat64(panics.Recovered.WithLabelValues(component))
		s.ServeDNS(w, req)
		if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(component)); got != before {
			t.Fatalf("a panic answering %v", req)
		}
	})
}
