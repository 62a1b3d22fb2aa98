package proxy

import (
	"errors"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/knftables"
)

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestRules checks, for each scenario, what a full sync adds to the table for its objects;
// that a partial sync from an empty table writes the same; and that a second full sync
// leaves the table as it was.
func TestRules(t *testing.T) {
	for _, sc := range ruleScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			f := newFixture(t, defaultTestConfig())
			f.zone = sc.zone
			f.set(sc.objs...)
			f.sync(true)
			if diff := cmp.Diff(lines(sc.want), f.serviceLines(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			full := f.dump()
			f.sync(true)
			if diff := cmp.Diff(full, f.dump()); diff != "" {
				t.Errorf("a second full sync changed the table (-first +second):\n%s", diff)
			}

			g := newFixture(t, defaultTestConfig())
			g.zone = sc.zone
			g.sync(true)
			g.set(sc.objs...)
			g.sync(false)
			if diff := cmp.Diff(full, g.dump()); diff != "" {
				t.Errorf("a partial sync wrote another table than a full one (-full +partial):\n%s", diff)
			}
		})
	}
}

// TestBaseRules shows the fixed part of the table: the base chains on the hooks and what
// they jump to, for NodePorts on the primary IP and on every local address.
func TestBaseRules(t *testing.T) {
	common := `
		add table { comment "berth service proxy (kube-proxy's nftables mode)" ; }
		add chain cluster-ips-check
		add chain filter-forward { type filter hook forward priority 0 ; }
		add chain filter-input { type filter hook input priority 0 ; }
		add chain filter-output { type filter hook output priority 0 ; }
		add chain filter-output-pre-dnat { type filter hook output priority -110 ; }
		add chain filter-prerouting-pre-dnat { type filter hook prerouting priority -110 ; }
		add chain firewall-check
		add chain masquerading
		add chain nat-output { type nat hook output priority -100 ; }
		add chain nat-postrouting { type nat hook postrouting priority 100 ; }
		add chain nat-prerouting { type nat hook prerouting priority -100 ; }
		add chain nodeport-endpoints-check
		add chain reject-chain
		add chain service-endpoints-check
		add chain services
		add set cluster-ips { type ipv4_addr ; comment "active ClusterIPs" ; }
		add set hairpin-connections { type ipv4_addr . ipv4_addr . inet_proto . inet_service ; comment "local endpoints that may reach themselves through a Service" ; }
		NODEPORT-SET
		add map firewall-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "load balancer IPs with source ranges" ; }
		add map no-endpoint-nodeports { type inet_proto . inet_service : verdict ; comment "reject or drop NodePort traffic without endpoints" ; }
		add map no-endpoint-services { type ipv4_addr . inet_proto . inet_service : verdict ; comment "reject or drop service IP traffic without endpoints" ; }
		add map service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment "ClusterIP, external IP and load balancer IP traffic" ; }
		add map service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }
		add rule cluster-ips-check ip daddr @cluster-ips reject comment "reject traffic to undefined ports of ClusterIPs"
		add rule filter-forward ct state new jump service-endpoints-check
		add rule filter-forward ct state new jump cluster-ips-check
		add rule filter-input ct state new jump nodeport-endpoints-check
		add rule filter-input ct state new jump service-endpoints-check
		add rule filter-output ct state new jump service-endpoints-check
		add rule filter-output ct state new jump cluster-ips-check
		add rule filter-output-pre-dnat ct state new jump firewall-check
		add rule filter-prerouting-pre-dnat ct state new jump firewall-check
		add rule firewall-check ip daddr . meta l4proto . th dport vmap @firewall-ips
		add rule masquerading mark and 0x4000 != 0 mark set mark xor 0x4000 masquerade fully-random
		add rule masquerading ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random comment "hairpin"
		add rule nat-output jump services
		add rule nat-postrouting jump masquerading
		add rule nat-prerouting jump services
		NODEPORT-CHECK
		add rule reject-chain meta l4proto tcp reject with tcp reset
		add rule reject-chain reject
		add rule service-endpoints-check ip daddr . meta l4proto . th dport vmap @no-endpoint-services
		add rule services ip daddr @cluster-ips ip saddr != { 10.1.0.0/16 } mark set mark or 0x4000 comment "masquerade ClusterIP traffic from outside the cluster"
		add rule services ip daddr . meta l4proto . th dport vmap @service-ips
		NODEPORT-DISPATCH`
	for _, tc := range []struct {
		name                 string
		nodePortAddresses    []string
		set, check, dispatch string
	}{
		{
			name:     "primary (default)",
			set:      `add set nodeport-ips { type ipv4_addr ; comment "IPs that accept NodePort traffic" ; }`,
			check:    `add rule nodeport-endpoints-check ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports`,
			dispatch: "add rule services ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports\n add element nodeport-ips { 192.168.0.10 }",
		},
		{
			name:              "every local address",
			nodePortAddresses: []string{"0.0.0.0/0"},
			check:             `add rule nodeport-endpoints-check ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports`,
			dispatch:          `add rule services fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := defaultTestConfig()
			cfg.NodePortAddresses = tc.nodePortAddresses
			f := newFixture(t, cfg)
			f.sync(true)
			want := strings.NewReplacer("NODEPORT-SET", tc.set, "NODEPORT-CHECK", tc.check, "NODEPORT-DISPATCH", tc.dispatch).Replace(common)
			if diff := cmp.Diff(lines(want), f.dump()); diff != "" {
				t.Errorf("base rules (-want +got):\n%s", diff)
			}
		})
	}
}

// serviceNames are the Services a transaction names (in chain names and comments).
var serviceNameRE = regexp.MustCompile(`(?:service|local|external|firewall|endpoint|affinity)-([a-z0-9-]+/[a-z0-9-]+)/(?:tcp|udp|sctp)/`)

func namesIn(tx string) []string {
	var names []string
	for _, m := range serviceNameRE.FindAllStringSubmatch(readable(tx), -1) {
		if name := m[1]; !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func TestPartialSyncTouchesOnlyTheChangedService(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	f.set(
		makeService("ns", "a", "10.96.0.1").port("http", tcp, 80).nodePort(30001).obj(),
		makeSlice("ns", "a", "a-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj(),
		makeService("ns", "b", "10.96.0.2").port("http", tcp, 80).affinity(60).obj(),
		makeSlice("ns", "b", "b-1").port("http", tcp, 8080).ep("10.1.0.2", "node-b").ep("10.1.0.3", "node-c").obj(),
		makeService("ns", "c", "10.96.0.3").port("dns", udp, 53).obj(),
		makeSlice("ns", "c", "c-1").port("dns", udp, 53).ep("10.1.0.4", "node-b").obj(),
	)
	if stats := f.sync(true); stats.changed != 3 {
		t.Fatalf("the full sync changed %d services, want 3", stats.changed)
	}

	// b gets a third endpoint: only b's service chain and the new endpoint's chain and set
	// are written; a and c are not named.
	f.set(makeSlice("ns", "b", "b-1").port("http", tcp, 8080).ep("10.1.0.2", "node-b").ep("10.1.0.3", "node-c").ep("10.1.0.5", "node-c").obj())
	stats := f.sync(false)
	if stats.full || stats.services != 1 || stats.changed != 1 {
		t.Errorf("partial sync stats = %+v, want one service planned and changed", stats)
	}
	tx := f.nft.last()
	if got := namesIn(tx); !slices.Equal(got, []string{"ns/b"}) {
		t.Errorf("the partial sync named %v, want only ns/b:\n%s", got, readable(tx))
	}
	wantTx := lines(`
		add chain endpoint-ns/b/tcp/http/_10.1.0.5/8080
		flush chain endpoint-ns/b/tcp/http/_10.1.0.5/8080
		add chain service-ns/b/tcp/http
		flush chain service-ns/b/tcp/http
		add set affinity-ns/b/tcp/http/_10.1.0.5/8080/60 { type ipv4_addr ; flags dynamic,timeout ; timeout 60s ; }
		add rule endpoint-ns/b/tcp/http/_10.1.0.5/8080 update @affinity-ns/b/tcp/http/_10.1.0.5/8080/60 { ip saddr }
		add rule endpoint-ns/b/tcp/http/_10.1.0.5/8080 meta l4proto tcp dnat to 10.1.0.5:8080
		add rule service-ns/b/tcp/http ip saddr @affinity-ns/b/tcp/http/_10.1.0.2/8080/60 goto endpoint-ns/b/tcp/http/_10.1.0.2/8080
		add rule service-ns/b/tcp/http ip saddr @affinity-ns/b/tcp/http/_10.1.0.3/8080/60 goto endpoint-ns/b/tcp/http/_10.1.0.3/8080
		add rule service-ns/b/tcp/http ip saddr @affinity-ns/b/tcp/http/_10.1.0.5/8080/60 goto endpoint-ns/b/tcp/http/_10.1.0.5/8080
		add rule service-ns/b/tcp/http numgen random mod 3 vmap { 0 : goto endpoint-ns/b/tcp/http/_10.1.0.2/8080 , 1 : goto endpoint-ns/b/tcp/http/_10.1.0.3/8080 , 2 : goto endpoint-ns/b/tcp/http/_10.1.0.5/8080 }`)
	if diff := cmp.Diff(wantTx, lines(readable(tx))); diff != "" {
		t.Errorf("partial transaction (-want +got):\n%s", diff)
	}

	// A change that changes no rule (a status write, a new annotation) writes nothing.
	before := len(f.nft.txs)
	svc := makeService("ns", "a", "10.96.0.1").port("http", tcp, 80).nodePort(30001).obj()
	svc.Annotations = map[string]string{"note": "x"}
	f.set(svc)
	if stats := f.sync(false); stats.changed != 0 || len(f.nft.txs) != before {
		t.Errorf("a no-op change: stats %+v, %d transactions run, want none", stats, len(f.nft.txs)-before)
	}

	// The result is what a full sync of the same objects writes.
	partial := f.dump()
	f.sync(true)
	if diff := cmp.Diff(f.dump(), partial); diff != "" {
		t.Errorf("partial syncs left another table than a full sync (-full +partial):\n%s", diff)
	}
}

func TestRemovedServiceChainsAreFlushedThenDeleted(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	svc := makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).affinity(60).obj()
	slice := makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).ep("10.1.1.1", "node-c").obj()
	f.set(svc, slice)
	f.sync(true)
	base := baseLines(t, f.cfg)

	f.delete(svc, slice)
	f.sync(false)
	// The elements and sets are gone at once; the chains stay, empty, for a second.
	wantLeft := lines(`
		add chain endpoint-ns/web/tcp/http/_10.1.1.1/8080
		add chain endpoint-ns/web/tcp/http/_10.1.0.1/8080
		add chain external-ns/web/tcp/http
		add chain service-ns/web/tcp/http`)
	if diff := cmp.Diff(wantLeft, f.serviceLines()); diff != "" {
		t.Errorf("right after the deletion (-want +got):\n%s", diff)
	}
	f.now = f.now.Add(500 * time.Millisecond)
	f.sync(false)
	if len(f.serviceLines()) != 4 {
		t.Errorf("chains deleted before %v: %v", staleChainDelay, f.serviceLines())
	}
	f.now = f.now.Add(staleChainDelay)
	f.sync(false)
	if diff := cmp.Diff(base, f.dump()); diff != "" {
		t.Errorf("a second later the table is not the empty one (-want +got):\n%s", diff)
	}
}

func TestServiceBackBeforeItsChainsAreDeleted(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	svc := makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj()
	slice := makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj()
	f.set(svc, slice)
	f.sync(true)
	want := f.dump()
	f.delete(slice)
	f.sync(false)
	f.set(slice)
	f.now = f.now.Add(2 * staleChainDelay)
	f.sync(false)
	f.now = f.now.Add(2 * staleChainDelay)
	f.sync(false)
	if diff := cmp.Diff(want, f.dump()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestAffinityTimeoutChangeMakesNewSets(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	slice := makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj()
	f.set(makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).affinity(60).obj(), slice)
	f.sync(true)
	f.set(makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).affinity(120).obj())
	f.sync(false)
	var sets []string
	for _, l := range f.dump() {
		if strings.HasPrefix(l, "add set affinity-") {
			sets = append(sets, l)
		}
	}
	want := []string{"add set affinity-ns/web/tcp/http/_10.1.0.1/8080/120 { type ipv4_addr ; flags dynamic,timeout ; timeout 120s ; }"}
	if diff := cmp.Diff(want, sets); diff != "" {
		t.Errorf("affinity sets (-want +got):\n%s", diff)
	}
}

// Two Services may claim one element: the first by name wins, and the other takes over
// when it lets go; no transaction adds an element twice.
func TestSharedElements(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	a := makeService("ns", "a", "10.96.0.1").port("http", tcp, 80).externalIPs("203.0.113.5").obj()
	b := makeService("ns", "b", "10.96.0.2").port("http", tcp, 80).externalIPs("203.0.113.5").obj()
	f.set(a, b,
		makeSlice("ns", "a", "a-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).obj(),
		makeSlice("ns", "b", "b-1").port("http", tcp, 8080).ep("10.1.0.1", testNode).obj())
	f.sync(true)
	external := func() []string {
		var out []string
		for _, l := range f.dump() {
			if strings.Contains(l, "203.0.113.5") || strings.HasPrefix(l, "add element hairpin-connections") {
				out = append(out, l)
			}
		}
		return out
	}
	want := []string{
		"add element hairpin-connections { 10.1.0.1 . 10.1.0.1 . tcp . 8080 }",
		"add element service-ips { 203.0.113.5 . tcp . 80 : goto external-ns/a/tcp/http }",
	}
	if diff := cmp.Diff(want, external()); diff != "" {
		t.Errorf("shared elements (-want +got):\n%s", diff)
	}
	f.delete(a)
	f.sync(false)
	want[1] = "add element service-ips { 203.0.113.5 . tcp . 80 : goto external-ns/b/tcp/http }"
	if diff := cmp.Diff(want, external()); diff != "" {
		t.Errorf("after a went (-want +got):\n%s", diff)
	}
}

// A full sync removes what an earlier run left: chains and affinity sets of Services that
// are gone.
func TestFullSyncRemovesLeftovers(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	f.set(makeService("ns", "old", "10.96.0.9").port("http", tcp, 80).affinity(60).obj(),
		makeSlice("ns", "old", "old-1").port("http", tcp, 8080).ep("10.1.0.9", "node-b").obj())
	f.sync(true)

	// A new proxier (a restart) on the same table, which no longer has the Service.
	g := newFixture(t, defaultTestConfig())
	g.fake, g.nft = f.fake, &recordingNFT{Interface: f.fake}
	g.fp.nft = g.nft
	g.sync(true)
	g.now = g.now.Add(staleChainDelay)
	g.sync(false)
	if got := g.serviceLines(); len(got) != 0 {
		t.Errorf("leftovers after a full sync and a second: %v", got)
	}
}

func TestFailedSyncIsFollowedByAFullSync(t *testing.T) {
	f := newFixture(t, defaultTestConfig())
	f.sync(true)
	f.set(makeService("ns", "web", "10.96.0.10").port("http", tcp, 80).obj(),
		makeSlice("ns", "web", "web-1").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj())
	f.nft.failRun = func(*knftables.Transaction) error { return errors.New("injected") }
	if _, err := f.fp.sync(f.ctx, f.tracker.checkout(false), false, f.planner()); err == nil {
		t.Fatal("the sync did not fail")
	}
	if !f.fp.needFull {
		t.Error("a failed sync did not ask for a full one")
	}
	f.nft.failRun = nil
	// The changes were checked out by the failed sync: the full one finds them again.
	if stats := f.sync(true); !stats.full {
		t.Errorf("stats %+v", stats)
	}
	if got := len(f.serviceLines()); got != 4 {
		t.Errorf("after the full sync, %d service lines, want 4: %v", got, f.serviceLines())
	}
}

func TestDualStack(t *testing.T) {
	cfg := defaultTestConfig()
	cfg.NodeIPs = append(cfg.NodeIPs, net.ParseIP("fd00::10"))
	cfg.ClusterCIDRs = []string{"10.1.0.0/16,fd01::/48"}
	fcs, err := cfg.complete()
	if err != nil {
		t.Fatal(err)
	}
	if len(fcs) != 2 || fcs[1].rules.family != knftables.IPv6Family {
		t.Fatalf("families %v", fcs)
	}
	f := newFixture(t, cfg)
	f.fp = newFamilyProxier(fcs[1], f.nft, f.ct)
	f.fake = knftables.NewFake(knftables.IPv6Family, TableName)
	f.nft.Interface = f.fake
	f.fp.nft = f.nft
	f.tracker = newChangeTracker([]v1.IPFamily{v1.IPv4Protocol, v1.IPv6Protocol}, testNode)
	f.set(makeService("ns", "web", "10.96.0.10", "fd02::10").port("http", tcp, 80).nodePort(30080).obj(),
		makeSlice("ns", "web", "web-4").port("http", tcp, 8080).ep("10.1.0.1", "node-b").obj(),
		makeSlice("ns", "web", "web-6").ipv6().port("http", tcp, 8080).ep("fd01::1", testNode).ep("fd01::2", "node-b").obj())
	f.sync(true)
	var got []string
	for _, l := range f.dump() {
		if strings.Contains(l, "ns/web") || strings.Contains(l, "element") || strings.HasPrefix(l, "add rule services") {
			got = append(got, l)
		}
	}
	want := lines(`
		add chain external-ns/web/tcp/http
		add chain service-ns/web/tcp/http
		add rule external-ns/web/tcp/http mark set mark or 0x4000
		add rule external-ns/web/tcp/http goto service-ns/web/tcp/http
		add rule service-ns/web/tcp/http meta l4proto tcp dnat ip6 addr . port to numgen random mod 2 map { 0 : fd01::1 . 8080 , 1 : fd01::2 . 8080 }
		add rule services ip6 daddr @cluster-ips ip6 saddr != { fd01::/48 } mark set mark or 0x4000 comment "masquerade ClusterIP traffic from outside the cluster"
		add rule services ip6 daddr . meta l4proto . th dport vmap @service-ips
		add rule services ip6 daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
		add element cluster-ips { fd02::10 }
		add element hairpin-connections { fd01::1 . fd01::1 . tcp . 8080 }
		add element nodeport-ips { fd00::10 }
		add element service-ips { fd02::10 . tcp . 80 : goto service-ns/web/tcp/http }
		add element service-nodeports { tcp . 30080 : goto external-ns/web/tcp/http }`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ip6 rules (-want +got):\n%s", diff)
	}
}
