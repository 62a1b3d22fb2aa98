package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/util/mount"
)

// runBerth runs a berth command to completion and returns its exit code and output.
func runBerth(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := execCommand(berthBin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	code, err := runCmd(ctx, cmd)
	if err != nil {
		t.Fatalf("berth %s: %v; its output:\n%s", strings.Join(args, " "), err, out.String())
	}
	return code, out.String()
}

// TestDownStops: `berth down` of a running `berth up` stops it as Ctrl-C would, a second
// `berth up` on a data dir in use is refused, and `berth down` with nothing running says so.
func TestDownStops(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(workDir, "down-stops")
	c := startCluster(t, "up", dir)
	pidFile := filepath.Join(dir, "berth.pid")
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("berth up wrote no pid file: %v", err)
	}
	if f := strings.Fields(string(data)); len(f) != 2 || f[0] != strconv.Itoa(c.proc.cmd.Process.Pid) {
		t.Errorf("pid file says %q, berth up is pid %d", data, c.proc.cmd.Process.Pid)
	}

	second, err := newCluster("up", dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.start(); err == nil || !strings.Contains(second.proc.output.String(), "already runs with the pid file "+pidFile) {
		t.Errorf("a second berth up on the data dir: %v", err)
	}
	if second.proc != nil {
		second.proc.kill()
	}

	code, out := runBerth(t, time.Minute, "down", "--data-dir", dir)
	if want := fmt.Sprintf("Stopped berth (pid %d) on data dir %s.\n", c.proc.cmd.Process.Pid, dir); code != 0 || out != want {
		t.Errorf("berth down: exit %d, said %q; want 0, %q", code, out, want)
	}
	// berth down saw the process end; the harness reaps it a moment later.
	select {
	case <-c.proc.done:
	case <-time.After(5 * time.Second):
		t.Fatal("berth up still runs after berth down returned")
	}
	if c.proc.err != nil {
		t.Errorf("berth up did not exit cleanly on berth down: %v", c.proc.err)
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("berth up left its pid file: %v", err)
	}

	code, out = runBerth(t, time.Minute, "down", "--data-dir", dir)
	if want := "Nothing was running on data dir " + dir + ".\n"; code != 0 || out != want {
		t.Errorf("berth down with nothing running: exit %d, said %q; want 0, %q", code, out, want)
	}
}

// TestDownStopsNode: `berth down` stops the `berth node` of the data dir as well as its
// `berth up`, each cleanly.
func TestDownStopsNode(t *testing.T) {
	t.Parallel()
	c, a := ownNode(t, "down-node", "")
	code, out := runBerth(t, time.Minute, "down", "--data-dir", c.dataDir)
	want := fmt.Sprintf("Stopped berth (pid %d) on data dir %s.\nStopped berth (pid %d) on data dir %s.\n",
		a.proc.cmd.Process.Pid, c.dataDir, c.proc.cmd.Process.Pid, c.dataDir)
	if code != 0 || out != want {
		t.Errorf("berth down: exit %d, said %q; want 0, %q", code, out, want)
	}
	for _, p := range []*process{a.proc, c.proc} {
		// berth down saw the process end; the harness reaps it a moment later.
		select {
		case <-p.done:
			if p.err != nil {
				t.Errorf("%s did not exit cleanly on berth down: %v", p.name, p.err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s still runs after berth down returned", p.name)
		}
	}
}

// TestDownCleanup: pods keep running after Ctrl-C of `berth up` (as the kubelet's do), and
// `berth down --cleanup` then leaves the machine as it was: no shim of that containerd, no
// mount under the data dir, no bridge, no iptables rule of the network.
func TestDownCleanup(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the node tests run containerd and need root (CI runs them as root)")
	}
	dir := filepath.Join(workDir, "down-cleanup")
	n, err := newNode("e2e-down", dir)
	if err != nil {
		t.Fatal(err)
	}
	// The safety net if the test fails half-way; a no-op after a good berth down --cleanup.
	t.Cleanup(func() {
		if err := n.cleanup(); err != nil {
			t.Errorf("cleaning up the node: %v", err)
		}
	})
	if before := networkRules(t, n); before != "" {
		t.Fatalf("iptables has rules of the test's network before it started:\n%s", before)
	}
	c := startCluster(t, "up", dir, n.upArgs()...)
	if err := waitNodeReady(c, n.name); err != nil {
		t.Fatal(err)
	}
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	hostPort, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	// A memory emptyDir (a tmpfs under the data dir) and a hostPort (portmap's DNAT chain).
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: web, namespace: %s}
spec:
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    ports: [{containerPort: 80, hostPort: %d}]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - {name: scratch, emptyDir: {medium: Memory}}
`, ns, image, hostPort), "apply", "-f", "-")
	c.must(t, "run", "sleeper", "-n", ns, "--image="+image, "--", "sleep", "3600")
	c.waitPhase(t, ns, "web", "Running")
	c.waitPhase(t, ns, "sleeper", "Running")

	// What there is to clean, so that the checks below can fail.
	if points, _ := mount.PointsUnder(dir); len(points) == 0 {
		t.Error("no mount under the data dir while pods run")
	}
	if shims := containerdProcesses(n); len(shims) == 0 {
		t.Error("no process of the node's containerd while pods run")
	}
	podLogs := filepath.Join(dir, "pod-logs")
	if logs, _ := os.ReadDir(podLogs); len(logs) != 2 {
		t.Errorf("%d pod log directories in %s while 2 pods run", len(logs), podLogs)
	}
	if rules := networkRules(t, n); !strings.Contains(rules, "MASQUERADE") || !strings.Contains(rules, "DNAT") {
		t.Errorf("iptables has no masquerade and hostPort rules of the network while pods run:\n%s", rules)
	}

	// Ctrl-C.
	if err := c.proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.proc.done:
	case <-time.After(stopTimeout):
		t.Fatalf("berth up did not exit within %s of SIGINT", stopTimeout)
	}
	if c.proc.err != nil {
		t.Errorf("berth up did not exit cleanly on SIGINT: %v", c.proc.err)
	}
	if shims := containerdProcesses(n); len(shims) == 0 {
		t.Error("the pods' shims ended with berth up; they should outlive it")
	}

	start := time.Now()
	code, out := runBerth(t, 5*time.Minute, "down", "--cleanup", "--data-dir", dir)
	t.Logf("berth down --cleanup took %s:\n%s", time.Since(start).Round(time.Millisecond), out)
	if code != 0 {
		t.Fatalf("berth down --cleanup: exit %d", code)
	}
	for _, want := range []string{"Nothing was running on data dir " + dir, "Removed 2 pod sandboxes", "deleted bridge " + n.bridge} {
		if !strings.Contains(out, want) {
			t.Errorf("berth down --cleanup did not say %q", want)
		}
	}
	if procs := containerdProcesses(n); len(procs) > 0 {
		t.Errorf("processes of the node's containerd are left: %s", strings.Join(procs, "; "))
	}
	if points, err := mount.PointsUnder(dir); err != nil || len(points) > 0 {
		t.Errorf("mounts under the data dir are left (%v): %s", err, strings.Join(points, " "))
	}
	if out, err := exec.Command("ip", "link", "show", n.bridge).CombinedOutput(); err == nil {
		t.Errorf("bridge %s is left:\n%s", n.bridge, out)
	}
	if rules := networkRules(t, n); rules != "" {
		t.Errorf("iptables rules of the network are left:\n%s", rules)
	}
	if left := cniResults(t, n); len(left) > 0 {
		t.Errorf("CNI result cache entries of the bridge are left: %s", strings.Join(left, " "))
	}
	if logs, _ := os.ReadDir(podLogs); len(logs) > 0 {
		t.Errorf("pod log directories are left in %s: %v", podLogs, logs)
	}
	if entries, _ := os.ReadDir(filepath.Join(n.containerdDir(), "cni", "networks")); len(entries) > 0 {
		t.Errorf("host-local IPAM files are left in %s", filepath.Join(n.containerdDir(), "cni", "networks"))
	}

	// Again: nothing to do, and no error.
	if code, out := runBerth(t, 5*time.Minute, "down", "--cleanup", "--data-dir", dir); code != 0 {
		t.Errorf("a second berth down --cleanup: exit %d:\n%s", code, out)
	}
}

// containerdProcesses are the command lines of the node's containerd and of its shims.
func containerdProcesses(n *node) []string {
	config := filepath.Join(n.containerdDir(), "config.toml")
	sock := filepath.Join(n.containerdDir(), "containerd.sock")
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		cmdline := strings.Join(strings.Split(strings.TrimRight(string(data), "\x00"), "\x00"), " ")
		if strings.Contains(cmdline, "--config "+config) || strings.Contains(cmdline, "-address "+sock) {
			found = append(found, e.Name()+": "+cmdline)
		}
	}
	return found
}

// networkRules are the lines of iptables-save (every table) that belong to the node's
// network: they name its bridge or an address of its pod CIDR, or they declare, fill or
// jump to a per-pod chain of portmap (CNI-DN-…) that does. Other nodes of other tests change
// iptables meanwhile, so a whole before/after comparison would not do; the shared
// CNI-HOSTPORT-* chains that portmap makes once stay for them.
func networkRules(t *testing.T, n *node) string {
	t.Helper()
	out, err := exec.Command("iptables-save").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	ours := func(line string) bool { return strings.Contains(line, n.bridge) || mentionsCIDR(line, n.podCIDR) }
	perPod := func(chain string) bool {
		return strings.HasPrefix(chain, "CNI-") && !strings.HasPrefix(chain, "CNI-HOSTPORT-")
	}
	lines := strings.Split(string(out), "\n")
	chains := map[string]bool{}
	rule := regexp.MustCompile(`^-A (\S+)(?: .*-j (\S+))?`)
	for _, l := range lines {
		if m := rule.FindStringSubmatch(l); m != nil && ours(l) {
			for _, chain := range m[1:] {
				if perPod(chain) {
					chains[chain] = true
				}
			}
		}
	}
	var found []string
	for _, l := range lines {
		m := rule.FindStringSubmatch(l)
		declared, _, _ := strings.Cut(strings.TrimPrefix(l, ":"), " ")
		if ours(l) || (strings.HasPrefix(l, ":") && chains[declared]) || (m != nil && (chains[m[1]] || chains[m[2]])) {
			found = append(found, l)
		}
	}
	return strings.Join(found, "\n")
}

// mentionsCIDR reports whether s holds an IPv4 address in cidr.
func mentionsCIDR(s, cidr string) bool {
	_, ipnet, _ := net.ParseCIDR(cidr)
	for _, a := range ipv4.FindAllString(s, -1) {
		if ip := net.ParseIP(a); ip != nil && ipnet.Contains(ip) {
			return true
		}
	}
	return false
}

var ipv4 = regexp.MustCompile(`\b\d+\.\d+\.\d+\.\d+\b`)

// cniResults are the CNI result cache files with an address of the node's pod CIDR.
func cniResults(t *testing.T, n *node) []string {
	t.Helper()
	entries, _ := os.ReadDir("/var/lib/cni/results")
	var found []string
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/var/lib/cni/results", e.Name()))
		if err == nil && mentionsCIDR(string(data), n.podCIDR) {
			found = append(found, e.Name())
		}
	}
	return found
}

// TestDownStaleBridge: a `berth up` stopped with Ctrl-C leaves its bridge with the route to
// its pod CIDR; a later node on the same pod CIDR with another bridge takes that bridge
// over, so that the host reaches its pods through its own bridge.
func TestDownStaleBridge(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the node tests run containerd and need root (CI runs them as root)")
	}
	image := busyboxImage(t)
	start := func(name string, podCIDR string) (*cluster, *node) {
		t.Helper()
		dir := filepath.Join(workDir, name)
		n, err := newNode("e2e-"+name, dir)
		if err != nil {
			t.Fatal(err)
		}
		if podCIDR != "" {
			n.podCIDR = podCIDR
		}
		t.Cleanup(func() {
			if err := n.cleanup(); err != nil {
				t.Errorf("cleaning up node %s: %v", n.name, err)
			}
		})
		c := startCluster(t, "up", dir, n.upArgs()...)
		if err := waitNodeReady(c, n.name); err != nil {
			t.Fatal(err)
		}
		ns := c.newNamespace(t)
		c.must(t, "run", "p", "-n", ns, "--image="+image, "--", "sleep", "3600")
		c.waitPhase(t, ns, "p", "Running")
		return c, n
	}
	devOf := func(ip string) string {
		t.Helper()
		out, err := exec.Command("ip", "-json", "route", "get", ip).Output()
		if err != nil {
			t.Fatalf("ip route get %s: %v", ip, err)
		}
		dev := regexp.MustCompile(`"dev":"([^"]+)"`).FindStringSubmatch(string(out))
		if dev == nil {
			t.Fatalf("ip route get %s: no device in %s", ip, out)
		}
		return dev[1]
	}

	cA, nA := start("stale-a", "")
	if err := cA.proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-cA.proc.done
	// An address of the CIDR that no interface holds (the gateway .1 is local, routed to lo).
	inCIDR := strings.TrimSuffix(nA.podCIDR, "0/24") + "250"
	if dev := devOf(inCIDR); dev != nA.bridge {
		t.Fatalf("after Ctrl-C the pod CIDR %s is routed to %s, want the stopped node's bridge %s", nA.podCIDR, dev, nA.bridge)
	}

	cB, nB := start("stale-b", nA.podCIDR)
	if !strings.Contains(cB.proc.output.String(), "Deleting a stale berth bridge") {
		t.Error("the second node did not say it took over the stale bridge")
	}
	if _, err := net.InterfaceByName(nA.bridge); err == nil {
		t.Errorf("the stopped node's bridge %s is still there", nA.bridge)
	}
	if dev := devOf(inCIDR); dev != nB.bridge {
		t.Errorf("the pod CIDR %s is routed to %s, want the running node's bridge %s", nB.podCIDR, dev, nB.bridge)
	}
}
