package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestNodeContainerGC: a crash-looping container leaves one dead instance behind, not one per
// restart; a deleted pod's containers, sandbox and log directory go.
func TestNodeContainerGC(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo bye; exit 1"]
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	uid := c.jsonpath(t, ns, "pod/crash", "{.metadata.uid}")
	rs := n.runtime(t)
	podContainers := func() []*runtimeapi.Container {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
		if err != nil {
			t.Fatalf("listing containers: %v", err)
		}
		return l
	}
	c.waitFor(t, ns, "pod/crash", "{.status.containerStatuses[0].restartCount}", "to restart twice", func(v string) bool {
		n, _ := strconv.Atoi(v)
		return n >= 2
	})
	eventually(t, 15*time.Second, "one container of the pod left in the runtime", func() bool {
		if len(podContainers()) == 1 {
			return true
		}
		time.Sleep(200 * time.Millisecond)
		return false
	})

	logDir := filepath.Join(n.dataDir, "pod-logs", ns+"_crash_"+uid)
	if _, err := os.Stat(logDir); err != nil {
		t.Fatalf("the pod's log directory: %v", err)
	}
	c.must(t, "delete", "pod", "crash", "-n", ns, "--timeout=60s")
	// The periodic GC (every minute) removes what is left of a deleted pod.
	eventually(t, 150*time.Second, "the deleted pod's containers, sandbox and logs to go", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		sandboxes, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
		if err != nil {
			t.Fatalf("listing sandboxes: %v", err)
		}
		_, statErr := os.Stat(logDir)
		if len(podContainers()) == 0 && len(sandboxes) == 0 && os.IsNotExist(statErr) {
			return true
		}
		time.Sleep(time.Second)
		return false
	})
}
