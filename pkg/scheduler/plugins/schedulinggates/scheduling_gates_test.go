package schedulinggates

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestPreEnqueue(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		wantCode   framework.Code
		wantReason string
	}{
		{name: "no gates", pod: st.MakePod().Name("p").Obj(), wantCode: framework.Success},
		{
			name:       "one gate",
			pod:        st.MakePod().Name("p").SchedulingGates("foo").Obj(),
			wantCode:   framework.UnschedulableAndUnresolvable,
			wantReason: "waiting for scheduling gates: [foo]",
		},
		{
			name:       "two gates, in order",
			pod:        st.MakePod().Name("p").SchedulingGates("gate1", "gate2").Obj(),
			wantCode:   framework.UnschedulableAndUnresolvable,
			wantReason: "waiting for scheduling gates: [gate1 gate2]",
		},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(framework.PreEnqueuePlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pl.PreEnqueue(context.Background(), tt.pod)
			if got.Code() != tt.wantCode || got.Message() != tt.wantReason {
				t.Errorf("PreEnqueue() = %v, want %v: %q", got, tt.wantCode, tt.wantReason)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	p, _ := New(context.Background(), nil, nil)
	events, err := p.(framework.EnqueueExtensions).EventsToRegister(context.Background())
	if err != nil || len(events) != 1 {
		t.Fatalf("got %v, %v", events, err)
	}
	ev := events[0]
	if !ev.Event.Match(framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodSchedulingGatesEliminated}) {
		t.Errorf("event %+v does not match a gate removal", ev.Event)
	}
	if ev.Event.Match(framework.ClusterEvent{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodLabel}) {
		t.Errorf("event %+v matches a label update", ev.Event)
	}

	pod := st.MakePod().Name("p").Obj()
	tests := []struct {
		name   string
		newObj *v1.Pod
		want   framework.QueueingHint
	}{
		{name: "the pod itself", newObj: st.MakePod().Name("p").Obj(), want: framework.Queue},
		{name: "another pod", newObj: st.MakePod().Name("other").Obj(), want: framework.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := tt.newObj.DeepCopy()
			old.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}}
			got, err := ev.QueueingHintFn(klog.Background(), pod, old, tt.newObj)
			if err != nil || got != tt.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}
