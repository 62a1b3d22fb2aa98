package noderesources

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestEventsToRegister(t *testing.T) {
	events, err := newFit(t, nil).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []framework.ClusterEvent
	for _, e := range events {
		if e.QueueingHintFn == nil {
			t.Errorf("%v has no hint", e.Event)
		}
		got = append(got, e.Event)
	}
	want := []framework.ClusterEvent{
		{Resource: framework.AssignedPod, ActionType: framework.Delete},
		{Resource: framework.Pod, ActionType: framework.UpdatePodScaleDown},
		{Resource: framework.Node, ActionType: framework.Add | framework.UpdateNodeAllocatable},
	}
	if d := diff(want, got); d != "" {
		t.Errorf("events:\n%s", d)
	}
}

type hintCase struct {
	name           string
	pod            *v1.Pod
	oldObj, newObj interface{}
	want           framework.QueueingHint
	wantErr        bool
}

func runHints(t *testing.T, hint framework.QueueingHintFn, cases []hintCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hint(klog.Background(), tc.pod, tc.oldObj, tc.newObj)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint %v, want %v", got, tc.want)
			}
		})
	}
}

func TestHintAfterPodDeleted(t *testing.T) {
	f := newFit(t, nil)
	cpu := func(q string) rl { return rl{v1.ResourceCPU: q} }
	pending := st.MakePod().Name("pod1").Req(cpu("1")).Obj()
	onNode := st.MakePod().Name("pod2").Req(cpu("1")).Node("fake").Obj()
	runHints(t, f.isSchedulableAfterPodDeleted, []hintCase{
		{name: "not a pod", pod: pending, oldObj: "not-a-pod", want: framework.Queue, wantErr: true},
		{name: "a pod on a node frees its room", pod: pending, oldObj: onNode, want: framework.Queue},
		{name: "a tombstone of a pod on a node", pod: pending, oldObj: cache.DeletedFinalStateUnknown{Key: "default/pod2", Obj: onNode}, want: framework.Queue},
		{name: "an unscheduled pod held no room", pod: pending, oldObj: st.MakePod().Name("pod2").Obj(), want: framework.QueueSkip},
		{name: "a nominated pod held room", pod: pending, oldObj: st.MakePod().Name("pod2").Req(cpu("2")).NominatedNode("fake").Obj(), want: framework.Queue},
	})
}

func TestHintAfterPodScaleDown(t *testing.T) {
	f := newFit(t, nil)
	cpu := func(q string) rl { return rl{v1.ResourceCPU: q} }
	mem := func(q string) rl { return rl{v1.ResourceMemory: q} }
	target := st.MakePod().Name("pod1").Req(cpu("1")).Obj()
	podLevelTarget := st.MakePod().Name("pod1").PodLevelReq(cpu("1")).Obj()
	other := func(reqs rl, node string) *v1.Pod { return st.MakePod().Name("pod2").Req(reqs).Node(node).Obj() }
	otherPodLevel := func(reqs rl) *v1.Pod { return st.MakePod().Name("pod2").PodLevelReq(reqs).Node("fake").Obj() }
	runHints(t, f.isSchedulableAfterPodScaleDown, []hintCase{
		{name: "old object not a pod", pod: target, oldObj: "not-a-pod", newObj: other(cpu("1"), "fake"), want: framework.Queue, wantErr: true},
		{name: "new object not a pod", pod: target, oldObj: other(cpu("1"), "fake"), newObj: "not-a-pod", want: framework.Queue, wantErr: true},
		{name: "an unscheduled pod shrinking frees nothing", pod: target, oldObj: other(cpu("2"), ""), newObj: other(cpu("1"), ""), want: framework.QueueSkip},
		{name: "a resource the pod does not request", pod: target, oldObj: other(mem("2"), "fake"), newObj: other(mem("1"), "fake"), want: framework.QueueSkip},
		{name: "a pod-level resource the pod does not request", pod: podLevelTarget, oldObj: otherPodLevel(mem("2")), newObj: otherPodLevel(mem("1")), want: framework.QueueSkip},
		{name: "a resource the pod requests", pod: target, oldObj: other(cpu("2"), "fake"), newObj: other(cpu("1"), "fake"), want: framework.Queue},
		{name: "a pod-level resource the pod requests", pod: podLevelTarget, oldObj: otherPodLevel(cpu("2")), newObj: otherPodLevel(cpu("1")), want: framework.Queue},
		{name: "the pod itself shrank", pod: target, oldObj: st.MakePod().Name("pod1").Req(cpu("2")).Obj(), newObj: target, want: framework.Queue},
	})
}

func TestHintAfterNodeChange(t *testing.T) {
	f := newFit(t, &configv1.NodeResourcesFitArgs{IgnoredResources: []string{string(resB)}})
	n := func(capacity rl) *v1.Node {
		c := rl{v1.ResourcePods: "32"}
		for k, v := range capacity {
			c[k] = v
		}
		return st.MakeNode().Name("n").Capacity(c).Obj()
	}
	memAndA := st.MakePod().Req(rl{v1.ResourceMemory: "2", resA: "1"}).Obj()
	runHints(t, f.isSchedulableAfterNodeChange, []hintCase{
		{name: "new object not a node", pod: st.MakePod().Obj(), newObj: "not-a-node", want: framework.Queue, wantErr: true},
		{name: "old object not a node", pod: st.MakePod().Obj(), oldObj: "not-a-node", newObj: &v1.Node{}, want: framework.Queue, wantErr: true},
		{name: "added node too small", pod: st.MakePod().Req(rl{v1.ResourceMemory: "2"}).Obj(),
			newObj: n(rl{v1.ResourceMemory: "1"}), want: framework.QueueSkip},
		{name: "added node without the extended resource", pod: st.MakePod().Req(rl{resA: "1"}).Obj(),
			newObj: n(rl{resB: "1"}), want: framework.QueueSkip},
		{name: "added node that fits", pod: memAndA, newObj: n(rl{v1.ResourceMemory: "4", resA: "2"}), want: framework.Queue},
		{name: "added node that lacks only an ignored resource", pod: st.MakePod().Req(rl{v1.ResourceMemory: "2", resB: "1"}).Obj(),
			newObj: n(rl{v1.ResourceMemory: "4"}), want: framework.Queue},
		{name: "update unrelated to the pod's requests", pod: memAndA,
			oldObj: n(rl{v1.ResourceMemory: "2", resA: "2"}), newObj: n(rl{v1.ResourceMemory: "2", resA: "1", resB: "2"}), want: framework.QueueSkip},
		{name: "a requested resource grew", pod: memAndA,
			oldObj: n(rl{v1.ResourceMemory: "2", resA: "1"}), newObj: n(rl{v1.ResourceMemory: "2", resA: "2"}), want: framework.Queue},
		{name: "node became too small", pod: memAndA,
			oldObj: n(rl{v1.ResourceMemory: "4", resA: "2"}), newObj: n(rl{v1.ResourceMemory: "1", resA: "2"}), want: framework.QueueSkip},
		{name: "node became large enough", pod: memAndA,
			oldObj: n(rl{v1.ResourceMemory: "1", resA: "2"}), newObj: n(rl{v1.ResourceMemory: "4", resA: "2"}), want: framework.Queue},
		{name: "node takes more pods", pod: memAndA,
			oldObj: n(rl{v1.ResourceMemory: "4", resA: "2", v1.ResourcePods: "1"}), newObj: n(rl{v1.ResourceMemory: "4", resA: "2", v1.ResourcePods: "2"}), want: framework.Queue},
	})
}
