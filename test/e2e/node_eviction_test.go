package e2e

import (
	"fmt"
	"testing"
)

// TestNodeEmptyDirSizeLimit: a pod that writes past its emptyDir's sizeLimit is evicted:
// Failed, reason Evicted, the kubelet's message, an Evicted event.
func TestNodeEmptyDirSizeLimit(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: filler}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "dd if=/dev/zero of=/scratch/big bs=1M count=8; sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
  volumes:
  - name: scratch
    emptyDir: {sizeLimit: 4Mi}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "filler", "Failed")
	want := `Evicted: Usage of EmptyDir volume "scratch" exceeds the limit "4Mi". `
	if got := c.jsonpath(t, ns, "pod/filler", "{.status.reason}: {.status.message}"); got != want {
		t.Errorf("status reason and message %q, want %q", got, want)
	}
	if got := c.jsonpath(t, ns, "pod/filler", `{.status.conditions[?(@.type=="DisruptionTarget")].reason}`); got != "TerminationByKubelet" {
		t.Errorf("DisruptionTarget condition reason %q, want TerminationByKubelet", got)
	}
	c.waitEvent(t, ns, "filler", "Evicted", `Usage of EmptyDir volume "scratch" exceeds the limit "4Mi".`)
}
