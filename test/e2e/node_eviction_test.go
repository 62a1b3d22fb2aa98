package e2e

import (
	"fmt"
	"strings"
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

// TestNodeMemoryPressure: on a node whose memory.available threshold is above what the
// machine has, the node reports MemoryPressure and evicts its pods with the kubelet's message.
// It runs on a `berth node` of its own, never on the shared one.
func TestNodeMemoryPressure(t *testing.T) {
	t.Parallel()
	c, a := ownNode(t, "memorypressure", "evictionHard: {memory.available: 1000Gi}\n")
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  nodeName: %s
  containers:
  - {name: c, image: %s, command: ["sleep", "3600"]}
`, a.node.name, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "victim", "Failed")
	got := c.jsonpath(t, ns, "pod/victim", "{.status.reason}: {.status.message}")
	if !strings.HasPrefix(got, "Evicted: The node was low on resource: memory. Threshold quantity: 1000Gi, available: ") {
		t.Errorf("status %q, want the kubelet's memory eviction message", got)
	}
	c.waitFor(t, "", "node/"+a.node.name, `{.status.conditions[?(@.type=="MemoryPressure")].status}`, "to report MemoryPressure", func(v string) bool { return v == "True" })
	c.waitEvent(t, "default", a.node.name, "EvictionThresholdMet", "Attempting to reclaim memory")
}
