package proxy

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		// what happens: "change" (a change arrives), "ok"/"fail" (a sync at at ends so).
		event string
		at    time.Duration
		// wantNext is when the next sync happens after the event (a due time in the past
		// is now); wantFull whether it is a full one.
		wantNext time.Duration
		wantFull bool
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "the first sync is at once and full, then one every period", steps: []step{
			{event: "start", wantNext: 0, wantFull: true},
			{event: "ok", at: 0, wantNext: 30 * time.Second, wantFull: true},
			{event: "ok", at: 30 * time.Second, wantNext: 60 * time.Second, wantFull: true},
		}},
		{name: "a change syncs partially, no sooner than minPeriod after the last sync", steps: []step{
			{event: "ok", at: 0, wantNext: 30 * time.Second, wantFull: true},
			{event: "change", at: 200 * time.Millisecond, wantNext: time.Second, wantFull: false},
			{event: "ok", at: time.Second, wantNext: 30 * time.Second, wantFull: true},
			{event: "change", at: 29900 * time.Millisecond, wantNext: 29900 * time.Millisecond, wantFull: false},
		}},
		{name: "failures back off from a second, doubling to the period, and sync fully", steps: []step{
			{event: "ok", at: 0, wantNext: 30 * time.Second, wantFull: true},
			{event: "change", at: 5 * time.Second, wantNext: 5 * time.Second, wantFull: false},
			{event: "fail", at: 5 * time.Second, wantNext: 6 * time.Second, wantFull: true},
			{event: "change", at: 5500 * time.Millisecond, wantNext: 6 * time.Second, wantFull: true},
			{event: "fail", at: 6 * time.Second, wantNext: 8 * time.Second, wantFull: true},
			{event: "fail", at: 8 * time.Second, wantNext: 12 * time.Second, wantFull: true},
			{event: "fail", at: 12 * time.Second, wantNext: 20 * time.Second, wantFull: true},
			{event: "fail", at: 20 * time.Second, wantNext: 36 * time.Second, wantFull: true},
			{event: "fail", at: 36 * time.Second, wantNext: 66 * time.Second, wantFull: true},
			{event: "ok", at: 66 * time.Second, wantNext: 96 * time.Second, wantFull: true},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSchedule(time.Second, 30*time.Second)
			for i, st := range tc.steps {
				at := t0.Add(st.at)
				switch st.event {
				case "change":
					s.pending = true
				case "ok", "fail":
					s.pending = false
					s.done(at, s.full(at), st.event == "ok")
				}
				next := s.next()
				if next.Before(at) {
					next = at
				}
				if want := t0.Add(st.wantNext); !next.Equal(want) {
					t.Errorf("step %d (%s at %v): next sync at %v, want %v", i, st.event, st.at, next.Sub(t0), st.wantNext)
				}
				if full := s.full(next); full != st.wantFull {
					t.Errorf("step %d: full = %v, want %v", i, full, st.wantFull)
				}
			}
		})
	}
}

func TestConfig(t *testing.T) {
	ips := func(s ...string) []net.IP {
		var out []net.IP
		for _, x := range s {
			out = append(out, net.ParseIP(x))
		}
		return out
	}
	t.Run("defaults", func(t *testing.T) {
		cfg := Config{NodeIPs: ips("192.168.0.10")}
		fcs, err := cfg.complete()
		if err != nil {
			t.Fatal(err)
		}
		if cfg.MinSyncPeriod != time.Second || cfg.SyncPeriod != 30*time.Second {
			t.Errorf("periods %v, %v", cfg.MinSyncPeriod, cfg.SyncPeriod)
		}
		if len(fcs) != 1 || !fcs[0].nodePortPrimary || fcs[0].nodePortAll {
			t.Errorf("family configs %+v", fcs[0])
		}
		if got := fcs[0].nodePortIPs(nil); len(got) != 1 || got[0].String() != "192.168.0.10" {
			t.Errorf("NodePort IPs %v", got)
		}
	})
	t.Run("CIDRs select interface addresses, not loopback; a family without one takes all", func(t *testing.T) {
		cfg := Config{NodeIPs: ips("192.168.0.10", "fd00::10"), NodePortAddresses: []string{"10.0.0.0/8", "127.0.0.0/8"}}
		fcs, err := cfg.complete()
		if err != nil {
			t.Fatal(err)
		}
		got := fcs[0].nodePortIPs([]netip.Addr{netip.MustParseAddr("10.2.3.4"), netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("192.168.0.10")})
		if len(got) != 1 || got[0].String() != "10.2.3.4" {
			t.Errorf("NodePort IPs %v, want [10.2.3.4]", got)
		}
		if !fcs[1].nodePortAll {
			t.Error("ip6 has no CIDR of its own: NodePorts on every address")
		}
	})
	for _, bad := range []Config{
		{},
		{NodeIPs: ips("192.168.0.10", "192.168.0.11")},
		{NodeIPs: ips("192.168.0.10"), ClusterCIDRs: []string{"10.1.0.0/33"}},
		{NodeIPs: ips("192.168.0.10"), NodePortAddresses: []string{"eth0"}},
		{NodeIPs: ips("0.0.0.0")},
	} {
		if _, err := bad.complete(); err == nil {
			t.Errorf("config %+v accepted", bad)
		}
	}
}

func TestTracker(t *testing.T) {
	logger := klog.Background()
	tr := newChangeTracker([]v1.IPFamily{v1.IPv4Protocol}, testNode)
	notified := 0
	tr.notify = func() { notified++ }
	svc := makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj()
	tr.serviceChanged(logger, svc, false)
	tr.sliceChanged(logger, makeSlice("ns", "web", "s1").port("http", tcp, 8080).ep("10.1.0.1", "").obj(), false)
	got := tr.checkout(false)
	web := types.NamespacedName{Namespace: "ns", Name: "web"}
	if len(got) != 1 || got[web] == nil || len(got[web].slices) != 1 || notified != 2 {
		t.Fatalf("checkout %v, notified %d", got, notified)
	}

	// A status write changes nothing the proxy programs.
	status := svc.DeepCopy()
	status.Status.Conditions = []metav1.Condition{{Type: "X"}}
	tr.serviceChanged(logger, status, false)
	if tr.pending() || notified != 2 {
		t.Error("a status write marked the Service")
	}

	// A slice that moves to another Service leaves the first.
	tr.sliceChanged(logger, makeSlice("ns", "other", "s1").port("http", tcp, 8080).ep("10.1.0.1", "").obj(), false)
	got = tr.checkout(false)
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	if len(got) != 2 || len(got[web].slices) != 0 || len(got[other].slices) != 1 {
		t.Errorf("after the move: %+v", got)
	}

	// Deletions arrive as tombstones too; other objects are ignored.
	tr.serviceChanged(logger, cache.DeletedFinalStateUnknown{Key: "ns/web", Obj: svc}, true)
	tr.serviceChanged(logger, "not a service", false)
	if got := tr.checkout(false); len(got) != 1 || got[web].ports != nil {
		t.Errorf("after the deletion: %+v", got)
	}
	if all := tr.checkout(true); len(all) != 0 {
		t.Errorf("every Service: %v, want none (ns/web is gone, ns/other has no Service)", all)
	}
}

// An object that makes a handler panic is skipped, and counted; the handler goes on.
func TestHandlerPanicIsContained(t *testing.T) {
	tr := newChangeTracker([]v1.IPFamily{v1.IPv4Protocol}, testNode)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component))
	h := tr.serviceHandlers(klog.Background())
	h.OnAdd((*v1.Service)(nil), false)
	h.OnAdd(makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(), false)
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component)); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=proxy} = %v, want %v", got, before+1)
	}
	if got := tr.checkout(false); len(got) != 1 {
		t.Errorf("the Service after the bad one: %v", got)
	}
}

// panicNFT panics in Run while armed.
type panicNFT struct {
	knftables.Interface
	mu    sync.Mutex
	armed bool
}

func (p *panicNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	p.mu.Lock()
	armed := p.armed
	p.mu.Unlock()
	if armed {
		panic("injected")
	}
	return p.Interface.Run(ctx, tx)
}

// TestRun runs the proxy on a fake API and a fake nftables: it syncs what the informers
// list, follows changes, survives a sync that panics, and stops with its context.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), testLogger(t)))
	defer cancel()
	client := fake.NewClientset(
		makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
		makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj(),
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, Labels: map[string]string{v1.LabelTopologyZone: "zone-a"}}},
	)
	cfg := defaultTestConfig()
	cfg.MinSyncPeriod = 10 * time.Millisecond
	fcs, err := cfg.complete()
	if err != nil {
		t.Fatal(err)
	}
	nft := &panicNFT{Interface: knftables.NewFake(knftables.IPv4Family, TableName)}
	p := newProxier(client, cfg, fcs, []knftables.Interface{nft}, &fakeConntrack{})
	done := make(chan error)
	go func() { done <- p.Run(ctx) }()

	fakeNFT := nft.Interface.(*knftables.Fake)
	hasRule := func(s string) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) { return strings.Contains(readable(fakeNFT.Dump()), s), nil }
	}
	waitFor := func(what string, cond func(context.Context) (bool, error)) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v\n%s", what, err, readable(fakeNFT.Dump()))
		}
	}
	waitFor("the first sync", func(context.Context) (bool, error) { return p.HasSynced(), nil })
	waitFor("the listed Service", hasRule("meta l4proto tcp dnat to 10.1.0.1:8080"))

	nft.mu.Lock()
	nft.armed = true
	nft.mu.Unlock()
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component))
	_, err = client.DiscoveryV1().EndpointSlices("ns").Update(ctx,
		makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.2", "node-b").obj(), metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor("the panic", func(context.Context) (bool, error) {
		return testutil.ToFloat64(panics.Recovered.WithLabelValues(Component)) > before, nil
	})
	nft.mu.Lock()
	nft.armed = false
	nft.mu.Unlock()
	// The retry (after the back-off of a second) is a full sync with the change.
	waitFor("the change after the panic", hasRule("meta l4proto tcp dnat to 10.1.0.2:8080"))

	if _, err := client.CoreV1().Services("ns").Create(ctx,
		makeService("ns", "db", "10.96.0.20").port("pg", tcp, 5432).obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DiscoveryV1().EndpointSlices("ns").Create(ctx, &discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "db-1", Labels: map[string]string{discovery.LabelServiceName: "db"}},
		AddressType: discovery.AddressTypeIPv4,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the new Service without endpoints", hasRule("add element no-endpoint-services { 10.96.0.20 . tcp . 5432 : goto reject-chain }"))

	if got := testutil.ToFloat64(p.metrics.SyncFailures.WithLabelValues("IPv4")); got < 1 {
		t.Errorf("sync failures counted: %v", got)
	}
	if n := testutil.CollectAndCount(p.metrics.SyncDuration); n != 1 {
		t.Errorf("%d sync duration series", n)
	}
	p.mu.Lock()
	zone := p.zone
	p.mu.Unlock()
	if zone != "zone-a" {
		t.Errorf("zone %q", zone)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	if err := p.Run(context.Background()); err == nil {
		t.Error("a second Run was accepted")
	}
}

func TestConntrackCleanup(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	flow := func(dst, src string) udpFlow {
		return udpFlow{origDst: netip.MustParseAddrPort(dst), replySrc: netip.MustParseAddrPort(src)}
	}
	f.ct.flows = map[v1.IPFamily][]udpFlow{v1.IPv4Protocol: {
		flow("10.96.0.53:53", "10.1.0.1:5353"),
		flow("10.96.0.53:53", "10.1.0.2:5353"),
		flow("10.96.0.53:53", "10.1.0.9:5353"), // an endpoint already gone
		flow("192.168.0.10:30053", "10.1.0.2:5353"),
		flow("192.168.0.10:30053", "10.1.0.9:5353"),
		flow("10.96.0.99:53", "10.1.0.9:5353"),           // not a Service
		flow("198.51.100.1:30053", "198.51.100.1:30053"), // the node's own flow to another host
	}}
	svc := makeService("kube-system", "dns", "10.96.0.53").port("dns", udp, 53).nodePort(30053).obj()
	f.set(svc, makeSlice("kube-system", "dns", "dns-1").port("dns", udp, 5353).ep("10.1.0.1", "").ep("10.1.0.2", "").obj())
	stats := f.sync(true)
	if stats.conntrackDeleted != 2 {
		t.Errorf("first sync deleted %d entries, want 2 (those to 10.1.0.9)", stats.conntrackDeleted)
	}
	// 10.1.0.2 goes: its entries go.
	f.set(makeSlice("kube-system", "dns", "dns-1").port("dns", udp, 5353).ep("10.1.0.1", "").obj())
	f.sync(false)
	want := []udpFlow{flow("10.96.0.53:53", "10.1.0.1:5353"), flow("10.96.0.99:53", "10.1.0.9:5353"), flow("198.51.100.1:30053", "198.51.100.1:30053")}
	if diff := cmp.Diff(want, f.ct.flows[v1.IPv4Protocol], cmp.Comparer(func(a, b udpFlow) bool { return a == b })); diff != "" {
		t.Errorf("flows (-want +got):\n%s", diff)
	}
	// A TCP change does not look at conntrack.
	calls := f.ct.calls
	f.set(makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj())
	f.sync(false)
	if f.ct.calls != calls {
		t.Error("a TCP change cleaned conntrack")
	}
	// The Service goes: every entry to its frontend goes.
	f.delete(svc)
	f.sync(false)
	want = want[1:]
	if diff := cmp.Diff(want, f.ct.flows[v1.IPv4Protocol], cmp.Comparer(func(a, b udpFlow) bool { return a == b })); diff != "" {
		t.Errorf("flows after the Service went (-want +got):\n%s", diff)
	}
}
