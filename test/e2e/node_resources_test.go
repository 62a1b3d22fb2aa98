package e2e

import (
	"fmt"
	"os"
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
---
apiVersion: v1
kind: Pod
metadata: {name: idle}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: %[1]s, command: ["sleep", "3600"]}
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

	// The pod's cgroup sits under its QoS class's and carries the pod's limits: "limited" is
	// Guaranteed (its requests default to its limits), so kubepods/pod<uid>.
	uid := c.jsonpath(t, ns, "pod/limited", "{.metadata.uid}")
	v1 := true
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		v1 = false
	}
	read := func(v1path, v2path string) string {
		p := "/sys/fs/cgroup/" + v2path
		if v1 {
			p = "/sys/fs/cgroup/" + v1path
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Errorf("the pod's cgroup: %v", err)
		}
		return strings.TrimSpace(string(data))
	}
	if got := read("memory/kubepods/pod"+uid+"/memory.limit_in_bytes", "kubepods/pod"+uid+"/memory.max"); got != fmt.Sprint(64<<20) {
		t.Errorf("the pod cgroup's memory limit is %q, want %d", got, 64<<20)
	}
	if got := read("cpu/kubepods/pod"+uid+"/cpu.cfs_quota_us", "kubepods/pod"+uid+"/cpu.max"); !strings.HasPrefix(got, "50000") {
		t.Errorf("the pod cgroup's CPU quota is %q, want 50000", got)
	}
	c.waitPhase(t, ns, "idle", "Running")
	idle := c.jsonpath(t, ns, "pod/idle", "{.metadata.uid}")
	if v1 {
		if _, err := os.Stat("/sys/fs/cgroup/memory/kubepods/besteffort/pod" + idle); err != nil {
			t.Errorf("the BestEffort pod's cgroup: %v", err)
		}
		if got := read("cpu/kubepods/besteffort/cpu.shares", ""); got != "2" {
			t.Errorf("the besteffort cgroup's cpu.shares is %q, want 2", got)
		}
	}
}
