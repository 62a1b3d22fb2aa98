package interpodaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// Filter and Score run for every node of every pod: they must not allocate.
func TestHotPathDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	pod := st.MakePod().Name("p").Label("app", "web").
		PodAffinity("zone", "app", "db").PodAntiAffinity(v1.LabelHostname, "app", "web").
		PreferredPodAffinity(5, "zone", "app", "db").Obj()
	pods := []*v1.Pod{
		appPod("d1", "node-a", "db"), appPod("w1", "node-b", "web"),
		st.MakePod().Name("o1").Node("node-x").Label("app", "ops").PodAntiAffinity("zone", "app", "web").Obj(),
	}
	pl, snap := newPlugin(t, nil, pods, fourNodes(), nil)
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, pod, snap.infos)
	pl.PreScore(ctx, state, pod, snap.infos)
	ni := snap.byName["node-a"]
	if allocs := testing.AllocsPerRun(100, func() {
		if s := pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			t.Fatal(s)
		}
		pl.Score(ctx, state, pod, ni)
	}); allocs != 0 {
		t.Errorf("Filter and Score allocate %v times", allocs)
	}
}
