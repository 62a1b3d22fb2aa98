package dns

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes/fake"
)

// upstream is a fake upstream nameserver on 127.0.0.1, over UDP and TCP on one port. It
// answers:
//
//	example.com. A             192.0.2.1
//	foo.example.com. A         192.0.2.7 (an ExternalName's target)
//	big.example.com. TXT       40 records: over UDP only a truncated, empty answer
//	nx.example.com.            NXDOMAIN
//	fail.example.com.          SERVFAIL
//	<any>.in-addr.arpa. PTR    host.example.com.
type upstream struct {
	addr string

	mu   sync.Mutex
	seen []*dns.Msg // the queries received
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	pc, ln, err := listenPair("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{addr: pc.LocalAddr().String()}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: u}, {Listener: ln, Handler: u}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		go func() { _ = srv.ActivateAndServe() }()
		<-started
		t.Cleanup(func() { _ = srv.Shutdown() })
	}
	return u
}

func (u *upstream) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	u.mu.Lock()
	u.seen = append(u.seen, req.Copy())
	u.mu.Unlock()
	_, udp := w.RemoteAddr().(*net.UDPAddr)
	m := new(dns.Msg)
	m.SetReply(req)
	m.RecursionAvailable = true
	q := req.Question[0]
	hdr := dns.RR_Header{Name: q.Name, Rrtype: q.Qtype, Class: dns.ClassINET, Ttl: 300}
	switch name := strings.ToLower(q.Name); {
	case name == "example.com." && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{&dns.A{Hdr: hdr, A: net.ParseIP("192.0.2.1")}}
	case name == "foo.example.com." && q.Qtype == dns.TypeA:
		m.Answer = []dns.RR{&dns.A{Hdr: hdr, A: net.ParseIP("192.0.2.7")}}
	case name == "big.example.com." && q.Qtype == dns.TypeTXT:
		if udp {
			m.Truncated = true
			break
		}
		for i := range 40 {
			m.Answer = append(m.Answer, &dns.TXT{Hdr: hdr, Txt: []string{fmt.Sprintf("record %02d %s", i, strings.Repeat("x", 40))}})
		}
	case name == "nx.example.com.":
		m.Rcode = dns.RcodeNameError
	case name == "fail.example.com.":
		m.Rcode = dns.RcodeServerFailure
	case strings.HasSuffix(name, ".in-addr.arpa.") && q.Qtype == dns.TypePTR:
		m.Answer = []dns.RR{&dns.PTR{Hdr: hdr, Ptr: "host.example.com."}}
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
	}
	_ = w.WriteMsg(m)
}

func (u *upstream) queries() []*dns.Msg {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*dns.Msg(nil), u.seen...)
}

// closedPort is an address where nothing answers (a UDP port just released).
func closedPort(t testing.TB) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := pc.LocalAddr().String()
	_ = pc.Close()
	return addr
}

// TestForward: names outside the zone, and reverse names of addresses the cluster does not
// have, are the upstream servers' answer, with the client's ID, EDNS0 as the client asked,
// TCP when UDP was truncated, and the next server when one fails.
func TestForward(t *testing.T) {
	up := newUpstream(t)
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{Upstreams: []string{closedPort(t), up.addr}})
	tests := []struct {
		name   string
		qname  string
		qtype  uint16
		tcp    bool
		edns   uint16
		rcode  int
		answer []string
		tc     bool
	}{
		{"a name outside the zone", "example.com.", dns.TypeA, false, 0, noError, []string{"example.com. 300 IN A 192.0.2.1"}, false},
		{"over TCP", "example.com.", dns.TypeA, true, 0, noError, []string{"example.com. 300 IN A 192.0.2.1"}, false},
		{"NXDOMAIN from upstream", "nx.example.com.", dns.TypeA, false, 1232, nxDomain, nil, false},
		{"SERVFAIL from every upstream", "fail.example.com.", dns.TypeA, false, 0, dns.RcodeServerFailure, nil, false},
		{"a reverse name the cluster does not have", "9.9.9.10.in-addr.arpa.", dns.TypePTR, false, 0, noError, []string{"9.9.9.10.in-addr.arpa. 300 IN PTR host.example.com."}, false},
		{"an ExternalName followed upstream", "ext.ns1.svc.cluster.local.", dns.TypeA, false, 0, noError,
			[]string{"ext.ns1.svc.cluster.local. 5 IN CNAME foo.example.com.", "foo.example.com. 300 IN A 192.0.2.7"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := ask(t, s, tt.qname, tt.qtype, tt.tcp, tt.edns)
			if m.Rcode != tt.rcode || m.Truncated != tt.tc {
				t.Fatalf("rcode %s TC %v, want %s %v\n%v", dns.RcodeToString[m.Rcode], m.Truncated, dns.RcodeToString[tt.rcode], tt.tc, m)
			}
			if diff := cmp.Diff(tt.answer, rrStrings(m.Answer)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if (m.IsEdns0() != nil) != (tt.edns > 0) {
				t.Errorf("OPT in the answer: %v, in the query: %v", m.IsEdns0() != nil, tt.edns > 0)
			}
		})
	}

	t.Run("a truncated UDP answer is fetched over TCP, then fitted to the client", func(t *testing.T) {
		m, wire := ask(t, s, "big.example.com.", dns.TypeTXT, false, 0)
		if !m.Truncated || len(m.Answer) == 0 || len(m.Answer) == 40 || wire > 512 {
			t.Errorf("over UDP: TC %v, %d answers, %d bytes; want TC and some of the 40 in 512 bytes", m.Truncated, len(m.Answer), wire)
		}
		m, _ = ask(t, s, "big.example.com.", dns.TypeTXT, true, 0)
		if m.Truncated || len(m.Answer) != 40 {
			t.Errorf("over TCP: TC %v, %d answers, want all 40", m.Truncated, len(m.Answer))
		}
	})

	t.Run("the upstream is asked with EDNS0 even when the client did not", func(t *testing.T) {
		for _, q := range up.queries() {
			if q.IsEdns0() == nil || q.IsEdns0().UDPSize() < 512 {
				t.Errorf("the upstream got %s without a usable OPT record", q.Question[0].Name)
			}
		}
	})

	t.Run("the upstream that answered is asked first", func(t *testing.T) {
		if got := s.forwarder.preferred.Load(); got != 1 {
			t.Errorf("preferred upstream %d, want 1 (the first is dead)", got)
		}
	})

	t.Run("no names of the zone go upstream", func(t *testing.T) {
		for _, q := range up.queries() {
			if dns.IsSubDomain("cluster.local.", strings.ToLower(q.Question[0].Name)) {
				t.Errorf("the upstream was asked %s", q.Question[0].Name)
			}
		}
	})
}

// TestForwardWithoutUpstreams: without upstreams a name outside the zone is SERVFAIL, and an
// ExternalName is its CNAME.
func TestForwardWithoutUpstreams(t *testing.T) {
	s := newTestServer(t, fake.NewClientset(cluster()...), Config{})
	if m, _ := ask(t, s, "example.com.", dns.TypeA, false, 0); m.Rcode != dns.RcodeServerFailure || m.Authoritative {
		t.Errorf("got %v, want a SERVFAIL that is not authoritative", m)
	}
}

// TestForwardConcurrencyLimit: past maxConcurrentForwards a query is refused at once.
func TestForwardConcurrencyLimit(t *testing.T) {
	up := newUpstream(t)
	s := newTestServer(t, fake.NewClientset(), Config{Upstreams: []string{up.addr}})
	for range maxConcurrentForwards {
		s.forwarder.sem <- struct{}{}
	}
	if m, _ := ask(t, s, "example.com.", dns.TypeA, false, 0); m.Rcode != dns.RcodeRefused {
		t.Errorf("got %s, want REFUSED", dns.RcodeToString[m.Rcode])
	}
	<-s.forwarder.sem
	if m, _ := ask(t, s, "example.com.", dns.TypeA, false, 0); m.Rcode != noError || len(m.Answer) != 1 {
		t.Errorf("with room: %v", m)
	}
}
