package podtopologyspread

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
	pod := st.MakePod().Name("p").Label("foo", "").
		TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
		TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
		TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj()
	pl, snap := newPlugin(t, nil, []*v1.Pod{fooPod("a1", "node-a"), fooPod("x1", "node-x")}, fourNodes())
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
