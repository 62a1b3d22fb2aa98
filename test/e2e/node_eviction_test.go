package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/cri/pause"
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
	c.mustIn(t, sleeperOn("victim", a.node.name, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "victim", "Failed")
	got := c.jsonpath(t, ns, "pod/victim", "{.status.reason}: {.status.message}")
	if !strings.HasPrefix(got, "Evicted: The node was low on resource: memory. Threshold quantity: 1000Gi, available: ") {
		t.Errorf("status %q, want the kubelet's memory eviction message", got)
	}
	c.waitFor(t, "", "node/"+a.node.name, `{.status.conditions[?(@.type=="MemoryPressure")].status}`, "to report MemoryPressure", func(v string) bool { return v == "True" })
	c.waitEvent(t, "default", a.node.name, "EvictionThresholdMet", "Attempting to reclaim memory")
	c.waitFor(t, "", "node/"+a.node.name, `{.spec.taints[*].key}`, "to be tainted memory-pressure", func(v string) bool {
		return strings.Contains(v, "node.kubernetes.io/memory-pressure")
	})

	// Under memory pressure a new BestEffort pod is refused at admission.
	c.mustIn(t, sleeperOn("late", a.node.name, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "late", "Failed")
	if got, want := c.jsonpath(t, ns, "pod/late", "{.status.reason}: {.status.message}"), "Evicted: Pod was rejected: The node had condition: [MemoryPressure]. "; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
}

// TestNodeContainerEphemeralStorageLimit: a container writing more into its writable layer
// than its ephemeral-storage limit is evicted with the kubelet's message, while its pod is
// under the pod's total limit.
func TestNodeContainerEphemeralStorageLimit(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: writer}
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: big
    image: %[1]s
    command: ["sh", "-c", "dd if=/dev/zero of=/big bs=1M count=20; sleep 3600"]
    resources: {limits: {ephemeral-storage: 10Mi}}
  - name: small
    image: %[1]s
    command: ["sleep", "3600"]
    resources: {limits: {ephemeral-storage: 100Mi}}
`, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "writer", "Failed")
	want := `Evicted: Container big exceeded its local ephemeral storage limit "10Mi". `
	if got := c.jsonpath(t, ns, "pod/writer", "{.status.reason}: {.status.message}"); got != want {
		t.Errorf("status reason and message %q, want %q", got, want)
	}
	c.waitEvent(t, ns, "writer", "Evicted", `Container big exceeded its local ephemeral storage limit "10Mi".`)
}

// TestNodeDiskAndPIDPressure: on a node whose nodefs.available and pid.available thresholds
// are above what the machine has, the node reports DiskPressure and PIDPressure, is tainted
// for both, reclaims unused images, evicts its pod for ephemeral storage, and refuses new
// pods. It runs on a `berth node` of its own.
func TestNodeDiskAndPIDPressure(t *testing.T) {
	t.Parallel()
	image := busyboxImage(t)
	c, a := ownNode(t, "diskpressure", "evictionHard: {nodefs.available: 1000Ti, pid.available: \"10000000\"}\nimageMinimumGCAge: 1s\n")
	ns := c.newNamespace(t)
	c.mustIn(t, sleeperOn("victim", a.node.name, image), "apply", "-n", ns, "-f", "-")
	unused := importUnusedImage(t, a, "diskpressure")

	c.waitPhase(t, ns, "victim", "Failed")
	got := c.jsonpath(t, ns, "pod/victim", "{.status.reason}: {.status.message}")
	if !strings.HasPrefix(got, "Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 1000Ti, available: ") {
		t.Errorf("status %q, want the kubelet's ephemeral-storage eviction message", got)
	}
	for _, cond := range []string{"DiskPressure", "PIDPressure"} {
		c.waitFor(t, "", "node/"+a.node.name, `{.status.conditions[?(@.type=="`+cond+`")].status}`, "to report "+cond, func(v string) bool { return v == "True" })
	}
	c.waitEvent(t, "default", a.node.name, "EvictionThresholdMet", "Attempting to reclaim ephemeral-storage")
	c.waitFor(t, "", "node/"+a.node.name, `{.spec.taints[*].key}`, "to be tainted disk-pressure and pid-pressure", func(v string) bool {
		return strings.Contains(v, "node.kubernetes.io/disk-pressure") && strings.Contains(v, "node.kubernetes.io/pid-pressure")
	})
	eventually(t, time.Minute, "the eviction manager to reclaim the unused image", func() bool {
		if !strings.Contains(imageTags(t, a), unused) {
			return true
		}
		time.Sleep(500 * time.Millisecond)
		return false
	})
	if tags := imageTags(t, a); !strings.Contains(tags, pause.ImageName) {
		t.Errorf("the sandbox image was reclaimed (left: %s)", tags)
	}

	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: late}
spec:
  nodeName: %s
  containers:
  - {name: c, image: %s, command: ["sleep", "3600"], resources: {requests: {cpu: 10m, memory: 10Mi}}}
`, a.node.name, image), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "late", "Failed")
	if got, want := c.jsonpath(t, ns, "pod/late", "{.status.reason}: {.status.message}"), "Evicted: Pod was rejected: The node had condition: [DiskPressure PIDPressure]. "; got != want {
		t.Errorf("status %q, want %q", got, want)
	}
}

// sleeperOn is a BestEffort pod bound to node (spec.nodeName, past the scheduler) whose one
// container sleeps.
func sleeperOn(name, node, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  nodeName: %s
  containers:
  - {name: c, image: %s, command: ["sleep", "3600"]}
`, name, node, image)
}
