package podtopologyspread

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
	if _, s := pl.PreFilter(ctx, state, pod, snap.infos); !s.IsSuccess() {
		t.Errorf("PreFilter: %v", s) // not Fatal: called from several goroutines
		return nil, nil
	}
	for _, ni := range snap.infos {
		filters[ni.Node().Name] = statusResult(pl.Filter(ctx, state, pod, ni))
	}
	if s := pl.PreScore(ctx, state, pod, snap.infos); !s.IsSuccess() {
		t.Errorf("PreScore: %v", s)
		return nil, nil
	}
	var list framework.NodeScoreList
	for _, ni := range snap.infos {
		score, _ := pl.Score(ctx, state, pod, ni)
		list = append(list, framework.NodeScore{Name: ni.Node().Name, Score: score})
	}
	pl.NormalizeScore(ctx, state, pod, list)
	scores := map[string]int64{}
	for _, ns := range list {
		scores[ns.Name] = ns.Score
	}
	return filters, scores
}

var memoPod = st.MakePod().Name("p").Label("foo", "").
	TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
	TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
	TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj()

// TestCountsAcrossCycles changes the cluster between cycles of one plugin and expects the
// same answers as a plugin that remembers nothing.
func TestCountsAcrossCycles(t *testing.T) {
	pods := []*v1.Pod{fooPod("a1", "node-a"), fooPod("x1", "node-x"), fooPod("x2", "node-x")}
	pl, snap := newPlugin(t, nil, pods, fourNodes())
	changes := []func(){
		func() {},
		func() { snap.byName["node-b"].AddPod(framework.NewPodInfo(fooPod("b1", "node-b"))) },
		func() { _ = snap.byName["node-x"].RemovePod(pods[2]) },
		func() {
			snap.byName["node-y"].AddPod(framework.NewPodInfo(st.MakePod().Name("y1").Node("node-y").Label("foo", "").Terminating().Obj()))
		},
		func() { snap.byName["node-b"].SetNode(zoneNode("node-b", "zone2")) },
	}
	for i, change := range changes {
		change()
		gotF, gotS := outcome(t, pl, snap, memoPod)
		p, err := New(context.Background(), nil, &fakeHandle{snap: snap})
		if err != nil {
			t.Fatal(err)
		}
		wantF, wantS := outcome(t, p.(*Plugin), snap, memoPod)
		if !reflect.DeepEqual(gotF, wantF) || !reflect.DeepEqual(gotS, wantS) {
			t.Errorf("after change %d: remembered %v %v, fresh %v %v", i, gotF, gotS, wantF, wantS)
		}
	}
}

// TestCountsConcurrentCycles runs cycles of one plugin at once: all agree with a lone cycle,
// and the race detector sees no race.
func TestCountsConcurrentCycles(t *testing.T) {
	pods := []*v1.Pod{fooPod("a1", "node-a"), fooPod("x1", "node-x"), fooPod("x2", "node-x")}
	pl, snap := newPlugin(t, nil, pods, fourNodes())
	wantF, wantS := outcome(t, pl, snap, memoPod)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if f, s := outcome(t, pl, snap, memoPod); !reflect.DeepEqual(f, wantF) || !reflect.DeepEqual(s, wantS) {
					t.Errorf("concurrent cycle: %v %v, want %v %v", f, s, wantF, wantS)
					return
				}
			}
		}()
	}
	wg.Wait()
}
