package nodeunschedulable

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func nodeInfo(node *v1.Node) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func TestFilter(t *testing.T) {
	tolerateUnschedulable := v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		wantCode framework.Code
	}{
		{
			name: "schedulable node",
			pod:  st.MakePod().Name("p").Obj(),
			node: st.MakeNode().Name("n").Obj(),
		},
		{
			name:     "cordoned node",
			pod:      st.MakePod().Name("p").Obj(),
			node:     st.MakeNode().Name("n").Unschedulable(true).Obj(),
			wantCode: framework.UnschedulableAndUnresolvable,
		},
		{
			name: "cordoned node, pod tolerates the unschedulable taint",
			pod:  st.MakePod().Name("p").Toleration(tolerateUnschedulable).Obj(),
			node: st.MakeNode().Name("n").Unschedulable(true).Obj(),
		},
		{
			name: "cordoned node, pod tolerates everything",
			pod:  st.MakePod().Name("p").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			node: st.MakeNode().Name("n").Unschedulable(true).Obj(),
		},
		{
			name:     "cordoned node, toleration for another effect",
			pod:      st.MakePod().Name("p").Toleration(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}).Obj(),
			node:     st.MakeNode().Name("n").Unschedulable(true).Obj(),
			wantCode: framework.UnschedulableAndUnresolvable,
		},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(framework.FilterPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pl.Filter(context.Background(), framework.NewCycleState(), tt.pod, nodeInfo(tt.node))
			if got.Code() != tt.wantCode {
				t.Fatalf("Filter = %v, want %v", got, tt.wantCode)
			}
			if tt.wantCode != framework.Success && got.Message() != "node(s) were unschedulable" {
				t.Errorf("reason %q", got.Message())
			}
		})
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	tests := []struct {
		name           string
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "not a node", newObj: pod, want: framework.Queue, wantErr: true},
		{name: "schedulable node added", newObj: st.MakeNode().Name("n").Obj(), want: framework.Queue},
		{name: "cordoned node added", newObj: st.MakeNode().Name("n").Unschedulable(true).Obj(), want: framework.QueueSkip},
		{
			name:   "node uncordoned",
			oldObj: st.MakeNode().Name("n").Unschedulable(true).Obj(), newObj: st.MakeNode().Name("n").Obj(),
			want: framework.Queue,
		},
		{
			name:   "node cordoned",
			oldObj: st.MakeNode().Name("n").Obj(), newObj: st.MakeNode().Name("n").Unschedulable(true).Obj(),
			want: framework.QueueSkip,
		},
		{
			name:   "schedulable node changed otherwise",
			oldObj: st.MakeNode().Name("n").Obj(), newObj: st.MakeNode().Name("n").Label("a", "b").Obj(),
			want: framework.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterNodeChange(klog.Background(), pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v (err %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestIsSchedulableAfterPodTolerationChange(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	tests := []struct {
		name   string
		newObj *v1.Pod
		want   framework.QueueingHint
	}{
		{
			name:   "pod now tolerates the unschedulable taint",
			newObj: st.MakePod().Name("p").Toleration(v1.Toleration{Key: v1.TaintNodeUnschedulable, Operator: v1.TolerationOpExists}).Obj(),
			want:   framework.Queue,
		},
		{
			name:   "unrelated toleration",
			newObj: st.MakePod().Name("p").Toleration(v1.Toleration{Key: "other", Operator: v1.TolerationOpExists}).Obj(),
			want:   framework.QueueSkip,
		},
		{
			name:   "another pod",
			newObj: st.MakePod().Name("q").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(),
			want:   framework.QueueSkip,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterPodTolerationChange(klog.Background(), pod, pod, tt.newObj)
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	p, _ := New(context.Background(), nil, nil)
	events, err := p.(framework.EnqueueExtensions).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	matches := func(e framework.ClusterEvent) bool {
		for _, ev := range events {
			if ev.Event.Match(e) {
				return true
			}
		}
		return false
	}
	for _, e := range []framework.ClusterEvent{
		{Resource: framework.Node, ActionType: framework.Add},
		{Resource: framework.Node, ActionType: framework.UpdateNodeTaint},
		{Resource: framework.UnscheduledPod, ActionType: framework.UpdatePodToleration},
	} {
		if !matches(e) {
			t.Errorf("%+v not registered", e)
		}
	}
	if matches(framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel}) {
		t.Errorf("node label updates registered")
	}
}
