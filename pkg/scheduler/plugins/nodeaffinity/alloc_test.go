package nodeaffinity

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Filter and Score run for every node of every pod: they must not allocate.
func TestHotPathDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	pod := podRequiring(exprs(req("foo", v1.NodeSelectorOpIn, "bar")), fields(nameIn("node1")))
	pod.Spec.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = []v1.PreferredSchedulingTerm{
		preferred(3, exprs(req("n", v1.NodeSelectorOpGt, "3"))), preferred(1, fields(nameIn("node1"))),
	}
	withNodeSelector(pod, map[string]string{"zone": "a"})
	ni := nodeInfo("node1", map[string]string{"foo": "bar", "zone": "a", "n": "5"})
	p, _ := New(ctx, nil, nil)
	pl := p.(*NodeAffinity)
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, pod, nil)
	pl.PreScore(ctx, state, pod, nil)
	if allocs := testing.AllocsPerRun(100, func() {
		if s := pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			t.Fatal(s)
		}
		if score, _ := pl.Score(ctx, state, pod, ni); score != 4 {
			t.Fatal(score)
		}
	}); allocs != 0 {
		t.Errorf("Filter and Score allocate %v times", allocs)
	}
}
