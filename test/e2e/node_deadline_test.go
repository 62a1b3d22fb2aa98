package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestNodeActiveDeadline: a pod past its activeDeadlineSeconds fails with DeadlineExceeded and
// its containers are stopped. The deadline is lowered once the pod runs (the field may be
// set lower on a live pod): a deadline short from the start could pass before a loaded
// machine started the container, and the pod would fail without ever running.
func TestNodeActiveDeadline(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 3600
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "deadline", "Running")
	c.must(t, "patch", "pod", "deadline", "-n", ns, "-p", `{"spec":{"activeDeadlineSeconds":2}}`)
	c.waitPhase(t, ns, "deadline", "Failed")
	if got := c.jsonpath(t, ns, "pod/deadline", "{.status.reason}: {.status.message}"); got != "DeadlineExceeded: Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason and message %q, want DeadlineExceeded and the kubelet's message", got)
	}
	// kubectl shows the container's reason (Error: it was killed), as for upstream's pods.
	c.waitEvent(t, ns, "deadline", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
	rs := n.runtime(t)
	eventually(t, podTimeout, "the pod's container to stop", func() bool {
		if len(runningContainers(t, rs, ns)) == 0 {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if got := c.jsonpath(t, ns, "pod/deadline", "{.status.containerStatuses[0].state.terminated.exitCode}"); got == "" {
		t.Errorf("the container has no terminated state after the deadline")
	}
}
