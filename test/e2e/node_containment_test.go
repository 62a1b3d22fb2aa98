package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Faults that must not take a node down: a pod spec that once crashed berth up, and a
// containerd killed under running pods.

// TestNodeSurvivesShmPodAndContainerdKill runs, on a `berth up` of its own, the pod charts use
// for /dev/shm (a memory emptyDir without sizeLimit, which once made the node agent
// dereference nil and end the process), kills berth's containerd with -9 under it, and
// restarts berth up with the pod in etcd.
func TestNodeSurvivesShmPodAndContainerdKill(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Fatal("the node tests run containerd and need root (CI runs them as root)")
	}
	image := busyboxImage(t)
	dir := filepath.Join(workDir, "containment")
	n, err := newNode("e2e-containment", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.cleanup(); err != nil {
			t.Errorf("cleaning up the node: %v", err)
		}
	})
	c := startCluster(t, "up", dir, n.upArgs()...)
	if err := waitNodeReady(c, n.name); err != nil {
		t.Fatal(err)
	}
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: shm}
spec:
  terminationGracePeriodSeconds: 1
  volumes: [{name: m, emptyDir: {medium: Memory}}]
  containers: [{name: c, image: %[1]s, command: [sleep, "3600"], volumeMounts: [{name: m, mountPath: /dev/shm}]}]
---
apiVersion: v1
kind: Pod
metadata: {name: plain}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: %[1]s, command: [sleep, "3600"]}]
`, image), "apply", "-n", ns, "-f", "-")
	const view = `{range .items[*]}{.metadata.name}={.status.phase}/{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].containerID};{end}`
	bothRunning := func(v string) bool {
		return strings.Count(v, "=Running/0/containerd://") == 2
	}
	before := c.waitFor(t, ns, "pods", view, "both to run", bothRunning)
	mounts := c.must(t, "exec", "-n", ns, "shm", "--", "grep", " /dev/shm ", "/proc/mounts")
	if !strings.Contains(mounts, "tmpfs /dev/shm tmpfs") {
		t.Errorf("/dev/shm in the pod is not a tmpfs: %q", mounts)
	}

	// kill -9 of berth's containerd: it is back, the node Ready, within 15 s; the pods keep
	// their containers.
	pid := containerdPid(t, n)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	for {
		if p := containerdPidOrZero(n); p != 0 && p != pid && n.runtimeAnswers() {
			break
		}
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("no containerd answers on %s 15 s after kill -9", n.runtimeEndpoint())
		}
		time.Sleep(100 * time.Millisecond)
	}
	back := time.Since(killed)
	for c.jsonpath(t, "", "node/"+n.name, `{.status.conditions[?(@.type=="Ready")].status}`) != "True" {
		if time.Since(killed) > 15*time.Second {
			t.Fatalf("node not Ready 15 s after containerd's kill: %s", c.must(t, "get", "node", n.name, "-o", "yaml"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("containerd answered %s after kill -9, the node was Ready after %s", back.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	// For several syncs, the same containers, never restarted.
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if got := c.jsonpath(t, ns, "pods", view); got != before {
			t.Fatalf("after containerd's restart the pods show\n%s\nwant, as before,\n%s", got, before)
		}
	}
	c.mustIn(t, fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: after}
spec:
  terminationGracePeriodSeconds: 1
  containers: [{name: c, image: %s, command: [sleep, "3600"]}]
`, image), "apply", "-n", ns, "-f", "-")
	c.waitFor(t, ns, "pod/after", "{.status.phase}", "to run on the restarted containerd", func(v string) bool { return v == "Running" })

	// A restart of berth up with the shm pod in etcd is uneventful.
	if err := c.stop(); err != nil {
		t.Fatalf("stopping berth up: %v", err)
	}
	c.startOrFail(t)
	if err := waitNodeReady(c, n.name); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if c.proc.exited() {
			t.Fatalf("berth up exited after its restart: %v", c.proc.err)
		}
	}
	if got := c.jsonpath(t, ns, "pod/shm", "{.status.phase}/{.status.containerStatuses[0].restartCount}"); got != "Running/0" {
		t.Errorf("after berth up's restart the shm pod is %q, want Running/0", got)
	}
	if out := c.proc.output.String(); strings.Contains(out, "panic:") || strings.Contains(out, "Recovered from a panic") {
		t.Errorf("berth up logged a panic:\n%s", tail(out, 100))
	}
	c.must(t, "delete", "namespace", ns, "--timeout=90s")
}

// containerdPidOrZero finds the containerd running with the node's config.
func containerdPidOrZero(n *node) int {
	config := filepath.Join(n.containerdDir(), "config.toml")
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) >= 3 && filepath.Base(args[0]) == "containerd" && args[1] == "--config" && args[2] == config {
			return pid
		}
	}
	return 0
}

func containerdPid(t *testing.T, n *node) int {
	t.Helper()
	pid := containerdPidOrZero(n)
	if pid == 0 {
		t.Fatalf("no containerd runs with %s", filepath.Join(n.containerdDir(), "config.toml"))
	}
	return pid
}

// runtimeAnswers reports whether the node's containerd answers through the CRI.
func (n *node) runtimeAnswers() bool {
	rs, err := n.connect()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	defer rs.Close(ctx)
	_, err = rs.Version(ctx, "v1")
	return err == nil
}
