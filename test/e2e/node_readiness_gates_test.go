package e2e

import (
	"fmt"
	"testing"
	"time"
)

// TestNodeReadinessGates is upstream's "Pods should support pod readiness gates" with kubectl:
// the pod is Ready only while every gate's condition, which kubectl patches into its status, is
// True, and the node agent's status writes keep those conditions.
func TestNodeReadinessGates(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  terminationGracePeriodSeconds: 1
  readinessGates:
  - conditionType: k8s.io/test-condition1
  - conditionType: k8s.io/test-condition2
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "echo container is alive; sleep 10000"]
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "gated", "Running")

	const ready = `{.status.conditions[?(@.type=="Ready")].status}/{.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}`
	patch := func(gate, status string) {
		t.Helper()
		c.must(t, "patch", "pod", "gated", "-n", ns, "--subresource=status", "--type=strategic",
			"-p", fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status))
	}
	// Ready must follow each patch in seconds: the pod's resync is a minute away.
	waitReady := func(what, want string) {
		t.Helper()
		var got string
		eventually(t, 15*time.Second, "pod gated "+what, func() bool {
			if got = c.jsonpath(t, ns, "pod/gated", ready); got == want {
				return true
			}
			time.Sleep(200 * time.Millisecond)
			return false
		})
	}

	waitReady("not Ready without its gates", `False/ReadinessGatesNotReady: corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`)
	patch("k8s.io/test-condition1", "True")
	waitReady("waiting on its second gate", `False/ReadinessGatesNotReady: corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`)
	patch("k8s.io/test-condition2", "True")
	waitReady("Ready with both gates True", "True/: ")
	if got := c.jsonpath(t, ns, "pod/gated", `{.status.conditions[?(@.type=="k8s.io/test-condition1")].status} {.status.conditions[?(@.type=="k8s.io/test-condition2")].status}`); got != "True True" {
		t.Errorf("the gates' conditions are %q after the node agent wrote Ready, want True True", got)
	}
	patch("k8s.io/test-condition1", "False")
	waitReady("not Ready once a gate is False", `False/ReadinessGatesNotReady: the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False`)
}
