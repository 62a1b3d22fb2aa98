package podtopologyspread

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// place runs one scheduling cycle of pod with this plugin alone (PreFilter, Filter, PreScore,
// Score, NormalizeScore, highest score first found) and adds the pod to the chosen node, as
// the cache would. It returns the node, or "" when no node fits.
func place(t *testing.T, pl *Plugin, snap *snapshot, pod *v1.Pod) string {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	_, s := pl.PreFilter(ctx, state, pod, snap.infos)
	var feasible []*framework.NodeInfo
	for _, ni := range snap.infos {
		if s.IsSkip() || pl.Filter(ctx, state, pod, ni).IsSuccess() {
			feasible = append(feasible, ni)
		}
	}
	if len(feasible) == 0 {
		return ""
	}
	best := feasible[0]
	if pl.PreScore(ctx, state, pod, feasible).IsSuccess() {
		list := make(framework.NodeScoreList, len(feasible))
		for i, ni := range feasible {
			score, _ := pl.Score(ctx, state, pod, ni)
			list[i] = framework.NodeScore{Name: ni.Node().Name, Score: score}
		}
		pl.NormalizeScore(ctx, state, pod, list)
		for i := range list {
			if list[i].Score > list[0].Score {
				list[0], best = list[i], feasible[i]
			}
		}
	}
	placed := pod.DeepCopy()
	placed.Spec.NodeName = best.Node().Name
	best.AddPod(framework.NewPodInfo(placed))
	return best.Node().Name
}

// TestSpreadsAWorkload schedules a workload one pod at a time, as the scheduler does: zones
// never differ by more than maxSkew 1 and hosts end up evenly loaded.
func TestSpreadsAWorkload(t *testing.T) {
	var nodes []*v1.Node
	for z := 0; z < 3; z++ {
		for n := 0; n < 3; n++ {
			nodes = append(nodes, zoneNode(fmt.Sprintf("node-%d-%d", z, n), fmt.Sprintf("zone%d", z)))
		}
	}
	// Unrelated pods crowd zone0, which must not matter.
	other := []*v1.Pod{labeledPod("o1", "node-0-0", "bar"), labeledPod("o2", "node-0-1", "bar")}
	pl, snap := newPlugin(t, nil, other, nodes)
	zoneOf := map[string]string{}
	for _, n := range nodes {
		zoneOf[n.Name] = n.Labels["zone"]
	}
	perZone, perNode := map[string]int{}, map[string]int{}
	for i := 0; i < 30; i++ {
		pod := st.MakePod().Name(fmt.Sprintf("p%d", i)).Label("foo", "").
			TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
			TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj()
		node := place(t, pl, snap, pod)
		if node == "" {
			t.Fatalf("pod %d did not fit", i)
		}
		perZone[zoneOf[node]]++
		perNode[node]++
		lo, hi := 1<<30, 0
		for z := 0; z < 3; z++ {
			c := perZone[fmt.Sprintf("zone%d", z)]
			lo, hi = min(lo, c), max(hi, c)
		}
		if hi-lo > 1 {
			t.Fatalf("after pod %d zones are %v", i, perZone)
		}
	}
	for _, n := range nodes {
		if c := perNode[n.Name]; c < 3 || c > 4 {
			t.Errorf("hosts are uneven: %v", perNode)
			break
		}
	}
}
