package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNodeLogRotation: with a small containerLogMaxSize, a chatty container's log is rotated,
// older files are compressed, no more than containerLogMaxFiles are kept, and kubectl logs
// still reads the live file.
func TestNodeLogRotation(t *testing.T) {
	t.Parallel()
	c, a := ownNode(t, "logrotate", "containerLogMaxSize: 16Ki\ncontainerLogMaxFiles: 3\n")
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "while true; do yes 0123456789 | head -n 3000; sleep 1; done"]
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "chatty", "Running")
	uid := c.jsonpath(t, ns, "pod/chatty", "{.metadata.uid}")
	logDir := filepath.Join(a.node.dataDir, "pod-logs", ns+"_chatty_"+uid, "c")
	files := func() []string {
		entries, _ := os.ReadDir(logDir)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	eventually(t, 90*time.Second, "a rotated log to be compressed", func() bool {
		for _, f := range files() {
			if strings.HasSuffix(f, ".gz") {
				return true
			}
		}
		time.Sleep(time.Second)
		return false
	})
	for i := 0; i < 3; i++ { // across further rotations
		if got := files(); len(got) > 3 {
			t.Errorf("%d log files %v, want at most containerLogMaxFiles=3", len(got), got)
		}
		// Right after a rotation the live file may still be empty.
		eventually(t, 15*time.Second, "kubectl logs to read the live file", func() bool {
			if c.must(t, "logs", "chatty", "-n", ns, "--tail=1") == "0123456789\n" {
				return true
			}
			time.Sleep(500 * time.Millisecond)
			return false
		})
		time.Sleep(5 * time.Second)
	}
}
