package dns

import (
	"context"
	"io/fs"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// Builders of the objects the tests' clusters hold.

func apiNamespace(name string) *v1.Namespace {
	return &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func port(name string, n int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: n, Protocol: proto}
}

func clusterIPService(ns, name string, ips []string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: ips[0], ClusterIPs: ips, Ports: ports},
	}
}

func headlessService(ns, name string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: v1.ClusterIPNone, ClusterIPs: []string{v1.ClusterIPNone}, Ports: ports},
	}
}

func externalNameService(ns, name, target string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: target},
	}
}

func slicePort(name string, n int32, proto v1.Protocol) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(n), Protocol: ptr.To(proto)}
}

// endpoint is an endpoint of one address; hostname "" for none; ready nil for unknown.
func apiEndpoint(addr, hostname string, ready *bool) discoveryv1.Endpoint {
	ep := discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	if hostname != "" {
		ep.Hostname = ptr.To(hostname)
	}
	return ep
}

func apiSlice(ns, service, name string, family discoveryv1.AddressType, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ns, Name: name,
			Labels: map[string]string{discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "test"},
		},
		AddressType: family,
		Ports:       ports,
		Endpoints:   eps,
	}
}

var (
	ready    = ptr.To(true)
	notReady = ptr.To(false)
)

// cluster is the tests' cluster: the records of every kind the specification and CoreDNS have.
func cluster() []runtime.Object {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	tcp, udp := v1.ProtocolTCP, v1.ProtocolUDP
	pg := []discoveryv1.EndpointPort{slicePort("pg", 5432, tcp)}
	lazy := headlessService("ns1", "lazy", port("http", 80, tcp))
	lazy.Spec.PublishNotReadyAddresses = true
	return []runtime.Object{
		apiNamespace("default"), apiNamespace("kube-system"), apiNamespace("ns1"), apiNamespace("empty-ns"),
		clusterIPService("default", "kubernetes", []string{"10.96.0.1"}, port("https", 443, tcp)),
		clusterIPService("kube-system", "kube-dns", []string{"10.96.0.10"}, port("dns", 53, udp), port("dns-tcp", 53, tcp)),
		clusterIPService("ns1", "web", []string{"10.96.1.1", "fd00:96::1"}, port("http", 80, tcp), port("dns", 53, udp), port("", 8080, tcp)),
		apiSlice("ns1", "web", "web-abc", v4, []discoveryv1.EndpointPort{slicePort("http", 8000, tcp)},
			apiEndpoint("10.244.0.5", "", ready), apiEndpoint("10.244.0.6", "", notReady)),
		headlessService("ns1", "db", port("pg", 5432, tcp)),
		apiSlice("ns1", "db", "db-v4", v4, pg,
			apiEndpoint("10.244.1.1", "db-0", ready), apiEndpoint("10.244.1.2", "db-1", nil),
			apiEndpoint("10.244.1.3", "", ready), apiEndpoint("10.244.1.4", "db-3", notReady)),
		apiSlice("ns1", "db", "db-v6", v6, pg, apiEndpoint("fd00:244::1", "db-0", ready)),
		lazy,
		apiSlice("ns1", "lazy", "lazy-1", v4, []discoveryv1.EndpointPort{slicePort("http", 80, tcp)}, apiEndpoint("10.244.2.1", "lazy-0", notReady)),
		headlessService("ns1", "empty", port("http", 80, tcp)),
		externalNameService("ns1", "ext", "foo.example.com"),
		externalNameService("ns1", "alias", "web.ns1.svc.cluster.local"),
		externalNameService("ns1", "byip", "192.0.2.1"),
		// The conformance test's selectorless headless Service with two slices of other ports.
		headlessService("ns1", "multi", port("http", 80, tcp)),
		apiSlice("ns1", "multi", "multi-a", v4, []discoveryv1.EndpointPort{slicePort("http", 80, tcp)}, apiEndpoint("1.2.3.4", "", ready)),
		apiSlice("ns1", "multi", "multi-b", v4, []discoveryv1.EndpointPort{slicePort("https", 443, tcp)}, apiEndpoint("5.6.7.8", "", ready)),
		// A slice that names no Service the cluster has: no records.
		apiSlice("ns1", "ghost", "ghost-1", v4, nil, apiEndpoint("10.244.9.9", "", ready)),
	}
}

// newTestServer is a Server for client with its informers running (no sockets), synced.
func newTestServer(t testing.TB, client *fake.Clientset, cfg Config) *Server {
	t.Helper()
	s, err := newServer(client, cfg, noResolvConf) // never the machine's nameservers
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	s.runInformers(ctx, &wg)
	t.Cleanup(func() { cancel(); wg.Wait() })
	waitFor(t, "the records to sync", s.HasSynced)
	return s
}

func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), 2*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil }); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// recorder is a dns.ResponseWriter that keeps the message written, as the wire would carry it.
type recorder struct {
	tcp       bool
	panicAddr bool
	msg       *dns.Msg
	wire      int // bytes packed
}

func (r *recorder) LocalAddr() net.Addr { return r.addr() }
func (r *recorder) RemoteAddr() net.Addr {
	if r.panicAddr {
		panic("the writer's address is broken")
	}
	return r.addr()
}

func (r *recorder) addr() net.Addr {
	if r.tcp {
		return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
	}
	return &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 5353}
}

func (r *recorder) WriteMsg(m *dns.Msg) error {
	b, err := m.Pack()
	if err != nil {
		return err
	}
	r.wire = len(b)
	r.msg = new(dns.Msg)
	return r.msg.Unpack(b)
}

func (r *recorder) Write(b []byte) (int, error) { return len(b), nil }
func (r *recorder) Close() error                { return nil }
func (r *recorder) TsigStatus() error           { return nil }
func (r *recorder) TsigTimersOnly(bool)         {}
func (r *recorder) Hijack()                     {}

// ask sends s a query for name and qtype over UDP (edns 0: without an OPT record) and returns
// the answer as the client would read it.
func ask(t testing.TB, s *Server, name string, qtype uint16, tcp bool, edns uint16) (*dns.Msg, int) {
	t.Helper()
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	if edns > 0 {
		req.SetEdns0(edns, false)
	}
	w := &recorder{tcp: tcp}
	s.ServeDNS(w, req)
	if w.msg == nil {
		t.Fatalf("%s %s: no answer written", name, dns.TypeToString[qtype])
	}
	if w.msg.Id != req.Id {
		t.Errorf("%s: answer ID %d, want %d", name, w.msg.Id, req.Id)
	}
	return w.msg, w.wire
}

// rrStrings are rrs as text, sorted, without OPT records.
func rrStrings(rrs []dns.RR) []string {
	var out []string
	for _, rr := range rrs {
		if rr.Header().Rrtype != dns.TypeOPT {
			out = append(out, strings.ReplaceAll(rr.String(), "\t", " "))
		}
	}
	slices.Sort(out)
	return out
}

// noResolvConf reads no resolv.conf: a test's server has only the upstreams it is given, so
// that no query leaves the machine.
func noResolvConf(string) ([]byte, error) { return nil, fs.ErrNotExist }
