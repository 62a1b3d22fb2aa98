package dns

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// runServer runs a Server for client on 127.0.0.1 (port 0) until the test ends, and returns it
// once it serves and its records are synced.
func runServer(t testing.TB, client *fake.Clientset, cfg Config) *Server {
	t.Helper()
	if cfg.Listen == nil {
		cfg.Listen = []string{"127.0.0.1:0"}
	}
	s, err := newServer(client, cfg, noResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after its context ended")
		}
	})
	select {
	case <-s.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	waitFor(t, "the records to sync", s.HasSynced)
	return s
}

func exchange(t testing.TB, network, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	c := &dns.Client{Net: network, Timeout: 5 * time.Second}
	req := new(dns.Msg)
	req.SetQuestion(name, qtype)
	m, _, err := c.Exchange(req, addr)
	if err != nil {
		t.Fatalf("%s %s over %s: %v", name, dns.TypeToString[qtype], network, err)
	}
	return m
}

// TestServeOverSockets: the server answers over UDP and TCP on one port, truncates over UDP
// what TCP then carries whole, forwards, and survives garbage.
func TestServeOverSockets(t *testing.T) {
	up := newUpstream(t)
	objs := cluster()
	var many []discoveryv1.Endpoint
	for i := range 60 {
		many = append(many, apiEndpoint(net.IPv4(10, 244, 7, byte(i)).String(), "", ready))
	}
	objs = append(objs, headlessService("ns1", "many", port("http", 80, v1.ProtocolTCP)),
		apiSlice("ns1", "many", "many-1", discoveryv1.AddressTypeIPv4, nil, many...))
	s := runServer(t, fake.NewClientset(objs...), Config{Upstreams: []string{up.addr}})
	addr := s.Addrs()[0]

	for _, network := range []string{"udp", "tcp"} {
		m := exchange(t, network, addr, "kubernetes.default.svc.cluster.local.", dns.TypeA)
		if len(m.Answer) != 1 || m.Answer[0].(*dns.A).A.String() != "10.96.0.1" || !m.Authoritative {
			t.Errorf("over %s: %v", network, m)
		}
		if m := exchange(t, network, addr, "_http._tcp.web.ns1.svc.cluster.local.", dns.TypeSRV); len(m.Answer) != 1 || len(m.Extra) != 2 {
			t.Errorf("SRV over %s: %v", network, m)
		}
		if m := exchange(t, network, addr, "1.1.96.10.in-addr.arpa.", dns.TypePTR); len(m.Answer) != 1 {
			t.Errorf("PTR over %s: %v", network, m)
		}
		if m := exchange(t, network, addr, "missing.ns1.svc.cluster.local.", dns.TypeA); m.Rcode != dns.RcodeNameError {
			t.Errorf("NXDOMAIN over %s: %v", network, m)
		}
		if m := exchange(t, network, addr, "example.com.", dns.TypeA); len(m.Answer) != 1 {
			t.Errorf("forwarded over %s: %v", network, m)
		}
	}

	m := exchange(t, "udp", addr, "many.ns1.svc.cluster.local.", dns.TypeA)
	if !m.Truncated || len(m.Answer) >= 60 {
		t.Errorf("60 addresses over UDP: TC %v, %d answers; want TC", m.Truncated, len(m.Answer))
	}
	if m := exchange(t, "tcp", addr, "many.ns1.svc.cluster.local.", dns.TypeA); m.Truncated || len(m.Answer) != 60 {
		t.Errorf("60 addresses over TCP: TC %v, %d answers", m.Truncated, len(m.Answer))
	}

	// Garbage, and a header that promises records it lacks: the server goes on.
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, junk := range [][]byte{{1, 2, 3}, {0, 1, 0, 0, 0, 1, 0, 9, 0, 9, 0, 9, 0xff, 0xff}, make([]byte, 600)} {
		_, _ = conn.Write(junk)
	}
	_ = conn.Close()
	if m := exchange(t, "udp", addr, "kubernetes.default.svc.cluster.local.", dns.TypeA); len(m.Answer) != 1 {
		t.Errorf("after garbage: %v", m)
	}

	// Queries at once, over both transports.
	var wg sync.WaitGroup
	for i := range 50 {
		network := []string{"udp", "tcp"}[i%2]
		wg.Go(func() {
			c := &dns.Client{Net: network, Timeout: 5 * time.Second}
			req := new(dns.Msg)
			req.SetQuestion("web.ns1.svc.cluster.local.", dns.TypeA)
			if m, _, err := c.Exchange(req, addr); err != nil || len(m.Answer) != 1 {
				t.Errorf("concurrent over %s: %v, %v", network, m, err)
			}
		})
	}
	wg.Wait()
}

// TestRunOnce: Run stops when its context ends, freeing its port; a second Run is refused.
func TestRunOnce(t *testing.T) {
	s, err := newServer(fake.NewClientset(), Config{Listen: []string{"127.0.0.1:0"}}, noResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	<-s.Ready()
	addr := s.Addrs()[0]
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	pc, ln, err := listenPair(addr)
	if err != nil {
		t.Fatalf("the port is still held: %v", err)
	}
	_ = pc.Close()
	_ = ln.Close()
	if err := s.Run(context.Background()); err == nil {
		t.Error("a second Run did not fail")
	}
}

// TestRunCannotListen: an address in use fails Run at once, and releases what it opened.
func TestRunCannotListen(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	free := closedPort(t)
	s, err := newServer(fake.NewClientset(), Config{Listen: []string{free, pc.LocalAddr().String()}}, noResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run on an address in use did not fail")
	}
	pc2, ln, err := listenPair(free)
	if err != nil {
		t.Fatalf("the first address is still held: %v", err)
	}
	_ = pc2.Close()
	_ = ln.Close()
}

// TestServfailFor: the bare answer to a query that cannot be unpacked.
func TestServfailFor(t *testing.T) {
	q := new(dns.Msg)
	q.SetQuestion("x.", dns.TypeA)
	b, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	reply := new(dns.Msg)
	if err := reply.Unpack(servfailFor(b)); err != nil {
		t.Fatal(err)
	}
	if reply.Id != q.Id || !reply.Response || reply.Rcode != dns.RcodeServerFailure || !reply.RecursionDesired {
		t.Errorf("got %v", reply)
	}
	if servfailFor(b[:5]) != nil {
		t.Error("an answer to 5 bytes")
	}
	b[2] |= 0x80 // a response
	if servfailFor(b) != nil {
		t.Error("an answer to a response")
	}
}
