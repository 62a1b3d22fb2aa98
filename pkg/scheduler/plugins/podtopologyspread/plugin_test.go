package podtopologyspread

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    runtime.Object
		wantErr string
		system  bool
	}{
		{name: "nil args: system defaulting", system: true},
		{name: "empty args: system defaulting", args: &configv1.PodTopologySpreadArgs{}, system: true},
		{name: "list with constraints", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting,
			DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway}}}},
		{name: "system with constraints", wantErr: "when .defaultConstraints are not empty", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.SystemDefaulting,
			DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway}}}},
		{name: "bad maxSkew, repeated, selector", wantErr: "not in valid range", args: &configv1.PodTopologySpreadArgs{DefaultingType: configv1.ListDefaulting,
			DefaultConstraints: []v1.TopologySpreadConstraint{
				{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway},
				{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway, LabelSelector: fooSelector},
			}}},
		{name: "wrong type", args: &configv1.InterPodAffinityArgs{}, wantErr: "want args to be of type PodTopologySpreadArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := New(context.Background(), tt.args, &fakeHandle{snap: newSnapshot(nil, nil)})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := pl.(*Plugin).systemDefaulted; got != tt.system {
				t.Errorf("systemDefaulted %v, want %v", got, tt.system)
			}
		})
	}
}

func TestQueueingHints(t *testing.T) {
	pl, _ := newPlugin(t, nil, nil, nil)
	target := st.MakePod().Name("p").Label("foo", "").
		TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, &honorPolicy, nil).Obj()
	assigned := func(name string, labels ...string) *v1.Pod { return labeledPod(name, "node-a", labels...) }
	zoneNode := func(labels map[string]string, taints ...v1.Taint) *v1.Node {
		w := st.MakeNode().Name("n")
		for k, v := range labels {
			w.Label(k, v)
		}
		return w.Taints(taints...).Obj()
	}
	hints, err := pl.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	hintFor := func(r framework.EventResource) framework.QueueingHintFn {
		for _, h := range hints {
			if h.Event.Resource == r {
				return h.QueueingHintFn
			}
		}
		t.Fatalf("no hint for %s", r)
		return nil
	}
	targetUpdated := target.DeepCopy()
	targetUpdated.Spec.Tolerations = []v1.Toleration{{Key: "k", Operator: v1.TolerationOpExists}}
	tests := []struct {
		name     string
		resource framework.EventResource
		old, new interface{}
		want     framework.QueueingHint
	}{
		{"matching pod assigned", framework.AssignedPod, nil, assigned("a", "foo"), framework.Queue},
		{"unrelated pod assigned", framework.AssignedPod, nil, assigned("a", "bar"), framework.QueueSkip},
		{"matching pod in another namespace", framework.AssignedPod, nil, st.MakePod().Name("a").Namespace("x").Node("n").Label("foo", "").Obj(), framework.QueueSkip},
		{"matching pod deleted", framework.AssignedPod, assigned("a", "foo"), nil, framework.Queue},
		{"matching pod deleted, final state unknown", framework.AssignedPod, cache.DeletedFinalStateUnknown{Obj: assigned("a", "foo")}, nil, framework.Queue},
		{"pod stops matching", framework.AssignedPod, assigned("a", "foo"), assigned("a", "bar"), framework.Queue},
		{"pod label change that does not matter", framework.AssignedPod, assigned("a", "foo"), assigned("a", "foo", "baz"), framework.QueueSkip},
		{"target pod got tolerations (taints honored)", framework.UnscheduledPod, target, targetUpdated, framework.Queue},
		{"another unscheduled pod", framework.UnscheduledPod, st.MakePod().Name("q").Obj(), st.MakePod().Name("q").Label("foo", "").Obj(), framework.QueueSkip},
		{"node with the key added", framework.Node, nil, zoneNode(map[string]string{"zone": "z"}), framework.Queue},
		{"node without the key added", framework.Node, nil, zoneNode(nil), framework.QueueSkip},
		{"node moved zone", framework.Node, zoneNode(map[string]string{"zone": "a"}), zoneNode(map[string]string{"zone": "b"}), framework.Queue},
		{"node got a taint", framework.Node, zoneNode(map[string]string{"zone": "a"}), zoneNode(map[string]string{"zone": "a"}, taints...), framework.Queue},
		{"node unrelated label", framework.Node, zoneNode(map[string]string{"zone": "a"}), zoneNode(map[string]string{"zone": "a", "x": "y"}), framework.QueueSkip},
		{"node with the key deleted", framework.Node, zoneNode(map[string]string{"zone": "a"}), nil, framework.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := hintFor(tt.resource)(klog.Background(), target, tt.old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
