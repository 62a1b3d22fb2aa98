package scheduler

import (
	"testing"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

func TestNumFeasibleNodesToFind(t *testing.T) {
	tests := []struct {
		percentage, nodes, want int32
	}{
		{0, 10, 10},
		{0, 99, 99},
		{0, 100, 100},   // 50% of 100 = 50 < 100 → 100
		{0, 1000, 420},  // 50 - 8 = 42%
		{0, 5000, 500},  // 50 - 40 = 10%
		{0, 6000, 300},  // 50 - 48 = 2% → floor 5%
		{50, 1000, 500}, // given
		{1, 1000, 100},  // 10 < 100 → 100
	}
	for _, tt := range tests {
		if got := numFeasibleNodesToFind(tt.percentage, tt.nodes); got != tt.want {
			t.Errorf("numFeasibleNodesToFind(%d, %d) = %d, want %d", tt.percentage, tt.nodes, got, tt.want)
		}
	}
}

func TestSelectHost(t *testing.T) {
	if _, err := selectHost(nil); err == nil {
		t.Error("no scores must be an error")
	}
	scores := []framework.NodePluginScores{{Name: "a", TotalScore: 5}, {Name: "b", TotalScore: 9}, {Name: "c", TotalScore: 9}, {Name: "d", TotalScore: 1}}
	seen := map[string]int{}
	for i := 0; i < 2000; i++ {
		host, err := selectHost(scores)
		if err != nil {
			t.Fatal(err)
		}
		seen[host]++
	}
	if seen["a"]+seen["d"] != 0 {
		t.Errorf("picked a lower score: %v", seen)
	}
	// Both tied nodes are picked, about equally.
	if seen["b"] < 800 || seen["c"] < 800 {
		t.Errorf("tie-break not random enough: %v", seen)
	}
}
