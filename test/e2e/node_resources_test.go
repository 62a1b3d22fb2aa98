package e2e

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// TestNodeMemoryLimit: a process that grows past its container's 50Mi memory limit is killed
// by the kernel, and the container says OOMKilled (exit code 137); the node's cgroup settings
// come from the limits.
func TestNodeMemoryLimit(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  restartPolicy: Never
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "tail /dev/zero"]
    resources: {limits: {memory: 50Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: limited}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %[1]s
    command: ["sleep", "3600"]
    resources: {limits: {memory: 64Mi, cpu: 500m}}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "hog", "Failed")
	if got := c.jsonpath(t, ns, "pod/hog", "{.status.containerStatuses[0].state.terminated.reason} {.status.containerStatuses[0].state.terminated.exitCode}"); got != "OOMKilled 137" {
		t.Errorf("hog terminated with %q, want OOMKilled 137", got)
	}
	c.waitStatusColumn(t, ns, "hog", "OOMKilled")

	// The limits reach the container's cgroup (v1 here; v2 files where the machine has them).
	c.waitPhase(t, ns, "limited", "Running")
	mem := c.must(t, "exec", "limited", "-n", ns, "--", "sh", "-c",
		"cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max")
	if n, _ := strconv.ParseInt(strings.TrimSpace(mem), 10, 64); n != 64<<20 {
		t.Errorf("the container's memory limit is %q, want %d", mem, 64<<20)
	}
	cpu := c.must(t, "exec", "limited", "-n", ns, "--", "sh", "-c",
		"cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max")
	if strings.TrimSpace(cpu) != "50000" {
		t.Errorf("the container's CPU quota is %q, want 50000 (500m of a 100ms period)", cpu)
	}
}
