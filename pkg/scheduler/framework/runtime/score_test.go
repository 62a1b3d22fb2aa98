package runtime

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// byNode scores n1, n2, n3 ... with the given scores.
func byNode(scores ...int64) func(*framework.NodeInfo) (int64, *framework.Status) {
	return func(ni *framework.NodeInfo) (int64, *framework.Status) {
		var i int
		if _, err := fmt.Sscanf(ni.Node().Name, "n%d", &i); err != nil || i < 1 || i > len(scores) {
			return 0, framework.NewStatus(framework.Error, "unknown node "+ni.Node().Name)
		}
		return scores[i-1], nil
	}
}

// halve is a NormalizeScore that divides every score by 2.
func halve(scores framework.NodeScoreList) *framework.Status {
	for i := range scores {
		scores[i].Score /= 2
	}
	return nil
}

func TestRunScorePlugins(t *testing.T) {
	nodes := makeNodes("n1", "n2", "n3")
	tests := []struct {
		name        string
		plugins     []*fake
		weights     map[string]int32
		skip        sets.Set[string]
		want        []framework.NodePluginScores
		wantMessage string
	}{
		{
			name: "weights, normalization and totals",
			plugins: []*fake{
				{name: "S1", score: byNode(10, 20, 30)},
				{name: "S2", score: byNode(200, 100, 0), normalize: halve},
			},
			weights: map[string]int32{"S1": 2},
			want: []framework.NodePluginScores{
				{Name: "n1", Scores: []framework.PluginScore{{Name: "S1", Score: 20}, {Name: "S2", Score: 100}}, TotalScore: 120},
				{Name: "n2", Scores: []framework.PluginScore{{Name: "S1", Score: 40}, {Name: "S2", Score: 50}}, TotalScore: 90},
				{Name: "n3", Scores: []framework.PluginScore{{Name: "S1", Score: 60}, {Name: "S2", Score: 0}}, TotalScore: 60},
			},
		},
		{
			name: "skipped plugins do not score",
			plugins: []*fake{
				{name: "S1", score: byNode(10, 20, 30)},
				{name: "S2", score: byNode(1, 2, 3)},
			},
			skip: sets.New("S1"),
			want: []framework.NodePluginScores{
				{Name: "n1", Scores: []framework.PluginScore{{Name: "S2", Score: 1}}, TotalScore: 1},
				{Name: "n2", Scores: []framework.PluginScore{{Name: "S2", Score: 2}}, TotalScore: 2},
				{Name: "n3", Scores: []framework.PluginScore{{Name: "S2", Score: 3}}, TotalScore: 3},
			},
		},
		{
			name:    "all skipped: names only",
			plugins: []*fake{{name: "S1", score: byNode(10, 20, 30)}},
			skip:    sets.New("S1"),
			want: []framework.NodePluginScores{
				{Name: "n1", Scores: []framework.PluginScore{}},
				{Name: "n2", Scores: []framework.PluginScore{}},
				{Name: "n3", Scores: []framework.PluginScore{}},
			},
		},
		{
			name:        "score above MaxNodeScore without normalization",
			plugins:     []*fake{{name: "S1", score: byNode(10, 101, 30)}},
			wantMessage: `applying score defaultWeights on Score plugins: plugin "S1" returns an invalid score 101, it should in the range of [0, 100] after normalizing`,
		},
		{
			name: "negative score after normalization",
			plugins: []*fake{{name: "S1", score: byNode(1, 2, 3), normalize: func(s framework.NodeScoreList) *framework.Status {
				s[0].Score = -1
				return nil
			}}},
			wantMessage: `applying score defaultWeights on Score plugins: plugin "S1" returns an invalid score -1, it should in the range of [0, 100] after normalizing`,
		},
		{
			name: "a failing Score",
			plugins: []*fake{{name: "S1", score: func(*framework.NodeInfo) (int64, *framework.Status) {
				return 0, framework.NewStatus(framework.Error, "boom")
			}}},
			wantMessage: `running Score plugins: plugin "S1" failed with: boom`,
		},
		{
			name: "a failing NormalizeScore",
			plugins: []*fake{{name: "S1", score: byNode(1, 2, 3), normalize: func(framework.NodeScoreList) *framework.Status {
				return framework.NewStatus(framework.Error, "cannot")
			}}},
			wantMessage: `running Normalize on Score plugins: plugin "S1" failed with: cannot`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var plugins []framework.Plugin
			for _, p := range tt.plugins {
				plugins = append(plugins, scorePlugin{p})
			}
			f := newFramework(t, plugins, tt.weights)
			state := newState(f)
			state.SkipScorePlugins = tt.skip
			got, s := f.RunScorePlugins(context.Background(), state, testPod, nodes)
			if tt.wantMessage != "" {
				if s.Code() != framework.Error || s.Message() != tt.wantMessage {
					t.Fatalf("status = %v, want Error: %s", s, tt.wantMessage)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("scores (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunScorePluginsManyNodes(t *testing.T) {
	const n = 1000
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("n%d", i+1)
	}
	nodes := makeNodes(names...)
	score := func(ni *framework.NodeInfo) (int64, *framework.Status) {
		var i int64
		fmt.Sscanf(ni.Node().Name, "n%d", &i)
		return i % 101, nil
	}
	f := newFramework(t, []framework.Plugin{scorePlugin{&fake{name: "S1", score: score}}}, map[string]int32{"S1": 3})
	got, s := f.RunScorePlugins(context.Background(), newState(f), testPod, nodes)
	if !s.IsSuccess() {
		t.Fatal(s)
	}
	for i, ns := range got {
		want := int64((i+1)%101) * 3
		if ns.Name != names[i] || ns.TotalScore != want || len(ns.Scores) != 1 || ns.Scores[0].Score != want {
			t.Fatalf("node %d: %+v, want %s with %d", i, ns, names[i], want)
		}
	}
}

func TestRunScorePluginsCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := newFramework(t, []framework.Plugin{scorePlugin{&fake{name: "S1", score: byNode(1, 2, 3)}}}, nil)
	if _, s := f.RunScorePlugins(ctx, newState(f), testPod, makeNodes("n1", "n2", "n3")); s.Code() != framework.Error {
		t.Errorf("status = %v, want Error", s)
	}
}
