package interpodaffinity

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// place runs one scheduling cycle of pod with this plugin alone and adds the pod to the node
// with the highest score (the first of equals), as the cache would. It returns the node, or ""
// and the reasons when no node fits.
func place(t *testing.T, pl *Plugin, snap *snapshot, pod *v1.Pod) (string, map[string]result) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	_, s := pl.PreFilter(ctx, state, pod, snap.infos)
	var feasible []*framework.NodeInfo
	rejected := map[string]result{}
	for _, ni := range snap.infos {
		if s.IsSkip() {
			feasible = append(feasible, ni)
		} else if fs := pl.Filter(ctx, state, pod, ni); fs.IsSuccess() {
			feasible = append(feasible, ni)
		} else {
			rejected[ni.Node().Name] = statusResult(fs)
		}
	}
	if len(feasible) == 0 {
		return "", rejected
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
	return best.Node().Name, nil
}

// TestSchedulesWorkloads schedules pods one at a time, as the scheduler does.
func TestSchedulesWorkloads(t *testing.T) {
	t.Run("one web pod per node, then no room", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, nil, fourNodes(), nil)
		seen := map[string]bool{}
		for i := 0; i < 6; i++ {
			pod := st.MakePod().Name(fmt.Sprintf("w%d", i)).Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj()
			node, rejected := place(t, pl, snap, pod)
			switch {
			case i < 4 && (node == "" || seen[node]):
				t.Fatalf("pod %d went to %q (taken: %v)", i, node, seen)
			case i >= 4 && node != "":
				t.Fatalf("pod %d went to %q, want no room", i, node)
			case i >= 4:
				for n, r := range rejected {
					if r != antiAffinity {
						t.Errorf("pod %d on %s: %+v, want %+v", i, n, r, antiAffinity)
					}
				}
			}
			seen[node] = true
		}
	})
	t.Run("a self-affine group stays in the zone of its first pod", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, nil, fourNodes(), nil)
		zones := map[string]int{}
		for i := 0; i < 5; i++ {
			pod := st.MakePod().Name(fmt.Sprintf("d%d", i)).Label("app", "db").PodAffinity("zone", "app", "db").Obj()
			node, _ := place(t, pl, snap, pod)
			if node == "" {
				t.Fatalf("pod %d did not fit", i)
			}
			zones[snap.byName[node].Node().Labels["zone"]]++
		}
		if len(zones) != 1 {
			t.Errorf("pods spread over zones %v", zones)
		}
	})
	t.Run("preferred anti-affinity spreads, preferred affinity gathers", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, nil, fourNodes(), nil)
		perNode := map[string]int{}
		for i := 0; i < 8; i++ {
			pod := st.MakePod().Name(fmt.Sprintf("s%d", i)).Label("app", "spread").
				PreferredPodAntiAffinity(10, v1.LabelHostname, "app", "spread").Obj()
			node, _ := place(t, pl, snap, pod)
			perNode[node]++
		}
		for _, n := range fourNodes() {
			if perNode[n.Name] != 2 {
				t.Errorf("spread pods per node: %v", perNode)
				break
			}
		}
		zones := map[string]int{}
		for i := 0; i < 4; i++ {
			pod := st.MakePod().Name(fmt.Sprintf("g%d", i)).Label("app", "gather").
				PreferredPodAffinity(10, "zone", "app", "gather").Obj()
			node, _ := place(t, pl, snap, pod)
			zones[snap.byName[node].Node().Labels["zone"]]++
		}
		if len(zones) != 1 {
			t.Errorf("gathering pods spread over zones %v", zones)
		}
	})
}
