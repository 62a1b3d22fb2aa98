package podtopologyspread

import (
	"context"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

var (
	largeOnce sync.Once
	largeSnap *snapshot
)

// largeCluster is 5,000 nodes in 3 zones with 20 pods each (100,000 pods), labelled
// app=app-<i%50>, built once for all benchmarks.
func largeCluster() *snapshot {
	largeOnce.Do(func() {
		const nodes, podsPerNode = 5000, 20
		var ns []*v1.Node
		var ps []*v1.Pod
		for n := 0; n < nodes; n++ {
			name := fmt.Sprintf("node-%d", n)
			ns = append(ns, st.MakeNode().Name(name).Label(v1.LabelTopologyZone, fmt.Sprintf("zone-%d", n%3)).Obj())
			for p := 0; p < podsPerNode; p++ {
				i := n*podsPerNode + p
				ps = append(ps, st.MakePod().Name(fmt.Sprintf("pod-%d", i)).Node(name).Label("app", fmt.Sprintf("app-%d", i%50)).Obj())
			}
		}
		largeSnap = newSnapshot(ps, ns)
	})
	return largeSnap
}

// benchCycle runs one pod's PreFilter, Filter on every node, PreScore and Score on every node
// for b.N pods of one workload; between pods one node changes, as when the previous pod was
// placed. With fresh, each pod has a selector of its own, so nothing is remembered.
func benchCycle(b *testing.B, fresh bool) {
	snap := largeCluster()
	p, err := New(context.Background(), nil, &fakeHandle{snap: snap})
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*Plugin)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		app := "app-7"
		if fresh {
			app = fmt.Sprintf("app-%d", i%50)
		}
		pod := st.MakePod().Name("p").Label("app", app).
			SpreadConstraint(1, v1.LabelTopologyZone, v1.DoNotSchedule, "app", app).
			SpreadConstraint(25, v1.LabelHostname, v1.DoNotSchedule, "app", app).
			SpreadConstraint(1, v1.LabelTopologyZone, v1.ScheduleAnyway, "app", app).Obj()
		if fresh {
			pl.counts = countCache{}
		}
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(ctx, state, pod, snap.infos); !s.IsSuccess() {
			b.Fatal(s)
		}
		for _, ni := range snap.infos {
			pl.Filter(ctx, state, pod, ni)
		}
		if s := pl.PreScore(ctx, state, pod, snap.infos); !s.IsSuccess() {
			b.Fatal(s)
		}
		for _, ni := range snap.infos {
			pl.Score(ctx, state, pod, ni)
		}
		snap.infos[i%len(snap.infos)].Generation++
	}
}

func BenchmarkCycleSameWorkload(b *testing.B) { benchCycle(b, false) }
func BenchmarkCycleUncached(b *testing.B)     { benchCycle(b, true) }
