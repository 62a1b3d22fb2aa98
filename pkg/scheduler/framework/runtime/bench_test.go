package runtime

import (
	"context"
	"fmt"
	"testing"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

func benchNodes(n int) []*framework.NodeInfo {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i)
	}
	return makeNodes(names...)
}

// BenchmarkFilterAllNodes is the runtime's share of findNodesThatFitPod on 5000 nodes: eight
// no-op Filter plugins, the nodes in parallel.
func BenchmarkFilterAllNodes(b *testing.B) {
	var plugins []framework.Plugin
	for i := range 8 {
		plugins = append(plugins, filterOnly{&fake{name: fmt.Sprintf("F%d", i)}})
	}
	f := newFrameworkOf(b, append([]framework.Plugin{pluginQS, pluginB}, plugins...), nil)
	nodes := benchNodes(5000)
	state := newState(f)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		f.Parallelizer().Until(ctx, len(nodes), func(i int) {
			f.RunFilterPlugins(ctx, state, testPod, nodes[i])
		}, "Filter")
	}
}

// BenchmarkScoreAllNodes scores 5000 nodes with five plugins, one of them normalizing.
func BenchmarkScoreAllNodes(b *testing.B) {
	plugins := []framework.Plugin{pluginQS, pluginB}
	for i := range 5 {
		p := &fake{name: fmt.Sprintf("S%d", i), score: func(*framework.NodeInfo) (int64, *framework.Status) { return 50, nil }}
		if i == 0 {
			p.normalize = halve
		}
		plugins = append(plugins, scorePlugin{p})
	}
	f := newFrameworkOf(b, plugins, nil)
	nodes := benchNodes(5000)
	state := newState(f)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, s := f.RunScorePlugins(ctx, state, testPod, nodes); !s.IsSuccess() {
			b.Fatal(s)
		}
	}
}
