package nodetest

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-cluster/berth/pkg/cri/memory"
	"github.com/berth-cluster/berth/test/integration/framework"
)

const podTimeout = 30 * time.Second

func createPod(t *testing.T, c *framework.Cluster, pod *v1.Pod) *v1.Pod {
	t.Helper()
	WaitForServiceAccount(t, c.Client, pod.Namespace)
	created, err := c.Client.CoreV1().Pods(pod.Namespace).Create(context.Background(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s: %v", pod.Name, err)
	}
	return created
}

func TestNodeRunsAPodAndReportsRunning(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-run", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := createPod(t, c, MakePod("web").Node(n.Name).Container("app", "nginx:1.27").Req("cpu", "100m").Obj())
	got := WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running and ready", Running)
	if got.Status.PodIP == "" || got.Status.StartTime == nil || len(got.Status.ContainerStatuses) != 1 || got.Status.ContainerStatuses[0].State.Running == nil {
		t.Errorf("status of a running pod = %+v, want a pod IP, a start time and one running container", got.Status)
	}
}

func TestNodeRemovesADeletedPod(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-delete", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := createPod(t, c, MakePod("doomed").Node(n.Name).Container("app", "nginx:1.27").Obj())
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)
	if err := c.Client.CoreV1().Pods(pod.Namespace).Delete(context.Background(), pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitForPodGone(t, c.Client, pod.Namespace, pod.Name, podTimeout)
	waitForNothingLive(t, n, string(pod.UID))
}

func TestNodeBacksOffACrashingContainer(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-crash", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := createPod(t, c, MakePod("crasher").Node(n.Name).Container("app", "busybox:1.36").
		Annotation(memory.AnnotationRunSeconds, "0").Annotation(memory.AnnotationExitCode, "1").Obj())
	got := WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "in CrashLoopBackOff", func(p *v1.Pod) bool {
		return WaitingReason(p) == "CrashLoopBackOff"
	})
	s := got.Status.ContainerStatuses[0]
	if s.RestartCount < 1 || s.LastTerminationState.Terminated == nil || s.LastTerminationState.Terminated.ExitCode != 1 || s.LastTerminationState.Terminated.Reason != "Error" {
		t.Errorf("container status = %+v, want a restart and a last termination with exit code 1, reason Error", s)
	}
	if got.Status.Phase != v1.PodRunning {
		t.Errorf("phase = %s, want Running (restartPolicy Always)", got.Status.Phase)
	}
}

func TestNodeRestartKeepsItsPods(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-restart", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := createPod(t, c, MakePod("survivor").Node(n.Name).Container("app", "nginx:1.27").Obj())
	before := WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)
	id := before.Status.ContainerStatuses[0].ContainerID

	n.Restart(t)
	// The new agent must find the pod and its container rather than start another: same
	// container ID, no restart, and still one sandbox.
	after := WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)
	time.Sleep(3 * time.Second) // a sync, a PLEG relist and a housekeeping pass of the new agent
	after = WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)
	if s := after.Status.ContainerStatuses[0]; s.ContainerID != id || s.RestartCount != 0 {
		t.Errorf("after the node's restart container = %s with %d restarts, want %s with none", s.ContainerID, s.RestartCount, id)
	}
	if sandboxes, containers, err := n.RuntimeLive(context.Background(), string(pod.UID)); err != nil || sandboxes != 1 || containers != 1 {
		t.Errorf("after the restart the pod has %d ready sandboxes and %d running containers (%v), want 1 and 1", sandboxes, containers, err)
	}
}

// waitForNothingLive waits until the runtime runs nothing of the pod.
func waitForNothingLive(t *testing.T, n *Node, uid string) {
	t.Helper()
	deadline := time.Now().Add(podTimeout)
	for {
		sandboxes, containers, err := n.RuntimeLive(context.Background(), uid)
		if err == nil && sandboxes+containers == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runtime still has %d ready sandboxes and %d running containers of pod %s (%v)", sandboxes, containers, uid, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestNodeRunEndsItsGoroutinesBeforeReturning(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-stop", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := createPod(t, c, MakePod("running").Node(n.Name).Container("app", "nginx:1.27").Obj())
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running", Running)
	// The goroutines Run starts (node status, PLEG, pod workers, GC loops, volume manager,
	// sync loop...) have Run's closures on their stacks.
	const marker = "berth/pkg/node.(*Kubelet).Run"
	if got := goroutinesWith(marker); got == "" {
		t.Fatalf("no goroutine of a running node agent has %s on its stack: the check below would be blind", marker)
	}
	n.Stop(t)
	if got := goroutinesWith(marker); got != "" {
		t.Errorf("goroutines started by Kubelet.Run still run after it returned:\n%s", got)
	}
}

// goroutinesWith are the stacks of the process's goroutines that contain s.
func goroutinesWith(s string) string {
	buf := make([]byte, 16<<20)
	dump := string(buf[:runtime.Stack(buf, true)])
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, s) {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
