package noderesources

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

const benchNodes = 5000

// benchNodeInfos is a 5000-node cluster: 4 cpus, 16Gi, 110 pods and 2 GPUs a node, every
// other node with 10 pods of 300m/1Gi (3 cpus in use), the rest with 2.
func benchNodeInfos() []*framework.NodeInfo {
	infos := make([]*framework.NodeInfo, benchNodes)
	for i := range infos {
		name := fmt.Sprintf("node-%d", i)
		n := st.MakeNode().Name(name).Capacity(rl{
			v1.ResourceCPU: "4", v1.ResourceMemory: "16Gi", v1.ResourcePods: "110", "example.com/gpu": "2",
		}).Obj()
		pods := 2
		if i%2 == 0 {
			pods = 10
		}
		var on []*v1.Pod
		for j := 0; j < pods; j++ {
			p := st.MakePod().Name(fmt.Sprintf("%s-p%d", name, j)).Req(rl{v1.ResourceCPU: "300m", v1.ResourceMemory: "1Gi"}).Node(name).Obj()
			p.UID = types.UID(p.Name)
			on = append(on, p)
		}
		infos[i] = newNodeInfo(n, on...)
	}
	return infos
}

// BenchmarkFilter is one pod filtered against every node of a 5000-node cluster, as
// findNodesThatFitPod does (here on one goroutine): ns/op is per pod, allocs/op should be
// the rejected nodes' Statuses only.
func BenchmarkFilter(b *testing.B) {
	infos := benchNodeInfos()
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		pod  *v1.Pod
	}{
		{"fits everywhere", st.MakePod().Req(rl{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"}).Obj()},
		{"fits half the nodes", st.MakePod().Req(rl{v1.ResourceCPU: "1500m", v1.ResourceMemory: "1Gi"}).Obj()},
		{"fits half, with a GPU", st.MakePod().Req(rl{v1.ResourceCPU: "1500m", v1.ResourceMemory: "1Gi", "example.com/gpu": "1"}).Obj()},
		{"fits nowhere, unresolvable", st.MakePod().Req(rl{v1.ResourceCPU: "8", "example.com/gpu": "4"}).Obj()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFit(b, nil)
			state := framework.NewCycleState()
			f.PreFilter(ctx, state, bc.pod, infos)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, ni := range infos {
					f.Filter(ctx, state, bc.pod, ni)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchNodes), "ns/node")
		})
	}
}

// BenchmarkScore is one pod scored on every node of the 5000-node cluster.
func BenchmarkScore(b *testing.B) {
	infos := benchNodeInfos()
	ctx := context.Background()
	incoming := st.MakePod().Req(rl{v1.ResourceCPU: "500m", v1.ResourceMemory: "1Gi"}).Obj()
	fit, _ := New(ctx, nil, nil)
	ba, _ := NewBalancedAllocation(ctx, nil, nil)
	for _, p := range []scorer{fit.(scorer), ba.(scorer)} {
		b.Run(p.Name(), func(b *testing.B) {
			state := framework.NewCycleState()
			p.PreScore(ctx, state, incoming, infos)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				for _, ni := range infos {
					p.Score(ctx, state, incoming, ni)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchNodes), "ns/node")
		})
	}
}
