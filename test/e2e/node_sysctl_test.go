package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// TestNodeSysctls: a safe sysctl (in either separator form) is set in the pod's namespace,
// and a namespaced but unsafe one that the node does not allow ends the pod before anything
// runs: Failed, reason SysctlForbidden, the kubelet's message and a warning event.
func TestNodeSysctls(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	pod := func(name, sysctl, value string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  restartPolicy: Never
  securityContext:
    sysctls: [{name: %q, value: %q}]
  containers:
  - name: c
    image: %s
    command: ["/bin/sysctl", %q]
`, name, sysctl, value, image, sysctl)
	}
	c.mustIn(t, pod("unsafe", "kernel.msgmax", "10000000000")+"---\n"+
		pod("safe", "kernel.shm_rmid_forced", "1")+"---\n"+
		pod("slashes", "kernel/shm_rmid_forced", "1"), "apply", "-n", ns, "-f", "-")

	c.waitPhase(t, ns, "unsafe", "Failed")
	const msg = `forbidden sysctl: "kernel.msgmax" not allowlisted`
	if got := c.jsonpath(t, ns, "pod/unsafe", "{.status.reason}|{.status.message}"); got != "SysctlForbidden|Pod was rejected: "+msg {
		t.Errorf("reason|message = %q", got)
	}
	c.waitEvent(t, ns, "unsafe", "SysctlForbidden", msg)
	if got := c.jsonpath(t, ns, "pod/unsafe", "{.status.containerStatuses}"); got != "" {
		t.Errorf("a rejected pod reports containers: %s", got)
	}

	for _, name := range []string{"safe", "slashes"} {
		c.waitPhase(t, ns, name, "Succeeded")
		if logs := c.must(t, "logs", name, "-n", ns); !strings.Contains(logs, "kernel.shm_rmid_forced = 1") {
			t.Errorf("%s: the sysctl is not set in the pod; logs:\n%s", name, logs)
		}
	}
}
