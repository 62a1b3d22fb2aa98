package podtopologyspread

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

var (
	fooSelector  = st.ExistsSelector("foo")
	barSelector  = st.ExistsSelector("bar")
	honorPolicy  = v1.NodeInclusionPolicyHonor
	ignorePolicy = v1.NodeInclusionPolicyIgnore
	taints       = []v1.Taint{{Key: v1.TaintNodeUnschedulable, Effect: v1.TaintEffectNoSchedule}}
)

func zoneNode(name, zone string) *v1.Node {
	return st.MakeNode().Name(name).Label("zone", zone).Obj()
}

func fooPod(name, node string) *v1.Pod {
	return st.MakePod().Name(name).Node(node).Label("foo", "").Obj()
}

// fourNodes are node-a, node-b in zone1 and node-x, node-y in zone2.
func fourNodes() []*v1.Node {
	return []*v1.Node{zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"), zoneNode("node-x", "zone2"), zoneNode("node-y", "zone2")}
}

// result is a node's Filter outcome: "" for success, else code and reason.
type result struct {
	code   framework.Code
	reason string
}

var (
	fits       = result{}
	tooSkewed  = result{framework.Unschedulable, ErrReasonConstraintsNotMatch}
	noTopology = result{framework.UnschedulableAndUnresolvable, ErrReasonNodeLabelNotMatch}
)

func statusResult(s *framework.Status) result {
	if s.IsSuccess() {
		return fits
	}
	return result{s.Code(), s.Message()}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name  string
		pod   *v1.Pod
		pods  []*v1.Pod
		nodes []*v1.Node
		want  map[string]result
	}{
		{
			name:  "no existing pods: every node fits",
			pod:   st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": fits, "node-y": fits},
		},
		{
			name:  "maxSkew 1 held across two zones: 2/1 sends the pod to zone2",
			pod:   st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b"), fooPod("x1", "node-x")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": fits, "node-y": fits},
		},
		{
			name:  "zones 2/2: either zone keeps skew 1",
			pod:   st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b"), fooPod("x1", "node-x"), fooPod("y1", "node-y")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": fits, "node-y": fits},
		},
		{
			name:  "the incoming pod does not match itself: 2/1 is still within maxSkew",
			pod:   st.MakePod().Name("p").Label("bar", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b"), fooPod("x1", "node-x")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": fits, "node-y": fits},
		},
		{
			name: "a node without the topology key cannot host the pod, and its pods do not count",
			pod:  st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{fooPod("a1", "node-a"), fooPod("n1", "node-n"), fooPod("n2", "node-n")},
			nodes: []*v1.Node{
				zoneNode("node-a", "zone1"), zoneNode("node-x", "zone2"), st.MakeNode().Name("node-n").Obj(),
			},
			want: map[string]result{"node-a": tooSkewed, "node-x": fits, "node-n": noTopology},
		},
		{
			name: "hostname spread 2/1/0/3 with maxSkew 1: only the empty node fits",
			pod:  st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b"),
				fooPod("y1", "node-y"), fooPod("y2", "node-y"), fooPod("y3", "node-y"),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": fits, "node-y": tooSkewed},
		},
		{
			name: "hostname spread 2/1/0/3 with maxSkew 2",
			pod:  st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(2, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b"),
				fooPod("y1", "node-y"), fooPod("y2", "node-y"), fooPod("y3", "node-y"),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": fits, "node-x": fits, "node-y": tooSkewed},
		},
		{
			name: "pods in other namespaces and terminating pods do not count",
			pod:  st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("a1").Namespace("other").Node("node-a").Label("foo", "").Obj(),
				st.MakePod().Name("a2").Node("node-a").Label("foo", "").Terminating().Obj(),
				fooPod("x1", "node-x"),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": tooSkewed, "node-y": tooSkewed},
		},
		{
			name: "minDomains above the domain count makes the global minimum 0",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(2, v1.LabelHostname, v1.DoNotSchedule, fooSelector, ptr.To[int32](4), nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b"), fooPod("b2", "node-b"), fooPod("x1", "node-x"),
			},
			nodes: []*v1.Node{zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"), zoneNode("node-x", "zone2")},
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": fits},
		},
		{
			name: "minDomains met: the least loaded domain is the minimum",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(2, v1.LabelHostname, v1.DoNotSchedule, fooSelector, ptr.To[int32](2), nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b"), fooPod("b2", "node-b"), fooPod("x1", "node-x"),
			},
			nodes: []*v1.Node{zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"), zoneNode("node-x", "zone2")},
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": fits},
		},
		{
			name: "minDomains on zones: 2/1 with 3 required domains leaves only zone2",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(2, "zone", v1.DoNotSchedule, fooSelector, ptr.To[int32](3), nil, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b"), fooPod("x1", "node-x")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": fits, "node-y": fits},
		},
		{
			name: "node affinity honored: nodes the pod cannot go to are not domains",
			pod: st.MakePod().Name("p").Label("foo", "").NodeAffinityIn("zone", "zone1").
				TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b")},
			nodes: fourNodes(),
			// Domains a=2, b=1 only: min 1. (node-x/node-y are not domains and count 0.)
			want: map[string]result{"node-a": tooSkewed, "node-b": fits, "node-x": fits, "node-y": fits},
		},
		{
			name: "node affinity ignored: every node is a domain",
			pod: st.MakePod().Name("p").Label("foo", "").NodeAffinityIn("zone", "zone1").
				TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, &ignorePolicy, nil, nil).Obj(),
			pods:  []*v1.Pod{fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": fits, "node-y": fits},
		},
		{
			name: "node taints honored: an untolerated tainted node is not a domain",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, &honorPolicy, nil).Obj(),
			pods: []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b")},
			nodes: []*v1.Node{
				zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"),
				st.MakeNode().Name("node-c").Label("zone", "zone1").Taints(taints...).Obj(),
			},
			want: map[string]result{"node-a": fits, "node-b": fits, "node-c": fits},
		},
		{
			name: "node taints ignored (default): the empty tainted node is the minimum",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{fooPod("a1", "node-a"), fooPod("b1", "node-b")},
			nodes: []*v1.Node{
				zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"),
				st.MakeNode().Name("node-c").Label("zone", "zone1").Taints(taints...).Obj(),
			},
			want: map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-c": fits},
		},
		{
			name: "two constraints: zone and hostname must both hold",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).Obj(),
			// zone1: 3, zone2: 3; hosts a=2 b=1 x=3 y=0
			pods: []*v1.Pod{
				fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("b1", "node-b"),
				fooPod("x1", "node-x"), fooPod("x2", "node-x"), fooPod("x3", "node-x"),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": tooSkewed, "node-b": tooSkewed, "node-x": tooSkewed, "node-y": fits},
		},
		{
			name: "matchLabelKeys narrow the selector to the pod's own version",
			pod: st.MakePod().Name("p").Label("foo", "").Label("version", "v2").
				TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, []string{"version"}).Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("a1").Node("node-a").Label("foo", "").Label("version", "v1").Obj(),
				st.MakePod().Name("a2").Node("node-a").Label("foo", "").Label("version", "v1").Obj(),
				st.MakePod().Name("x1").Node("node-x").Label("foo", "").Label("version", "v2").Obj(),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": tooSkewed, "node-y": tooSkewed},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl, snap := newPlugin(t, nil, tt.pods, tt.nodes)
			state := framework.NewCycleState()
			if _, s := pl.PreFilter(ctx, state, tt.pod, snap.infos); !s.IsSuccess() {
				t.Fatalf("PreFilter: %v", s)
			}
			for _, ni := range snap.infos {
				got := statusResult(pl.Filter(ctx, state, tt.pod, ni))
				if want := tt.want[ni.Node().Name]; got != want {
					t.Errorf("node %s: got %+v, want %+v", ni.Node().Name, got, want)
				}
			}
		})
	}
}

func TestPreFilterSkip(t *testing.T) {
	tests := []struct {
		name string
		pod  *v1.Pod
	}{
		{name: "no constraints and no owners", pod: st.MakePod().Name("p").Label("foo", "").Obj()},
		{name: "only ScheduleAnyway constraints", pod: st.MakePod().Name("p").Label("foo", "").
			TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, snap := newPlugin(t, nil, nil, fourNodes())
			if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), tt.pod, snap.infos); !s.IsSkip() {
				t.Errorf("got %v, want Skip", s)
			}
		})
	}
}

// TestAddRemovePod checks that PreFilter's state, updated by AddPod or RemovePod, filters as a
// fresh PreFilter over the changed cluster does.
func TestAddRemovePod(t *testing.T) {
	pod := st.MakePod().Name("p").Label("foo", "").NodeAffinityIn("zone", "zone1", "zone2").
		TopologySpreadConstraint(1, "zone", v1.DoNotSchedule, fooSelector, nil, nil, nil, nil).
		TopologySpreadConstraint(1, v1.LabelHostname, v1.DoNotSchedule, fooSelector, ptr.To[int32](3), nil, &honorPolicy, nil).Obj()
	nodes := func() []*v1.Node {
		return []*v1.Node{
			zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"), zoneNode("node-x", "zone2"),
			st.MakeNode().Name("node-t").Label("zone", "zone2").Taints(taints...).Obj(),
			zoneNode("node-z", "zone3"), // outside the pod's node affinity
			st.MakeNode().Name("node-n").Obj(),
		}
	}
	base := []*v1.Pod{fooPod("a1", "node-a"), fooPod("a2", "node-a"), fooPod("x1", "node-x")}
	changes := []*v1.Pod{
		fooPod("new-a", "node-a"),
		fooPod("new-b", "node-b"),
		fooPod("new-x", "node-x"),
		fooPod("new-t", "node-t"),
		fooPod("new-z", "node-z"),
		fooPod("new-n", "node-n"),
		st.MakePod().Name("other-ns").Namespace("other").Node("node-b").Label("foo", "").Obj(),
		st.MakePod().Name("unmatched").Node("node-b").Label("bar", "").Obj(),
		st.MakePod().Name("terminating").Node("node-b").Label("foo", "").Terminating().Obj(),
	}
	filterAll := func(pl *Plugin, state *framework.CycleState, infos []*framework.NodeInfo) map[string]result {
		out := map[string]result{}
		for _, ni := range infos {
			out[ni.Node().Name] = statusResult(pl.Filter(context.Background(), state, pod, ni))
		}
		return out
	}
	prefilter := func(pods []*v1.Pod) (*Plugin, *snapshot, *framework.CycleState) {
		pl, snap := newPlugin(t, nil, pods, nodes())
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(context.Background(), state, pod, snap.infos); !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		return pl, snap, state
	}
	for _, change := range changes {
		t.Run("add "+change.Name, func(t *testing.T) {
			pl, snap, state := prefilter(base)
			clone := state.Clone()
			ni := snap.byName[change.Spec.NodeName]
			if s := pl.AddPod(context.Background(), state, pod, framework.NewPodInfo(change), ni); !s.IsSuccess() {
				t.Fatalf("AddPod: %v", s)
			}
			wantPl, wantSnap, wantState := prefilter(append(append([]*v1.Pod{}, base...), change))
			got, want := filterAll(pl, state, snap.infos), filterAll(wantPl, wantState, wantSnap.infos)
			for n := range want {
				if got[n] != want[n] {
					t.Errorf("node %s: after AddPod %+v, fresh PreFilter %+v", n, got[n], want[n])
				}
			}
			// The clone taken before is unchanged.
			if before := filterAll(pl, clone, snap.infos); len(before) != len(want) {
				t.Errorf("clone lost nodes")
			} else {
				_, _, orig := prefilter(base)
				for n, r := range filterAll(pl, orig, snap.infos) {
					if before[n] != r {
						t.Errorf("node %s: clone changed with the original: %+v, want %+v", n, before[n], r)
					}
				}
			}
		})
		t.Run("remove "+change.Name, func(t *testing.T) {
			pl, snap, state := prefilter(append(append([]*v1.Pod{}, base...), change))
			ni := snap.byName[change.Spec.NodeName]
			if s := pl.RemovePod(context.Background(), state, pod, framework.NewPodInfo(change), ni); !s.IsSuccess() {
				t.Fatalf("RemovePod: %v", s)
			}
			wantPl, wantSnap, wantState := prefilter(base)
			got, want := filterAll(pl, state, snap.infos), filterAll(wantPl, wantState, wantSnap.infos)
			for n := range want {
				if got[n] != want[n] {
					t.Errorf("node %s: after RemovePod %+v, fresh PreFilter %+v", n, got[n], want[n])
				}
			}
			s, _ := getPreFilterState(state)
			fresh, _ := getPreFilterState(wantState)
			for i := range s.counts {
				for v, c := range fresh.counts[i] {
					if s.counts[i][v] != c {
						t.Errorf("constraint %d domain %q: count %d, fresh %d", i, v, s.counts[i][v], c)
					}
				}
				if s.minMatchNum(i) != fresh.minMatchNum(i) {
					t.Errorf("constraint %d: min %d, fresh %d", i, s.minMatchNum(i), fresh.minMatchNum(i))
				}
			}
		})
	}
}

func TestCriticalPaths(t *testing.T) {
	p := newCriticalPaths()
	for _, u := range []struct {
		value string
		num   int
	}{{"a", 3}, {"b", 1}, {"c", 2}} {
		p.update(u.value, u.num)
	}
	if p[0].TopologyValue != "b" || p[0].MatchNum != 1 || p[1].TopologyValue != "c" || p[1].MatchNum != 2 {
		t.Fatalf("got %+v, want b=1, c=2", p)
	}
	// The least loaded domain grows past the second: they swap.
	p.update("b", 5)
	if p[0].TopologyValue != "c" || p[0].MatchNum != 2 {
		t.Fatalf("got %+v, want c=2 first", p)
	}
}
