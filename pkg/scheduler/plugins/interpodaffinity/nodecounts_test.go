package interpodaffinity

import (
	"context"
	"reflect"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// outcome is what a full cycle of the plugin says of every node: Filter's result and the
// normalized score.
func outcome(t *testing.T, pl *Plugin, snap *snapshot, pod *v1.Pod) (map[string]result, map[string]int64) {
	t.Helper()
	ctx := context.Background()
	filters := map[string]result{}
	state := framework.NewCycleState()
	_, s := pl.PreFilter(ctx, state, pod, snap.infos)
	for _, ni := range snap.infos {
		if s.IsSkip() {
			filters[ni.Node().Name] = fits
		} else {
			filters[ni.Node().Name] = statusResult(pl.Filter(ctx, state, pod, ni))
		}
	}
	scores := map[string]int64{}
	if s := pl.PreScore(ctx, state, pod, snap.infos); s.IsSkip() {
		return filters, scores
	}
	var list framework.NodeScoreList
	for _, ni := range snap.infos {
		score, _ := pl.Score(ctx, state, pod, ni)
		list = append(list, framework.NodeScore{Name: ni.Node().Name, Score: score})
	}
	pl.NormalizeScore(ctx, state, pod, list)
	for _, ns := range list {
		scores[ns.Name] = ns.Score
	}
	return filters, scores
}

// TestMemoAcrossCycles changes the cluster between cycles of one plugin and expects the same
// answers as a plugin that remembers nothing.
func TestMemoAcrossCycles(t *testing.T) {
	pod := st.MakePod().Name("p").Label("app", "web").
		PodAffinity("zone", "app", "db").PodAntiAffinity(v1.LabelHostname, "app", "web").
		PreferredPodAffinity(7, "zone", "app", "cache").PreferredPodAntiAffinity(3, v1.LabelHostname, "app", "web").Obj()
	pods := []*v1.Pod{
		appPod("d1", "node-a", "db"), appPod("w1", "node-b", "web"), appPod("c1", "node-x", "cache"),
		st.MakePod().Name("o1").Node("node-y").Label("app", "ops").PodAntiAffinity("zone", "app", "web").Obj(),
		st.MakePod().Name("s1").Node("node-b").Label("app", "ops").PreferredPodAffinity(4, "zone", "app", "web").Obj(),
	}
	pl, snap := newPlugin(t, nil, pods, fourNodes(), nil)
	changes := []func(){
		func() {},
		func() { snap.byName["node-x"].AddPod(framework.NewPodInfo(appPod("d2", "node-x", "db"))) },
		func() { snap.byName["node-a"].AddPod(framework.NewPodInfo(appPod("w2", "node-a", "web"))) },
		func() {
			_ = snap.byName["node-y"].RemovePod(pods[3])
		},
		func() {
			snap.byName["node-x"].AddPod(framework.NewPodInfo(st.MakePod().Name("o2").Node("node-x").Label("app", "ops").
				PreferredPodAntiAffinity(9, "zone", "app", "web").Obj()))
		},
		func() { snap.byName["node-b"].SetNode(zoneNode("node-b", "zone2")) },
		func() { _ = snap.byName["node-b"].RemovePod(pods[1]) },
	}
	for i, change := range changes {
		change()
		gotF, gotS := outcome(t, pl, snap, pod)
		p, err := New(context.Background(), nil, &fakeHandle{snap: snap})
		if err != nil {
			t.Fatal(err)
		}
		fresh := p.(*Plugin)
		wantF, wantS := outcome(t, fresh, snap, pod)
		if !reflect.DeepEqual(gotF, wantF) || !reflect.DeepEqual(gotS, wantS) {
			t.Errorf("after change %d: remembered %v %v, fresh %v %v", i, gotF, gotS, wantF, wantS)
		}
	}
}

// TestMemoConcurrentCycles runs cycles of one plugin at once (as preemption's dry runs may):
// all agree with a lone cycle, and the race detector sees no race.
func TestMemoConcurrentCycles(t *testing.T) {
	pod := st.MakePod().Name("p").Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "web").
		PreferredPodAffinity(7, "zone", "app", "db").Obj()
	pods := []*v1.Pod{appPod("d1", "node-a", "db"), appPod("w1", "node-b", "web")}
	pl, snap := newPlugin(t, nil, pods, fourNodes(), nil)
	wantF, wantS := outcome(t, pl, snap, pod)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if f, s := outcome(t, pl, snap, pod); !reflect.DeepEqual(f, wantF) || !reflect.DeepEqual(s, wantS) {
					t.Errorf("concurrent cycle: %v %v, want %v %v", f, s, wantF, wantS)
					return
				}
			}
		}()
	}
	wg.Wait()
}
