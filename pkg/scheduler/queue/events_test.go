package queue

import (
	"context"
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

type fakeEnqueuePlugin struct {
	name   string
	events []framework.ClusterEventWithHint
	err    error
}

func (p *fakeEnqueuePlugin) Name() string { return p.name }

func (p *fakeEnqueuePlugin) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return p.events, p.err
}

type plainPlugin struct{ name string }

func (p plainPlugin) Name() string { return p.name }

func TestBuildQueueingHintMap(t *testing.T) {
	nodeAddEvent := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}
	all := framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All}
	m, err := BuildQueueingHintMap(context.Background(), []framework.Plugin{
		&fakeEnqueuePlugin{name: "A", events: []framework.ClusterEventWithHint{{Event: nodeAddEvent, QueueingHintFn: hintFn(framework.QueueSkip, nil)}}},
		&fakeEnqueuePlugin{name: "A"}, // the same plugin at another extension point
		&fakeEnqueuePlugin{name: "Silent"},
		plainPlugin{name: "Plain"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || len(m[nodeAddEvent]) != 1 || m[nodeAddEvent][0].PluginName != "A" || m[nodeAddEvent][0].QueueingHintFn == nil {
		t.Errorf("Node/Add: %+v", m[nodeAddEvent])
	}
	if len(m[all]) != 1 || m[all][0].PluginName != "Plain" || m[all][0].QueueingHintFn != nil {
		t.Errorf("a plugin without EnqueueExtensions should get every event: %+v", m[all])
	}
	if _, err := BuildQueueingHintMap(context.Background(), []framework.Plugin{&fakeEnqueuePlugin{name: "Bad", err: errors.New("boom")}}); err == nil {
		t.Error("a failing EventsToRegister was not reported")
	}
}

func TestEventLabel(t *testing.T) {
	tests := []struct {
		event framework.ClusterEvent
		want  string
	}{
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}, "NodeAdd"},
		{framework.ClusterEvent{Resource: framework.AssignedPod, ActionType: framework.Update}, "AssignedPodUpdate"},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.UpdateNodeLabel | framework.UpdateNodeTaint}, "NodeUpdateNodeLabel|UpdateNodeTaint"},
		{framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add, Label: "Custom"}, "Custom"},
		{EventUnschedulableTimeout, UnschedulableTimeout},
	}
	for _, tt := range tests {
		if got := eventLabel(tt.event); got != tt.want {
			t.Errorf("eventLabel(%+v) = %q, want %q", tt.event, got, tt.want)
		}
	}
}

func TestIsPodUpdated(t *testing.T) {
	base := st.MakePod().Name("p").Obj()
	tests := []struct {
		name   string
		change func(*v1.Pod)
		want   bool
	}{
		{"nothing", func(*v1.Pod) {}, false},
		{"resourceVersion and generation", func(p *v1.Pod) { p.ResourceVersion = "9"; p.Generation = 4 }, false},
		{"status", func(p *v1.Pod) { p.Status.NominatedNodeName = "n"; p.Status.Phase = v1.PodPending }, false},
		{"finalizers", func(p *v1.Pod) { p.Finalizers = []string{"x"} }, false},
		{"labels", func(p *v1.Pod) { p.Labels = map[string]string{"a": "b"} }, true},
		{"annotations", func(p *v1.Pod) { p.Annotations = map[string]string{"a": "b"} }, true},
		{"tolerations", func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{{Key: "k"}} }, true},
		{"scheduling gates removed", func(p *v1.Pod) { p.Spec.SchedulingGates = nil }, true},
	}
	base.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "g"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			newPod := base.DeepCopy()
			tt.change(newPod)
			if got := isPodUpdated(base, newPod); got != tt.want {
				t.Errorf("isPodUpdated = %v, want %v", got, tt.want)
			}
		})
	}
}
