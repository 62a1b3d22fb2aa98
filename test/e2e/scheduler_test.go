package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSchedulerFailover: two `berth scheduler` processes share the kube-scheduler Lease; only
// the holder binds; kill -9 it and the other takes over once the Lease expires.
func TestSchedulerFailover(t *testing.T) {
	c := startCluster(t, "apiserver", t.TempDir())
	ns := "failover"
	c.must(t, "create", "namespace", ns)
	// No controllers run beside `berth apiserver`: the service account pods need is made here.
	c.must(t, "create", "serviceaccount", "default", "-n", ns)
	c.mustIn(t, "apiVersion: v1\nkind: Node\nmetadata:\n  name: failover-node\nstatus:\n  capacity: {cpu: \"8\", memory: 8Gi, pods: \"110\"}\n", "apply", "-f", "-")

	schedulers := map[string]*process{}
	for _, id := range []string{"sched-a", "sched-b"} {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		p, err := startProcess("berth scheduler "+id, berthBin, "scheduler", "--kubeconfig", c.kubeconfig(),
			"--identity", id, "--health-address", "127.0.0.1:"+strconv.Itoa(port), "-v=2")
		if err != nil {
			t.Fatal(err)
		}
		schedulers[id] = p
		t.Cleanup(func() {
			p.kill()
			if t.Failed() {
				t.Logf("%s's output:\n%s", id, tail(p.output.String(), 40))
			}
		})
	}

	holder := func() string {
		r := c.kubectl(t, "get", "lease", "kube-scheduler", "-n", "kube-system", "-o", "jsonpath={.spec.holderIdentity}")
		return strings.TrimSpace(r.stdout)
	}
	waitFor := func(what string, timeout time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out after %s waiting for %s", timeout, what)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	nodeOf := func(pod string) string {
		return strings.TrimSpace(c.kubectl(t, "get", "pod", pod, "-n", ns, "-o", "jsonpath={.spec.nodeName}").stdout)
	}
	podYAML := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  containers:\n  - name: c\n    image: busybox\n", name, ns)
	}

	var leader string
	waitFor("a leader", 30*time.Second, func() bool { leader = holder(); return leader != "" })
	c.mustIn(t, podYAML("first"), "apply", "-f", "-")
	waitFor("the first pod bound", 15*time.Second, func() bool { return nodeOf("first") == "failover-node" })
	other := "sched-a"
	if leader == "sched-a" {
		other = "sched-b"
	}
	// Only the leader schedules: at -v=2 a scheduler logs every binding.
	if !strings.Contains(schedulers[leader].output.String(), "Successfully bound") {
		t.Errorf("the leader %s did not log the binding", leader)
	}
	if strings.Contains(schedulers[other].output.String(), "Successfully bound") {
		t.Errorf("%s bound a pod while %s led", other, leader)
	}

	schedulers[leader].kill() // SIGKILL: no chance to release the Lease
	killed := time.Now()
	c.mustIn(t, podYAML("second"), "apply", "-f", "-")
	waitFor("the second pod bound by the other scheduler", 60*time.Second, func() bool { return nodeOf("second") == "failover-node" })
	if h := holder(); h != other {
		t.Errorf("lease holder %q after the leader died, want %s", h, other)
	}
	t.Logf("%s took over %s after %s was killed", other, time.Since(killed).Round(time.Second), leader)
}
