package containerd_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
	"github.com/berth-cluster/berth/pkg/cri/containerd/containerdtest"
)

// TestStartStop starts containerd by hand: it writes its config, serves the CRI, refuses a
// second start on the same socket, and stops.
func TestStartStop(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := containerd.Config{StateDir: dir, PodCIDR: containerdtest.FreePodCIDR(t), Bridge: containerdtest.FreeBridgeName(t)}
	endpoint := "unix://" + filepath.Join(dir, "containerd.sock")
	if containerd.Available(ctx, endpoint) {
		t.Fatal("a runtime answers before the start")
	}
	p, err := containerd.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop() })
	// Start makes the bridge (before any pod) and leaves it when containerd stops.
	t.Cleanup(func() { exec.Command("ip", "link", "delete", c.Bridge).Run() })
	if _, err := net.InterfaceByName(c.Bridge); err != nil {
		t.Errorf("no bridge %s after the start: %v", c.Bridge, err)
	}
	if rules := natRules(t); !strings.Contains(rules, "-A POSTROUTING -s "+c.PodCIDR+" ! -d "+c.PodCIDR) || !strings.Contains(rules, "-j MASQUERADE") {
		t.Errorf("no masquerade rule for %s:\n%s", c.PodCIDR, rules)
	}
	for _, f := range []string{"config.toml", "cni/net.d/10-berth.conflist", "cni/berth.conflist.template", "containerd.log"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	if p.Endpoint() != endpoint {
		t.Errorf("Endpoint() = %q, want %q", p.Endpoint(), endpoint)
	}
	rs, is, err := cri.Connect(ctx, p.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	v, err := rs.Version(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	if v.RuntimeName != "containerd" || v.RuntimeApiVersion != "v1" {
		t.Errorf("Version = %+v", v)
	}
	st, err := rs.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, cond := range st.Status.Conditions {
		if !cond.Status {
			t.Errorf("runtime condition %s is false: %s %s", cond.Type, cond.Reason, cond.Message)
		}
	}
	rs.Close(ctx)
	is.Close(ctx)
	if !containerd.Available(ctx, endpoint) || !containerd.Available(ctx, p.Socket()) {
		t.Error("Available is false while containerd serves")
	}
	if _, err := containerd.Start(ctx, c); err == nil {
		t.Error("a second containerd started on the same socket")
	}

	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := containerd.RemoveMasquerade(ctx, c.PodCIDR); err != nil {
		t.Fatal(err)
	}
	if rules := natRules(t); strings.Contains(rules, c.PodCIDR) {
		t.Errorf("RemoveMasquerade left a rule for %s:\n%s", c.PodCIDR, rules)
	}
	select {
	case <-p.Done():
	default:
		t.Error("Done is open after Stop")
	}
	if containerd.Available(ctx, endpoint) {
		t.Error("Available is true after Stop")
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	// It starts again on the same state.
	p2, err := containerd.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if err := p2.Stop(); err != nil {
		t.Fatal(err)
	}
}

func TestStartFailsWithContainerdsLog(t *testing.T) {
	dir := t.TempDir()
	// containerd rejects an unknown log level and exits at once.
	bridge := containerdtest.FreeBridgeName(t)
	_, err := containerd.Start(context.Background(), containerd.Config{StateDir: dir, LogLevel: "loud", Bridge: bridge})
	if err == nil {
		t.Fatal("containerd started with a bad log level")
	}
	t.Logf("error: %v", err)
	if _, err := net.InterfaceByName(bridge); err == nil {
		exec.Command("ip", "link", "delete", bridge).Run()
		t.Errorf("the failed start left its bridge %s", bridge)
	}
}

func connect(t *testing.T, endpoint string) internalapi.RuntimeService {
	t.Helper()
	ctx := context.Background()
	rs, is, err := cri.Connect(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	is.Close(ctx)
	t.Cleanup(func() { rs.Close(ctx) })
	return rs
}

// runSandbox runs a pod sandbox with berth's pause image and checks that it is ready with
// an IP from podCIDR; then it stops and removes it.
func runSandbox(t *testing.T, rs internalapi.RuntimeService, podCIDR string) {
	t.Helper()
	ctx := context.Background()
	config := containerdtest.PodSandboxConfig("sandbox", t.TempDir())
	id, err := rs.RunPodSandbox(ctx, config, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	st, err := rs.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox state %v", st.Status.State)
	}
	_, cidr, _ := net.ParseCIDR(podCIDR)
	ip := net.ParseIP(st.Status.GetNetwork().GetIp())
	if ip == nil || !cidr.Contains(ip) {
		t.Errorf("sandbox IP %q is not in %s", st.Status.GetNetwork().GetIp(), podCIDR)
	}
	if err := rs.StopPodSandbox(ctx, id); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if st, err := rs.PodSandboxStatus(ctx, id, false); err != nil || st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("after stop: %v, %v", st, err)
	}
	if err := rs.RemovePodSandbox(ctx, id); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	list, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("%d sandboxes after remove", len(list))
	}
}

func TestRunPodSandbox(t *testing.T) {
	p := containerdtest.Start(t)
	runSandbox(t, connect(t, p.Endpoint()), p.Config().PodCIDR)
}

// TestPodCIDRLater starts containerd before the node has a pod CIDR: the network is not
// ready until the node agent sends one (UpdateRuntimeConfig, as the kubelet's
// updatePodCIDR does), and then pods get addresses from it.
func TestPodCIDRLater(t *testing.T) {
	p := containerdtest.StartWith(t, containerd.Config{})
	rs := connect(t, p.Endpoint())
	ctx := context.Background()
	if ready := networkReady(t, rs); ready {
		t.Fatal("NetworkReady without a pod CIDR")
	}
	podCIDR := containerdtest.FreePodCIDR(t)
	if err := rs.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: podCIDR}}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !networkReady(t, rs) {
		if time.Now().After(deadline) {
			t.Fatal("network not ready 10s after UpdateRuntimeConfig")
		}
		time.Sleep(50 * time.Millisecond)
	}
	runSandbox(t, rs, podCIDR)
}

func networkReady(t *testing.T, rs internalapi.RuntimeService) bool {
	t.Helper()
	st, err := rs.Status(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st.Status.Conditions {
		if c.Type == runtimeapi.NetworkReady {
			return c.Status
		}
	}
	return false
}

// TestRestartKeepsPods stops containerd under a running pod and starts it again: the pod's
// shim and sandbox outlive containerd, and the new containerd finds the sandbox ready.
func TestRestartKeepsPods(t *testing.T) {
	p := containerdtest.Start(t)
	ctx := context.Background()
	rs, _, err := cri.Connect(ctx, p.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	id, err := rs.RunPodSandbox(ctx, containerdtest.PodSandboxConfig("restart", t.TempDir()), "")
	if err != nil {
		t.Fatal(err)
	}
	rs.Close(ctx)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	p2, err := containerd.Start(ctx, p.Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Remove the pod through the new containerd; containerdtest then stops the old,
		// stopped one, which is a no-op.
		if err := containerdtest.RemoveAllPodSandboxes(ctx, p2.Endpoint()); err != nil {
			t.Error(err)
		}
		if err := p2.Stop(); err != nil {
			t.Error(err)
		}
	})
	rs = connect(t, p2.Endpoint())
	st, err := rs.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("after a containerd restart the sandbox is %v", st.Status.State)
	}
}

// natRules is the nat table's POSTROUTING chain as iptables -S prints it.
func natRules(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables", "-w", "-t", "nat", "-S", "POSTROUTING").CombinedOutput()
	if err != nil {
		t.Fatalf("iptables: %v: %s", err, out)
	}
	return string(out)
}

// TestSuperviseRestartsAKilledContainerd: kill -9 of a supervised containerd brings a new one
// on the same socket within seconds; Stop ends it.
func TestSuperviseRestartsAKilledContainerd(t *testing.T) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "berth-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c := containerd.Config{StateDir: dir, PodCIDR: containerdtest.FreePodCIDR(t), Bridge: containerdtest.FreeBridgeName(t)}
	s, err := containerd.Supervise(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("ip", "link", "delete", c.Bridge).Run() })
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			s.Stop()
		}
	})
	first := s.Pid()
	if first == 0 {
		t.Fatal("Supervise started no containerd")
	}
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	deadline := killed.Add(15 * time.Second)
	for s.Restarts() < 1 || !containerd.Available(ctx, s.Endpoint()) {
		if time.Now().After(deadline) {
			t.Fatalf("containerd was not back within 15 s (restarts %d)", s.Restarts())
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("containerd back after %s", time.Since(killed).Round(time.Millisecond))
	if s.Pid() == first {
		t.Errorf("the same pid %d after the restart", first)
	}
	second := s.Pid()
	stopped = true
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(second, 0); err == nil {
		t.Errorf("containerd %d still runs after Stop", second)
	}
	time.Sleep(2 * time.Second)
	if containerd.Available(ctx, s.Endpoint()) {
		t.Error("a containerd was started again after Stop")
	}
}
