package proxy

import (
	"context"
	"net"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/knftables"
)

// Services and slices are built with small builders:
//
//	makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).obj()
//	makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-a").obj()
const (
	tcp  = v1.ProtocolTCP
	udp  = v1.ProtocolUDP
	sctp = v1.ProtocolSCTP

	testNode = "node-a"
)

type serviceBuilder struct{ svc *v1.Service }

func makeService(ns, name string, clusterIPs ...string) *serviceBuilder {
	return &serviceBuilder{&v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, ClusterIP: clusterIPs[0], ClusterIPs: clusterIPs,
			SessionAffinity: v1.ServiceAffinityNone},
	}}
}

func (b *serviceBuilder) port(name string, protocol v1.Protocol, port int32) *serviceBuilder {
	b.svc.Spec.Ports = append(b.svc.Spec.Ports, v1.ServicePort{Name: name, Protocol: protocol, Port: port})
	return b
}

// nodePort gives the last port a NodePort and makes the Service a NodePort one.
func (b *serviceBuilder) nodePort(np int32) *serviceBuilder {
	b.svc.Spec.Ports[len(b.svc.Spec.Ports)-1].NodePort = np
	if b.svc.Spec.Type == v1.ServiceTypeClusterIP {
		b.svc.Spec.Type = v1.ServiceTypeNodePort
	}
	b.svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyCluster
	return b
}

func (b *serviceBuilder) loadBalancer(ips ...string) *serviceBuilder {
	b.svc.Spec.Type = v1.ServiceTypeLoadBalancer
	for _, ip := range ips {
		b.svc.Status.LoadBalancer.Ingress = append(b.svc.Status.LoadBalancer.Ingress, v1.LoadBalancerIngress{IP: ip})
	}
	return b
}

func (b *serviceBuilder) sourceRanges(r ...string) *serviceBuilder {
	b.svc.Spec.LoadBalancerSourceRanges = r
	return b
}

func (b *serviceBuilder) externalIPs(ips ...string) *serviceBuilder {
	b.svc.Spec.ExternalIPs = ips
	return b
}

func (b *serviceBuilder) externalLocal() *serviceBuilder {
	b.svc.Spec.ExternalTrafficPolicy = v1.ServiceExternalTrafficPolicyLocal
	return b
}

func (b *serviceBuilder) internalLocal() *serviceBuilder {
	b.svc.Spec.InternalTrafficPolicy = ptr.To(v1.ServiceInternalTrafficPolicyLocal)
	return b
}

func (b *serviceBuilder) affinity(seconds int32) *serviceBuilder {
	b.svc.Spec.SessionAffinity = v1.ServiceAffinityClientIP
	b.svc.Spec.SessionAffinityConfig = &v1.SessionAffinityConfig{ClientIP: &v1.ClientIPConfig{TimeoutSeconds: ptr.To(seconds)}}
	return b
}

func (b *serviceBuilder) obj() *v1.Service { return b.svc }

type sliceBuilder struct{ slice *discovery.EndpointSlice }

func makeSlice(ns, service, name string) *sliceBuilder {
	return &sliceBuilder{&discovery.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{discovery.LabelServiceName: service}},
		AddressType: discovery.AddressTypeIPv4,
	}}
}

func (b *sliceBuilder) ipv6() *sliceBuilder {
	b.slice.AddressType = discovery.AddressTypeIPv6
	return b
}

func (b *sliceBuilder) port(name string, protocol v1.Protocol, port int32) *sliceBuilder {
	b.slice.Ports = append(b.slice.Ports, discovery.EndpointPort{Name: ptr.To(name), Protocol: ptr.To(protocol), Port: ptr.To(port)})
	return b
}

// ep adds a ready endpoint on node ("" for none).
func (b *sliceBuilder) ep(ip, node string) *sliceBuilder {
	e := discovery.Endpoint{Addresses: []string{ip}, Conditions: discovery.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)}}
	if node != "" {
		e.NodeName = ptr.To(node)
	}
	b.slice.Endpoints = append(b.slice.Endpoints, e)
	return b
}

// terminating makes the last endpoint terminating, still serving or not.
func (b *sliceBuilder) terminating(serving bool) *sliceBuilder {
	c := &b.slice.Endpoints[len(b.slice.Endpoints)-1].Conditions
	c.Ready, c.Serving, c.Terminating = ptr.To(false), ptr.To(serving), ptr.To(true)
	return b
}

// notReady makes the last endpoint not ready.
func (b *sliceBuilder) notReady() *sliceBuilder {
	c := &b.slice.Endpoints[len(b.slice.Endpoints)-1].Conditions
	c.Ready, c.Serving = ptr.To(false), ptr.To(false)
	return b
}

// zones gives the last endpoint zone hints.
func (b *sliceBuilder) zones(z ...string) *sliceBuilder {
	h := &discovery.EndpointHints{}
	for _, name := range z {
		h.ForZones = append(h.ForZones, discovery.ForZone{Name: name})
	}
	b.slice.Endpoints[len(b.slice.Endpoints)-1].Hints = h
	return b
}

func (b *sliceBuilder) obj() *discovery.EndpointSlice { return b.slice }

// fixture is one family's proxier on a fake nftables, fed by a change tracker, with a
// settable clock.
type fixture struct {
	t       testing.TB
	ctx     context.Context
	nft     *recordingNFT
	fake    *knftables.Fake
	fp      *familyProxier
	tracker *changeTracker
	ct      *fakeConntrack
	cfg     Config
	zone    string
	now     time.Time
}

func defaultTestConfig() Config {
	return Config{
		NodeName:     testNode,
		NodeIPs:      []net.IP{net.ParseIP("192.168.0.10")},
		ClusterCIDRs: []string{"10.1.0.0/16"},
	}
}

func newFixture(t testing.TB, cfg Config) *fixture {
	t.Helper()
	fcs, err := cfg.complete()
	if err != nil {
		t.Fatal(err)
	}
	fc := fcs[0]
	fake := knftables.NewFake(fc.rules.family, TableName)
	f := &fixture{t: t, ctx: klog.NewContext(context.Background(), testLogger(t)), fake: fake, nft: &recordingNFT{Interface: fake}, ct: &fakeConntrack{}, cfg: cfg,
		now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	if _, ok := t.(*testing.B); ok {
		f.ctx = klog.NewContext(context.Background(), logr.Discard())
	}
	f.fp = newFamilyProxier(fc, f.nft, f.ct)
	f.fp.now = func() time.Time { return f.now }
	f.fp.interfaceAddrs = func() ([]netip.Addr, error) { return nil, nil }
	f.tracker = newChangeTracker([]v1.IPFamily{fc.rules.apiFamily}, cfg.NodeName)
	return f
}

// set feeds objects to the tracker as the informers would.
func (f *fixture) set(objs ...any) {
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Service:
			f.tracker.serviceChanged(klog.FromContext(f.ctx), o, false)
		case *discovery.EndpointSlice:
			f.tracker.sliceChanged(klog.FromContext(f.ctx), o, false)
		default:
			f.t.Fatalf("unexpected %T", o)
		}
	}
}

func (f *fixture) delete(objs ...any) {
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.Service:
			f.tracker.serviceChanged(klog.FromContext(f.ctx), o, true)
		case *discovery.EndpointSlice:
			f.tracker.sliceChanged(klog.FromContext(f.ctx), o, true)
		}
	}
}

func (f *fixture) planner() *planner {
	fc := f.fp.fc
	return &planner{fam: fc.rules, nodeName: f.cfg.NodeName, zone: f.zone, nodeIPs: fc.nodeIPs, clusterCIDRs: fc.clusterCIDRs}
}

// sync runs one sync of what changed (everything, when full) and fails the test on error.
func (f *fixture) sync(full bool) syncStats {
	f.t.Helper()
	stats, err := f.fp.sync(f.ctx, f.tracker.checkout(full), full, f.planner())
	if err != nil {
		f.t.Fatalf("sync(full=%v): %v", full, err)
	}
	return stats
}

var hashRE = regexp.MustCompile(`\b(service|local|external|firewall|endpoint|affinity)-[A-Z2-7]{8}-`)

// readable takes the hashes out of the per-Service names, and the table's name out of
// every line: "add rule ip berth-proxy services …" reads "add rule services …".
func readable(s string) string {
	s = hashRE.ReplaceAllString(s, "$1-")
	s = strings.ReplaceAll(s, " ip "+TableName+" ", " ")
	s = strings.ReplaceAll(s, " ip6 "+TableName+" ", " ")
	return s
}

// dump is the whole table, readable, one line per object, rule and element.
func (f *fixture) dump() []string {
	return strings.Split(strings.TrimSpace(readable(f.fake.Dump())), "\n")
}

// baseLines is the dump of a table with no Service.
func baseLines(t testing.TB, cfg Config) []string {
	f := newFixture(t, cfg)
	f.sync(true)
	return f.dump()
}

// serviceLines is the dump without the lines of a table with no Service (the base chains,
// the fixed rules): what the Services added, in the dump's order.
func (f *fixture) serviceLines() []string {
	base := baseLines(f.t, f.cfg)
	return slices.DeleteFunc(f.dump(), func(l string) bool { return slices.Contains(base, l) })
}

// recordingNFT records the transactions it runs, and fails the next ones on demand.
type recordingNFT struct {
	knftables.Interface
	mu      sync.Mutex
	txs     []string
	failRun func(tx *knftables.Transaction) error
}

func (r *recordingNFT) Run(ctx context.Context, tx *knftables.Transaction) error {
	r.mu.Lock()
	fail := r.failRun
	r.txs = append(r.txs, tx.String())
	r.mu.Unlock()
	if fail != nil {
		if err := fail(tx); err != nil {
			return err
		}
	}
	return r.Interface.Run(ctx, tx)
}

func (r *recordingNFT) last() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.txs) == 0 {
		return ""
	}
	return r.txs[len(r.txs)-1]
}

// fakeConntrack holds UDP flows and deletes those the filter matches.
type fakeConntrack struct {
	mu    sync.Mutex
	flows map[v1.IPFamily][]udpFlow
	calls int
}

func (c *fakeConntrack) deleteUDP(family v1.IPFamily, stale func(udpFlow) bool) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	before := len(c.flows[family])
	if c.flows != nil {
		c.flows[family] = slices.DeleteFunc(c.flows[family], stale)
	}
	return before - len(c.flows[family]), nil
}

// testLogger logs through t (so a failing test shows what the proxy said).
func testLogger(t testing.TB) logr.Logger {
	return logr.New(&tbSink{t: t})
}

type tbSink struct {
	t      testing.TB
	name   string
	values []any
}

func (s *tbSink) Init(logr.RuntimeInfo)          {}
func (s *tbSink) Enabled(level int) bool         { return level <= 4 }
func (s *tbSink) WithName(n string) logr.LogSink { c := *s; c.name = n; return &c }
func (s *tbSink) WithValues(kv ...any) logr.LogSink {
	c := *s
	c.values = append(slices.Clone(s.values), kv...)
	return &c
}
func (s *tbSink) Info(level int, msg string, kv ...any) {
	s.t.Helper()
	s.t.Log(append(append([]any{msg}, s.values...), kv...)...)
}
func (s *tbSink) Error(err error, msg string, kv ...any) {
	s.t.Helper()
	s.t.Log(append(append([]any{"ERROR", msg, "err", err}, s.values...), kv...)...)
}
