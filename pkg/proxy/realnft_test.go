package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"sigs.k8s.io/knftables"
)

// helperEnv, in the environment of the test binary, makes it the service proxy of a test
// (proxyHelper) rather than run tests.
const (
	helperEnv        = "BERTH_PROXY_TEST_HELPER"
	helperObjectsEnv = "BERTH_PROXY_TEST_OBJECTS"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "proxy" {
		os.Exit(proxyHelper())
	}
	os.Exit(m.Run())
}

// helperInput is what the test hands the proxy it starts.
type helperInput struct {
	Config   Config
	Services []v1.Service
	Slices   []discovery.EndpointSlice
}

// proxyHelper is a service proxy in its own process (started inside the node's network
// namespace by ip netns exec), as the node agent runs one: New and Run on an API (a fake
// clientset) holding the test's objects, with the real nft and conntrack. It says
// "synced" once the rules are written; on SIGTERM it stops, runs Cleanup and exits.
func proxyHelper() int {
	var in helperInput
	if err := json.Unmarshal([]byte(os.Getenv(helperObjectsEnv)), &in); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var objs []runtime.Object
	for i := range in.Services {
		objs = append(objs, &in.Services[i])
	}
	for i := range in.Slices {
		objs = append(objs, &in.Slices[i])
	}
	p, err := New(fake.NewClientset(objs...), in.Config)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ctx = klog.NewContext(ctx, klog.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	for !p.HasSynced() {
		select {
		case err := <-done:
			fmt.Fprintln(os.Stderr, "Run returned:", err)
			return 1
		case <-time.After(10 * time.Millisecond):
		}
	}
	fmt.Println("synced")
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := Cleanup(context.Background(), ""); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// testNet is a node (a router between pods) and its pods, each in a network namespace:
//
//	client 10.244.0.2/24 ─ 10.244.0.1 ┐
//	                                   node (forwarding; 192.0.2.1, its primary IP, and the
//	srv1   10.244.1.2/24 ─ 10.244.1.1 ┤      default route on an uplink; the service proxy)
//	srv2   10.244.2.2/24 ─ 10.244.2.1 ┘
type testNet struct {
	node, client string
	servers      []string
}

func newTestNet(t *testing.T) *testNet {
	n := &testNet{node: addNetns(t, "node"), client: addNetns(t, "client")}
	run(t, "ip", "netns", "exec", n.node, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	// The uplink: a veth pair inside the node (no dummy module on every kernel).
	run(t, "ip", "-n", n.node, "link", "add", "uplink", "type", "veth", "peer", "name", "uplink-peer")
	run(t, "ip", "-n", n.node, "addr", "add", "192.0.2.1/32", "dev", "uplink")
	run(t, "ip", "-n", n.node, "link", "set", "uplink", "up")
	run(t, "ip", "-n", n.node, "link", "set", "uplink-peer", "up")
	run(t, "ip", "-n", n.node, "route", "add", "default", "dev", "uplink")
	pods := []string{n.client}
	for i := 1; i <= 2; i++ {
		s := addNetns(t, fmt.Sprintf("srv%d", i))
		n.servers = append(n.servers, s)
		pods = append(pods, s)
	}
	for i, pod := range pods {
		gw, ip := fmt.Sprintf("10.244.%d.1", i), fmt.Sprintf("10.244.%d.2", i)
		host := fmt.Sprintf("veth%d", i)
		run(t, "ip", "-n", n.node, "link", "add", host, "type", "veth", "peer", "name", "eth0", "netns", pod)
		run(t, "ip", "-n", n.node, "addr", "add", gw+"/24", "dev", host)
		run(t, "ip", "-n", n.node, "link", "set", host, "up")
		run(t, "ip", "-n", pod, "addr", "add", ip+"/24", "dev", "eth0")
		run(t, "ip", "-n", pod, "link", "set", "eth0", "up")
		run(t, "ip", "-n", pod, "route", "add", "default", "via", gw)
	}
	return n
}

// serve runs an HTTP server on :8080 in each server namespace that answers with its name
// and the client address it saw.
func (n *testNet) serve(t *testing.T) {
	for i, ns := range n.servers {
		var l net.Listener
		var err error
		enterNetns(t, ns).do(func() { l, err = net.Listen("tcp", ":8080") })
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "srv%d %s", i+1, r.RemoteAddr)
		})}
		go func() { _ = srv.Serve(l) }()
		t.Cleanup(func() { _ = srv.Close() })
	}
}

// get makes one HTTP request to addr from inside ns, and returns the body.
func get(th *nsThread, addr string) (body string, elapsed time.Duration, err error) {
	return getWithin(th, addr, 3*time.Second)
}

func getWithin(th *nsThread, addr string, timeout time.Duration) (body string, elapsed time.Duration, err error) {
	start := time.Now()
	th.do(func() {
		var conn net.Conn
		conn, err = net.DialTimeout("tcp", addr, timeout)
		if err != nil {
			return
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		if _, err = io.WriteString(conn, "GET / HTTP/1.0\r\nHost: svc\r\n\r\n"); err != nil {
			return
		}
		var resp *http.Response
		if resp, err = http.ReadResponse(bufio.NewReader(conn), nil); err != nil {
			return
		}
		defer resp.Body.Close()
		var b []byte
		b, err = io.ReadAll(resp.Body)
		body = string(b)
	})
	return body, time.Since(start), err
}

// TestServiceTrafficInNetworkNamespaces runs the proxy (New, Run, Cleanup, in a process of
// its own) in a node's network namespace with real nftables, and sends a client pod's and
// the node's own traffic through it to two HTTP servers.
func TestServiceTrafficInNetworkNamespaces(t *testing.T) {
	requireRealNetworking(t)
	n := newTestNet(t)
	n.serve(t)

	in := helperInput{
		Config: Config{NodeName: "node", NodeIPs: []net.IP{net.ParseIP("192.0.2.1")}, ClusterCIDRs: []string{"10.244.0.0/16"},
			MinSyncPeriod: 100 * time.Millisecond},
		Services: []v1.Service{
			*makeService("default", "web", "10.96.0.10").port("http", tcp, 80).nodePort(30080).obj(),
			*makeService("default", "empty", "10.96.0.11").port("http", tcp, 80).nodePort(30081).obj(),
			*makeService("default", "self", "10.96.0.12").port("http", tcp, 80).obj(),
			*makeService("default", "sticky", "10.96.0.13").port("http", tcp, 80).affinity(60).obj(),
		},
		Slices: []discovery.EndpointSlice{
			*makeSlice("default", "web", "web-1").port("http", tcp, 8080).ep("10.244.1.2", "other").ep("10.244.2.2", "other").obj(),
			*makeSlice("default", "self", "self-1").port("http", tcp, 8080).ep("10.244.1.2", "node").obj(),
			*makeSlice("default", "sticky", "sticky-1").port("http", tcp, 8080).ep("10.244.1.2", "other").ep("10.244.2.2", "other").obj(),
		},
	}
	objs, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("ip", "netns", "exec", n.node, self, "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=proxy", helperObjectsEnv+"="+string(objs))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitOnce sync.Once
	var waitErr error
	wait := func() error { waitOnce.Do(func() { waitErr = cmd.Wait() }); return waitErr }
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = wait()
		if t.Failed() {
			t.Logf("the proxy's log:\n%s", stderr.String())
		}
	})
	synced := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "synced" {
			err = fmt.Errorf("the proxy said %q", line)
		}
		synced <- err
	}()
	select {
	case err := <-synced:
		if err != nil {
			t.Fatalf("the proxy did not sync: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the proxy did not sync in 30s")
	}
	if out := run(t, "ip", "netns", "exec", n.node, "nft", "list", "table", "ip", TableName); !strings.Contains(out, "10.96.0.10 . tcp . 80") {
		t.Fatalf("the table has no ClusterIP element:\n%s", out)
	}

	client := enterNetns(t, n.client)
	node := enterNetns(t, n.node)
	t.Run("ClusterIP from a pod: both endpoints, the pod's own address kept", func(t *testing.T) {
		seen := map[string]int{}
		for range 40 {
			body, _, err := get(client, "10.96.0.10:80")
			if err != nil {
				t.Fatalf("GET 10.96.0.10:80 from the client: %v", err)
			}
			name, remote, _ := strings.Cut(body, " ")
			seen[name]++
			if !strings.HasPrefix(remote, "10.244.0.2:") {
				t.Errorf("%s saw the client as %s, want 10.244.0.2 (no masquerade inside the cluster)", name, remote)
			}
		}
		if seen["srv1"] == 0 || seen["srv2"] == 0 {
			t.Errorf("40 requests went %v: not spread over both endpoints", seen)
		}
		t.Logf("40 requests to the ClusterIP: %v", seen)
	})
	t.Run("NodePort from a pod: masqueraded (externalTrafficPolicy Cluster)", func(t *testing.T) {
		seen := map[string]int{}
		for range 20 {
			body, _, err := get(client, "192.0.2.1:30080")
			if err != nil {
				t.Fatalf("GET 192.0.2.1:30080 from the client: %v", err)
			}
			name, remote, _ := strings.Cut(body, " ")
			seen[name]++
			if want := "10.244." + strings.TrimPrefix(name, "srv") + ".1:"; !strings.HasPrefix(remote, want) {
				t.Errorf("%s saw the client as %s, want the node's address %s…", name, remote, want)
			}
		}
		if seen["srv1"] == 0 || seen["srv2"] == 0 {
			t.Errorf("20 requests went %v", seen)
		}
	})
	t.Run("NodePort and ClusterIP from the node itself (the output hook)", func(t *testing.T) {
		for _, addr := range []string{"192.0.2.1:30080", "10.96.0.10:80"} {
			if body, _, err := get(node, addr); err != nil || !strings.HasPrefix(body, "srv") {
				t.Errorf("GET %s from the node: %q, %v", addr, body, err)
			}
		}
	})
	t.Run("hairpin: a pod reaching itself through its Service is masqueraded", func(t *testing.T) {
		body, _, err := get(enterNetns(t, n.servers[0]), "10.96.0.12:80")
		if err != nil || !strings.HasPrefix(body, "srv1 10.244.1.1:") {
			t.Errorf("GET 10.96.0.12:80 from srv1 itself: %q, %v; want srv1 seeing the node's address", body, err)
		}
	})
	t.Run("session affinity: one client, one endpoint", func(t *testing.T) {
		seen := map[string]int{}
		for range 20 {
			body, _, err := get(client, "10.96.0.13:80")
			if err != nil {
				t.Fatal(err)
			}
			name, _, _ := strings.Cut(body, " ")
			seen[name]++
		}
		if len(seen) != 1 {
			t.Errorf("20 requests with ClientIP affinity went %v", seen)
		}
	})
	t.Run("no endpoints: refused at once", func(t *testing.T) {
		for _, c := range []struct {
			from *nsThread
			addr string
		}{{client, "10.96.0.11:80"}, {client, "192.0.2.1:30081"}, {node, "10.96.0.11:80"}, {client, "10.96.0.10:81"}} {
			_, elapsed, err := get(c.from, c.addr)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("GET %s: %v, want connection refused", c.addr, err)
			}
			if elapsed > time.Second {
				t.Errorf("GET %s took %v to fail, want at once", c.addr, elapsed)
			}
		}
	})

	// SIGTERM: Run returns and the helper runs Cleanup.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("the proxy exited with %v", err)
	}
	if out := run(t, "ip", "netns", "exec", n.node, "nft", "list", "tables"); strings.Contains(out, TableName) {
		t.Errorf("tables after Cleanup:\n%s", out)
	}
	if _, _, err := getWithin(client, "10.96.0.10:80", 300*time.Millisecond); err == nil {
		t.Error("the ClusterIP still answers after Cleanup")
	}
}

// TestScenariosOnRealNFT writes every scenario of TestRules into a real table, one after
// the other by partial syncs (each scenario's objects replacing the last's), with a full
// sync between: the kernel takes every rule, element and removal the plans make.
func TestScenariosOnRealNFT(t *testing.T) {
	requireRealNetworking(t)
	th := enterNetns(t, addNetns(t, "rules"))
	f := newFixture(t, defaultTestConfig())
	var nft knftables.Interface
	var err error
	th.do(func() { nft, err = knftables.New(knftables.IPv4Family, TableName) })
	if err != nil {
		t.Fatal(err)
	}
	f.fp.nft = nft
	sync := func(full bool) {
		t.Helper()
		var err error
		th.do(func() { _, err = f.fp.sync(f.ctx, f.tracker.checkout(full), full, f.planner()) })
		if err != nil {
			t.Fatal(err)
		}
	}
	sync(true)
	var prev []any
	for _, sc := range ruleScenarios() {
		t.Log(sc.name)
		f.zone = sc.zone
		f.delete(prev...)
		f.set(sc.objs...)
		sync(false)
		f.now = f.now.Add(2 * staleChainDelay)
		sync(true)
		prev = sc.objs
	}
	f.delete(prev...)
	sync(false)
	f.now = f.now.Add(2 * staleChainDelay)
	sync(false)
	var out []byte
	th.do(func() { out, err = exec.Command("nft", "list", "table", "ip", TableName).CombinedOutput() })
	if err != nil {
		t.Fatal(err, string(out))
	}
	if regexp.MustCompile(`(chain|set) [^ ]*/`).Match(out) {
		t.Errorf("Service chains left when every Service is gone:\n%s", out)
	}
	th.do(func() { err = cleanupTable(context.Background(), nft) })
	if err != nil {
		t.Fatal(err)
	}
}
