package containerd

import (
	"context"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

func mustCIDR(t *testing.T, s string) *net.IPNet {
	t.Helper()
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRouteWithin(t *testing.T) {
	cidr := mustCIDR(t, "10.244.0.0/24")
	for dst, want := range map[string]bool{
		"10.244.0.0/24":   true,
		"10.244.0.128/25": true,
		"10.244.0.7":      true,  // a host route
		"10.244.0.0/16":   false, // wider: the bridge's /24 wins
		"10.0.0.0/8":      false,
		"default":         false,
		"10.245.0.0/24":   false,
		"fd00::/64":       false,
		"":                false,
	} {
		if got := routeWithin(route{Dst: dst, Dev: "x"}, cidr); got != want {
			t.Errorf("routeWithin(%q, %s) = %v, want %v", dst, cidr, got, want)
		}
	}
	if !routeWithin(route{Dst: "fd00:1::5"}, mustCIDR(t, "fd00:1::/64")) {
		t.Error("an IPv6 host route in the CIDR is not within it")
	}
}

func TestPlanPodCIDRRoutes(t *testing.T) {
	const me = "unix:///var/lib/berth/node/containerd/containerd.sock"
	const other = "unix:///tmp/other/containerd.sock"
	bridge := func(name, alias string) link {
		l := link{Name: name, Alias: alias}
		l.LinkInfo.Kind = "bridge"
		return l
	}
	dummy := link{Name: "dummy0"}
	dummy.LinkInfo.Kind = "dummy"
	links := map[string]link{
		"berth0":  bridge("berth0", bridgeAliasPrefix+other),
		"berth9":  bridge("berth9", bridgeAliasPrefix+me),
		"docker0": bridge("docker0", ""),
		"dummy0":  dummy,
	}
	tests := []struct {
		name      string
		routes    []route
		alive     map[string]bool
		wantStale []string
		wantErr   string // a part of the error; "" for none
	}{
		{name: "no routes", wantStale: nil},
		{name: "only our own bridge and wider routes",
			routes: []route{{Dst: "10.244.0.0/24", Dev: "be2e1"}, {Dst: "default", Dev: "eth0"}, {Dst: "10.0.0.0/8", Dev: "eth0"}}},
		{name: "a stopped berth node's bridge is taken over",
			routes:    []route{{Dst: "10.244.0.0/24", Dev: "berth0"}, {Dst: "10.244.0.0/24", Dev: "be2e1"}},
			wantStale: []string{"berth0"}},
		{name: "our own containerd's bridge of another name is stale (ours is not running)",
			routes:    []route{{Dst: "10.244.0.0/24", Dev: "berth9"}},
			alive:     map[string]bool{me: true},
			wantStale: []string{"berth9"}},
		{name: "a running berth node's bridge refuses",
			routes:  []route{{Dst: "10.244.0.0/24", Dev: "berth0"}},
			alive:   map[string]bool{other: true},
			wantErr: "pod CIDR 10.244.0.0/24 is already routed to interface berth0, the bridge of the berth node whose containerd answers at " + other},
		{name: "a bridge berth did not make refuses",
			routes:  []route{{Dst: "10.244.0.0/24", Dev: "docker0"}},
			wantErr: "pod CIDR 10.244.0.0/24 is already routed to interface docker0 (not this node's bridge be2e1): remove it (ip link delete docker0) or choose another --pod-cidr"},
		{name: "an interface ip could not describe refuses",
			routes:  []route{{Dst: "10.244.0.0/24", Dev: "oldberth"}},
			wantErr: "(ip route del 10.244.0.0/24 dev oldberth)"},
		{name: "a more specific route on another interface refuses",
			routes:  []route{{Dst: "10.244.0.128/25", Dev: "dummy0"}},
			wantErr: "pod CIDR 10.244.0.0/24 is already routed to interface dummy0 (not this node's bridge be2e1): remove the route (ip route del 10.244.0.128/25 dev dummy0)"},
		{name: "a route without a device refuses",
			routes:  []route{{Dst: "10.244.0.0/24"}},
			wantErr: "already routed (10.244.0.0/24)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stale, err := planPodCIDRRoutes(mustCIDR(t, "10.244.0.0/24"), "be2e1", me, tt.routes, links,
				func(e string) bool { return tt.alive[e] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(stale, ",") != strings.Join(tt.wantStale, ",") {
				t.Errorf("stale = %v, want %v", stale, tt.wantStale)
			}
		})
	}
}

// inNewNetns runs f on a thread of its own in a new network namespace (and the ip commands
// f runs with it), so that the test's interfaces and routes touch nothing of the machine's.
func inNewNetns(t *testing.T, f func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("this test creates network namespaces and needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// Never unlocked: the thread, in its namespace, ends with the goroutine.
		runtime.LockOSThread()
		if err := syscall.Unshare(syscall.CLONE_NEWNET); err != nil {
			t.Errorf("unshare: %v", err)
			return
		}
		f()
	}()
	<-done
}

// TestTakeOverPodCIDR runs the route check on real interfaces in a network namespace: a
// stopped berth node's bridge holding the pod CIDR goes, another interface stops the start.
func TestTakeOverPodCIDR(t *testing.T) {
	inNewNetns(t, func() {
		ctx := context.Background()
		run := func(args ...string) {
			if err := ip(ctx, args...); err != nil {
				t.Fatal(err)
			}
		}
		c := Config{Bridge: "benew", PodCIDR: "10.244.0.0/24"}
		const endpoint = "unix:///nonexistent/new/containerd.sock"

		// A stopped node's bridge: berth's mark, its gateway address, its route.
		run("link", "add", "name", "berth0", "type", "bridge")
		run("link", "set", "dev", "berth0", "alias", bridgeAliasPrefix+"unix:///nonexistent/old/containerd.sock")
		run("addr", "add", "10.244.0.1/24", "dev", "berth0")
		run("link", "set", "dev", "berth0", "up")
		if err := takeOverPodCIDR(ctx, c, endpoint); err != nil {
			t.Fatalf("taking over a stale berth bridge: %v", err)
		}
		if _, err := showLink(ctx, "berth0"); err == nil {
			t.Error("the stale bridge berth0 is still there")
		}

		// Our own bridge, made and marked, holds the route: nothing to do.
		if created, err := ensureBridge(ctx, c, endpoint); err != nil || !created {
			t.Fatalf("ensureBridge: created %v, %v", created, err)
		}
		l, err := showLink(ctx, "benew")
		if err != nil {
			t.Fatal(err)
		}
		if l.LinkInfo.Kind != "bridge" || l.Alias != bridgeAliasPrefix+endpoint {
			t.Errorf("ensureBridge made %+v", l)
		}
		run("addr", "add", "10.244.0.1/24", "dev", "benew")
		run("link", "set", "dev", "benew", "up")
		if err := takeOverPodCIDR(ctx, c, endpoint); err != nil {
			t.Errorf("our own bridge's route refused: %v", err)
		}
		if created, err := ensureBridge(ctx, c, endpoint); err != nil || created {
			t.Errorf("ensureBridge again: created %v, %v", created, err)
		}
		run("link", "delete", "dev", "benew")

		// Someone else's interface.
		run("link", "add", "name", "other0", "type", "veth", "peer", "name", "other1")
		run("addr", "add", "10.244.0.1/24", "dev", "other0")
		run("link", "set", "dev", "other0", "up")
		err = takeOverPodCIDR(ctx, c, endpoint)
		if want := "pod CIDR 10.244.0.0/24 is already routed to interface other0 (not this node's bridge benew)"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one containing %q", err, want)
		}
		if _, err := showLink(ctx, "other0"); err != nil {
			t.Errorf("the other interface is gone: %v", err)
		}

		// A pod CIDR learnt after the start: the same check through the running Process.
		run("link", "add", "name", "berth1", "type", "bridge")
		run("link", "set", "dev", "berth1", "alias", bridgeAliasPrefix+"unix:///nonexistent/old/containerd.sock")
		run("addr", "add", "10.245.0.1/24", "dev", "berth1")
		run("link", "set", "dev", "berth1", "up")
		if _, err := ensureBridge(ctx, c, endpoint); err != nil { // as Start made it
			t.Fatal(err)
		}
		p := &Process{config: c, endpoint: endpoint}
		if err := p.TakeOverPodCIDR(ctx, "10.245.0.0/24"); err != nil {
			t.Errorf("TakeOverPodCIDR: %v", err)
		}
		if _, err := showLink(ctx, "berth1"); err == nil {
			t.Error("the stale bridge berth1 is still there")
		}
		if out, _ := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "benew").CombinedOutput(); !strings.Contains(string(out), "inet 10.245.0.1/24") {
			t.Errorf("after TakeOverPodCIDR the bridge's addresses are %q, want the gateway 10.245.0.1/24", out)
		}

		// A name taken by something that is not a bridge.
		_, err = ensureBridge(ctx, Config{Bridge: "other0"}, endpoint)
		if err == nil || !strings.Contains(err.Error(), "is not a bridge (veth)") {
			t.Errorf("ensureBridge over a veth: %v", err)
		}
	})
}

// TestEnsureGateway: the bridge gets its pod CIDR's first address, up, before any pod (so
// that the cluster DNS on it answers); a second call, as the CNI plugin's own add would
// find, is no error.
func TestEnsureGateway(t *testing.T) {
	inNewNetns(t, func() {
		ctx := context.Background()
		c := Config{Bridge: "begw", PodCIDR: "10.244.3.0/24"}
		if _, err := ensureBridge(ctx, c, "unix:///nonexistent/containerd.sock"); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if err := ensureGateway(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		out, err := exec.Command("ip", "-4", "-o", "addr", "show", "dev", "begw").CombinedOutput()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), "inet 10.244.3.1/24") || strings.Count(string(out), "inet ") != 1 {
			t.Errorf("the bridge's addresses:\n%s\nwant 10.244.3.1/24 alone", out)
		}
		l, err := exec.Command("ip", "-o", "link", "show", "dev", "begw").CombinedOutput()
		if err != nil || !strings.Contains(string(l), ",UP") {
			t.Errorf("the bridge is not up: %s %v", l, err)
		}
		if err := ensureGateway(ctx, Config{Bridge: "begw", PodCIDR: "bad"}); err == nil {
			t.Error("a bad pod CIDR: no error")
		}
	})
}
