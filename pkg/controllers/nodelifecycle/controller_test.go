package nodelifecycle

import (
	"context"
	"sort"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestTaintsFollowConditions(t *testing.T) {
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec: v1.NodeSpec{Unschedulable: true, Taints: []v1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}, // not ours: kept
			{Key: v1.TaintNodePIDPressure, Effect: v1.TaintEffectNoSchedule},   // no longer true: removed
			{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoExecute}, // another effect: kept
		}},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionFalse},
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse},
			{Type: v1.NodePIDPressure, Status: v1.ConditionFalse},
		}},
	}
	client := fake.NewClientset(node)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Nodes())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	go c.Run(ctx, 1)

	want := []string{"dedicated:NoSchedule", "node.kubernetes.io/memory-pressure:NoExecute", "node.kubernetes.io/memory-pressure:NoSchedule",
		"node.kubernetes.io/not-ready:NoSchedule", "node.kubernetes.io/unschedulable:NoSchedule"}
	var got []string
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 5*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err := client.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = nil
		for _, t := range n.Spec.Taints {
			got = append(got, t.Key+":"+string(t.Effect))
		}
		sort.Strings(got)
		return equalStrings(got, want), nil
	})
	if err != nil {
		t.Fatalf("taints %v, want %v", got, want)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
