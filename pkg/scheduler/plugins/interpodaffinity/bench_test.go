package interpodaffinity

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
// app=app-<i%50>; every tenth pod keeps pods of its app off its node (required anti-affinity)
// and prefers its zone.
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
				app := fmt.Sprintf("app-%d", i%50)
				w := st.MakePod().Name(fmt.Sprintf("pod-%d", i)).Node(name).Label("app", app)
				if i%10 == 0 {
					w.PodAntiAffinity(v1.LabelHostname, "app", app).PreferredPodAffinity(10, v1.LabelTopologyZone, "app", app)
				}
				ps = append(ps, w.Obj())
			}
		}
		largeSnap = newSnapshot(ps, ns)
	})
	return largeSnap
}

// benchCycle runs one pod's PreFilter, Filter on every node, PreScore and Score on every node
// for b.N pods of one workload (one per node, preferring its zone's pods); between pods one
// node changes. With fresh, nothing is remembered between pods.
func benchCycle(b *testing.B, fresh bool) {
	snap := largeCluster()
	p, err := New(context.Background(), nil, &fakeHandle{snap: snap})
	if err != nil {
		b.Fatal(err)
	}
	pl := p.(*Plugin)
	ctx := context.Background()
	pod := st.MakePod().Name("p").Label("app", "app-7").
		PodAntiAffinity(v1.LabelHostname, "app", "app-7").
		PreferredPodAffinity(10, v1.LabelTopologyZone, "app", "app-7").Obj()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if fresh {
			pl.memo = nodeMemo{}
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
