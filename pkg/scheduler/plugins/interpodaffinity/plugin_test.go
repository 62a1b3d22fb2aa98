package interpodaffinity

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestNewArgs(t *testing.T) {
	tests := []struct {
		name       string
		args       runtime.Object
		wantWeight int32
		wantErr    string
	}{
		{name: "nil: default weight 1", wantWeight: 1},
		{name: "unset weight: 1", args: &configv1.InterPodAffinityArgs{}, wantWeight: 1},
		{name: "weight 0", args: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](0)}, wantWeight: 0},
		{name: "weight 101", args: &configv1.InterPodAffinityArgs{HardPodAffinityWeight: ptr.To[int32](101)}, wantErr: "not in valid range [0, 100]"},
		{name: "wrong type", args: &configv1.PodTopologySpreadArgs{}, wantErr: "want args to be of type InterPodAffinityArgs"},
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
			if got := pl.(*Plugin).hardPodAffinityWeight; got != tt.wantWeight {
				t.Errorf("weight %d, want %d", got, tt.wantWeight)
			}
		})
	}
}

func TestQueueingHints(t *testing.T) {
	pl, _ := newPlugin(t, nil, nil, nil, nil)
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
	target := st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
	node := func(labels ...string) *v1.Node {
		w := st.MakeNode().Name("n")
		for i := 0; i+1 < len(labels); i += 2 {
			w.Label(labels[i], labels[i+1])
		}
		return w.Obj()
	}
	rejecter := st.MakePod().Name("o").Node("n").Label("app", "ops").PodAntiAffinity("zone", "app", "web").Obj()
	tests := []struct {
		name     string
		resource framework.EventResource
		old, new interface{}
		want     framework.QueueingHint
	}{
		{"pod the target needs assigned", framework.AssignedPod, nil, appPod("d", "n", "db"), framework.Queue},
		{"unrelated pod assigned", framework.AssignedPod, nil, appPod("c", "n", "cache"), framework.QueueSkip},
		{"unassigned pod", framework.AssignedPod, nil, appPod("d", "", "db"), framework.QueueSkip},
		{"pod relabeled to match affinity", framework.AssignedPod, appPod("d", "n", "cache"), appPod("d", "n", "db"), framework.Queue},
		{"pod relabeled away from anti-affinity", framework.AssignedPod, appPod("w", "n", "web"), appPod("w", "n", "cache"), framework.Queue},
		{"pod relabeled, irrelevant", framework.AssignedPod, appPod("c", "n", "cache"), appPod("c", "n", "ops"), framework.QueueSkip},
		{"pod the target rejects deleted", framework.AssignedPod, appPod("w", "n", "web"), nil, framework.Queue},
		{"pod that rejects the target deleted", framework.AssignedPod, rejecter, nil, framework.Queue},
		{"unrelated pod deleted", framework.AssignedPod, appPod("c", "n", "cache"), nil, framework.QueueSkip},
		{"target relabeled", framework.UnscheduledPod, target, target, framework.Queue},
		{"another unscheduled pod relabeled", framework.UnscheduledPod, appPod("q", "", "x"), appPod("q", "", "y"), framework.QueueSkip},
		{"node with the affinity key added", framework.Node, nil, node("zone", "z"), framework.Queue},
		{"node added: anti-affinity may now fit", framework.Node, nil, node(), framework.Queue},
		{"node moved zone", framework.Node, node("zone", "a"), node("zone", "b"), framework.Queue},
		{"node gained the zone", framework.Node, node(), node("zone", "b"), framework.Queue},
		{"node unrelated label", framework.Node, node("zone", "a"), node("zone", "a", "x", "y"), framework.QueueSkip},
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
