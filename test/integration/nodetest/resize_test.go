package nodetest

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// condition returns the pod's condition of that type, nil if it has none.
func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func statusCPURequest(p *v1.Pod) string {
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].Resources == nil {
		return ""
	}
	return p.Status.ContainerStatuses[0].Resources.Requests.Cpu().String()
}

// A resize that does not fit beside the node's other pods waits as PodResizePending
// (Deferred), keeps waiting across a restart of the node agent, and is applied once the pod
// that held the room is gone: PodResizeInProgress gives way to no condition, and the
// status shows the new size at the new generation.
func TestNodeDefersAResizeUntilThereIsRoom(t *testing.T) {
	ctx := context.Background()
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-resize", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	// The node has 4096 cores.
	big := createPod(t, c, MakePod("big").Node(n.Name).Container("app", "nginx:1.27").Req("cpu", "3000").Obj())
	small := createPod(t, c, MakePod("small").Node(n.Name).Container("app", "nginx:1.27").Req("cpu", "1000").Obj())
	WaitForPod(t, c.Client, big.Namespace, big.Name, podTimeout, "Running", Running)
	WaitForPod(t, c.Client, small.Namespace, small.Name, podTimeout, "Running", Running)

	patch := []byte(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"1500"}}}]}}`)
	if _, err := c.Client.CoreV1().Pods(small.Namespace).Patch(ctx, small.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "resize"); err != nil {
		t.Fatal(err)
	}
	deferred := func(p *v1.Pod) bool {
		c := condition(p, v1.PodResizePending)
		return c != nil && c.Reason == v1.PodReasonDeferred && c.ObservedGeneration == 2 && p.Status.ObservedGeneration == 2
	}
	got := WaitForPod(t, c.Client, small.Namespace, small.Name, podTimeout, "PodResizePending Deferred", deferred)
	if msg := condition(got, v1.PodResizePending).Message; msg != "Node didn't have enough resource: cpu, requested: 1500000, used: 3000000, capacity: 4096000" {
		t.Errorf("PodResizePending message: %q", msg)
	}
	if r := statusCPURequest(got); r != "1k" {
		t.Errorf("a deferred resize shows cpu %s in the status, want the old 1k", r)
	}
	if alloc := got.Status.ContainerStatuses[0].AllocatedResources.Cpu().String(); alloc != "1k" {
		t.Errorf("allocatedResources cpu = %s, want 1k", alloc)
	}

	// A restarted node agent keeps the resize pending, and the pod at its allocation.
	n.Restart(t)
	time.Sleep(3 * time.Second) // a sync and a status write of the new agent
	got = WaitForPod(t, c.Client, small.Namespace, small.Name, podTimeout, "Running after the restart", Running)
	if !deferred(got) || statusCPURequest(got) != "1k" {
		t.Errorf("after the restart: cpu %s, conditions %+v", statusCPURequest(got), got.Status.Conditions)
	}

	if err := c.Client.CoreV1().Pods(big.Namespace).Delete(ctx, big.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitForPodGone(t, c.Client, big.Namespace, big.Name, podTimeout)
	got = WaitForPod(t, c.Client, small.Namespace, small.Name, podTimeout, "resized", func(p *v1.Pod) bool {
		return condition(p, v1.PodResizePending) == nil && condition(p, v1.PodResizeInProgress) == nil && statusCPURequest(p) == "1500"
	})
	if s := got.Status.ContainerStatuses[0]; s.RestartCount != 0 || s.AllocatedResources.Cpu().String() != "1500" {
		t.Errorf("after the resize: %d restarts, allocated cpu %s", s.RestartCount, s.AllocatedResources.Cpu())
	}
}
