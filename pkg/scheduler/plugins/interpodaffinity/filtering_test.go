package interpodaffinity

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func zoneNode(name, zone string) *v1.Node { return st.MakeNode().Name(name).Label("zone", zone).Obj() }

// appPod is a pod with label app=<app> on node (none when "").
func appPod(name, node, app string) *v1.Pod {
	return st.MakePod().Name(name).Node(node).Label("app", app).Obj()
}

// fourNodes are node-a, node-b in zone1 and node-x, node-y in zone2.
func fourNodes() []*v1.Node {
	return []*v1.Node{zoneNode("node-a", "zone1"), zoneNode("node-b", "zone1"), zoneNode("node-x", "zone2"), zoneNode("node-y", "zone2")}
}

type result struct {
	code   framework.Code
	reason string
}

var (
	fits          = result{}
	noAffinity    = result{framework.UnschedulableAndUnresolvable, ErrReasonAffinityRulesNotMatch}
	antiAffinity  = result{framework.Unschedulable, ErrReasonAntiAffinityRulesNotMatch}
	existingAnti  = result{framework.Unschedulable, ErrReasonExistingAntiAffinityRulesNotMatch}
	teamNamespace = map[string]map[string]string{
		"default": {"team": "web"},
		"other":   {"team": "db"},
		"third":   {"team": "ops"},
	}
)

func statusResult(s *framework.Status) result {
	if s.IsSuccess() {
		return fits
	}
	return result{s.Code(), s.Message()}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		pods       []*v1.Pod
		nodes      []*v1.Node
		namespaces map[string]map[string]string
		want       map[string]result
	}{
		{
			name:  "anti-affinity on hostname: one per node",
			pod:   st.MakePod().Name("p").Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj(),
			pods:  []*v1.Pod{appPod("w1", "node-a", "web"), appPod("d1", "node-b", "db")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": antiAffinity, "node-b": fits, "node-x": fits, "node-y": fits},
		},
		{
			name:  "anti-affinity on zone: the whole zone is out",
			pod:   st.MakePod().Name("p").Label("app", "web").PodAntiAffinity("zone", "app", "web").Obj(),
			pods:  []*v1.Pod{appPod("w1", "node-a", "web")},
			nodes: append(fourNodes(), st.MakeNode().Name("node-n").Obj()),
			// A node without the key is in no domain, so nothing there conflicts.
			want: map[string]result{"node-a": antiAffinity, "node-b": antiAffinity, "node-x": fits, "node-y": fits, "node-n": fits},
		},
		{
			name:  "affinity to a pod in the same zone",
			pod:   st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").Obj(),
			pods:  []*v1.Pod{appPod("d1", "node-a", "db")},
			nodes: append(fourNodes(), st.MakeNode().Name("node-n").Obj()),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": noAffinity, "node-y": noAffinity, "node-n": noAffinity},
		},
		{
			name:  "first pod of a self-affine group goes anywhere with the key",
			pod:   st.MakePod().Name("p").Label("app", "db").PodAffinity("zone", "app", "db").Obj(),
			pods:  []*v1.Pod{appPod("w1", "node-a", "web")},
			nodes: append(fourNodes(), st.MakeNode().Name("node-n").Obj()),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": fits, "node-y": fits, "node-n": noAffinity},
		},
		{
			name:  "no matching pod and the pod does not match itself: nowhere",
			pod:   st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").Obj(),
			pods:  []*v1.Pod{appPod("w1", "node-a", "web")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": noAffinity, "node-b": noAffinity, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name:  "once a matching pod exists, a self-affine pod must join it",
			pod:   st.MakePod().Name("p").Label("app", "db").PodAffinity("zone", "app", "db").Obj(),
			pods:  []*v1.Pod{appPod("d1", "node-x", "db")},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": noAffinity, "node-b": noAffinity, "node-x": fits, "node-y": fits},
		},
		{
			name: "two affinity terms need one pod matching both",
			pod: st.MakePod().Name("p").Label("app", "web").
				RequiredPodAffinityTerm(st.MakeAffinityTerm("zone").In("app", "db").Obj()).
				RequiredPodAffinityTerm(st.MakeAffinityTerm(v1.LabelHostname).Exists("primary").Obj()).Obj(),
			pods: []*v1.Pod{
				appPod("d1", "node-a", "db"),
				st.MakePod().Name("p1").Node("node-b").Label("primary", "").Obj(),
				st.MakePod().Name("d2").Node("node-x").Label("app", "db").Label("primary", "").Obj(),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": noAffinity, "node-b": noAffinity, "node-x": fits, "node-y": noAffinity},
		},
		{
			name: "an existing pod's anti-affinity keeps the pod out of its zone",
			pod:  st.MakePod().Name("p").Label("app", "web").Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("d1").Node("node-a").Label("app", "db").PodAntiAffinity("zone", "app", "web").Obj(),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": existingAnti, "node-b": existingAnti, "node-x": fits, "node-y": fits},
		},
		{
			name: "affinity is checked before anti-affinity, anti-affinity before existing pods'",
			pod:  st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").PodAntiAffinity(v1.LabelHostname, "app", "cache").Obj(),
			pods: []*v1.Pod{
				appPod("d1", "node-a", "db"), appPod("c1", "node-a", "cache"),
				st.MakePod().Name("o1").Node("node-b").Label("app", "ops").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj(),
			},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": antiAffinity, "node-b": existingAnti, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name:  "terms select the pod's own namespace by default",
			pod:   st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").Obj(),
			pods:  []*v1.Pod{st.MakePod().Name("d1").Namespace("other").Node("node-a").Label("app", "db").Obj()},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": noAffinity, "node-b": noAffinity, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name: "listed namespaces",
			pod: st.MakePod().Name("p").Label("app", "web").
				RequiredPodAffinityTerm(st.MakeAffinityTerm("zone").In("app", "db").Namespaces("other").Obj()).Obj(),
			pods:  []*v1.Pod{st.MakePod().Name("d1").Namespace("other").Node("node-a").Label("app", "db").Obj()},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name: "a namespace selector, with the namespace informer",
			pod: st.MakePod().Name("p").Label("app", "web").
				RequiredPodAffinityTerm(st.MakeAffinityTerm("zone").In("app", "db").NamespaceSelector(map[string]string{"team": "db"}).Obj()).Obj(),
			pods:       []*v1.Pod{st.MakePod().Name("d1").Namespace("other").Node("node-a").Label("app", "db").Obj()},
			nodes:      fourNodes(),
			namespaces: teamNamespace,
			want:       map[string]result{"node-a": fits, "node-b": fits, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name: "a namespace selector without namespace informer selects no namespace",
			pod: st.MakePod().Name("p").Label("app", "web").
				RequiredPodAffinityTerm(st.MakeAffinityTerm("zone").In("app", "db").NamespaceSelector(map[string]string{"team": "db"}).Obj()).Obj(),
			pods:  []*v1.Pod{st.MakePod().Name("d1").Namespace("other").Node("node-a").Label("app", "db").Obj()},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": noAffinity, "node-b": noAffinity, "node-x": noAffinity, "node-y": noAffinity},
		},
		{
			name: "an empty namespace selector selects all namespaces",
			pod: st.MakePod().Name("p").Label("app", "web").
				RequiredPodAntiAffinityTerm(st.MakeAffinityTerm("zone").In("app", "db").NamespaceSelector(map[string]string{}).Obj()).Obj(),
			pods:  []*v1.Pod{st.MakePod().Name("d1").Namespace("third").Node("node-x").Label("app", "db").Obj()},
			nodes: fourNodes(),
			want:  map[string]result{"node-a": fits, "node-b": fits, "node-x": antiAffinity, "node-y": antiAffinity},
		},
		{
			name: "an existing pod's namespace selector is matched against the incoming pod's namespace",
			pod:  st.MakePod().Name("p").Label("app", "web").Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("d1").Namespace("other").Node("node-a").Label("app", "db").
					RequiredPodAntiAffinityTerm(st.MakeAffinityTerm("zone").In("app", "web").NamespaceSelector(map[string]string{"team": "web"}).Obj()).Obj(),
				st.MakePod().Name("d2").Namespace("other").Node("node-x").Label("app", "db").
					RequiredPodAntiAffinityTerm(st.MakeAffinityTerm("zone").In("app", "web").NamespaceSelector(map[string]string{"team": "ops"}).Obj()).Obj(),
			},
			nodes:      fourNodes(),
			namespaces: teamNamespace,
			want:       map[string]result{"node-a": existingAnti, "node-b": existingAnti, "node-x": fits, "node-y": fits},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			pl, snap := newPlugin(t, nil, tt.pods, tt.nodes, tt.namespaces)
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

func TestPreFilterSkipAndErrors(t *testing.T) {
	nodes := fourNodes()
	t.Run("no terms and no existing anti-affinity: Skip", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, []*v1.Pod{appPod("w1", "node-a", "web")}, nodes, nil)
		if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), appPod("p", "", "web"), snap.infos); !s.IsSkip() {
			t.Errorf("got %v, want Skip", s)
		}
	})
	t.Run("existing anti-affinity the pod does not match: Skip", func(t *testing.T) {
		pods := []*v1.Pod{st.MakePod().Name("d1").Node("node-a").Label("app", "db").PodAntiAffinity("zone", "app", "db").Obj()}
		pl, snap := newPlugin(t, nil, pods, nodes, nil)
		if _, s := pl.PreFilter(context.Background(), framework.NewCycleState(), appPod("p", "", "web"), snap.infos); !s.IsSkip() {
			t.Errorf("got %v, want Skip", s)
		}
	})
	t.Run("a term that does not parse: unresolvable", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, nil, nodes, nil)
		pod := st.MakePod().Name("p").PodAffinity("zone", "app", "{{bad}}").Obj()
		_, s := pl.PreFilter(context.Background(), framework.NewCycleState(), pod, snap.infos)
		if s.Code() != framework.UnschedulableAndUnresolvable || !strings.HasPrefix(s.Message(), "parsing pod: ") {
			t.Errorf("got %v", s)
		}
	})
}

// TestAddRemovePod checks that PreFilter's state, updated by AddPod or RemovePod, filters as a
// fresh PreFilter over the changed cluster does.
func TestAddRemovePod(t *testing.T) {
	pods := map[string]*v1.Pod{
		"affine":  st.MakePod().Name("p").Label("app", "web").PodAffinity("zone", "app", "db").Obj(),
		"self":    st.MakePod().Name("p").Label("app", "db").PodAffinity("zone", "app", "db").Obj(),
		"anti":    st.MakePod().Name("p").Label("app", "web").PodAntiAffinity(v1.LabelHostname, "app", "web").Obj(),
		"plain":   st.MakePod().Name("p").Label("app", "web").Obj(),
		"antiKey": st.MakePod().Name("p").Label("app", "web").PodAntiAffinity("rack", "app", "web").Obj(),
	}
	base := []*v1.Pod{
		appPod("d1", "node-a", "db"), appPod("w1", "node-x", "web"),
		st.MakePod().Name("o1").Node("node-y").Label("app", "ops").PodAntiAffinity("zone", "app", "web").Obj(),
	}
	changes := []*v1.Pod{
		appPod("d2", "node-y", "db"),
		appPod("w2", "node-b", "web"),
		appPod("w3", "node-r", "web"),
		st.MakePod().Name("o2").Node("node-a").Label("app", "ops").PodAntiAffinity("zone", "app", "web").Obj(),
		st.MakePod().Name("o3").Node("node-r").Label("app", "ops").PodAntiAffinity("rack", "app", "web").Obj(),
	}
	nodes := func() []*v1.Node {
		return append(fourNodes(), st.MakeNode().Name("node-r").Label("zone", "zone3").Label("rack", "r1").Obj())
	}
	for podName, pod := range pods {
		filterAll := func(pl *Plugin, state *framework.CycleState, infos []*framework.NodeInfo) map[string]result {
			out := map[string]result{}
			for _, ni := range infos {
				out[ni.Node().Name] = statusResult(pl.Filter(context.Background(), state, pod, ni))
			}
			return out
		}
		prefilter := func(t *testing.T, existing []*v1.Pod) (*Plugin, *snapshot, *framework.CycleState, bool) {
			pl, snap := newPlugin(t, nil, existing, nodes(), nil)
			state := framework.NewCycleState()
			_, s := pl.PreFilter(context.Background(), state, pod, snap.infos)
			if !s.IsSuccess() && !s.IsSkip() {
				t.Fatalf("PreFilter: %v", s)
			}
			return pl, snap, state, s.IsSkip()
		}
		// compare expects the updated state to filter as the fresh one; a skipped PreFilter
		// filters everything in.
		compare := func(t *testing.T, pl *Plugin, snap *snapshot, state *framework.CycleState, fresh []*v1.Pod) {
			got := filterAll(pl, state, snap.infos)
			wantPl, wantSnap, wantState, skipped := prefilter(t, fresh)
			want := map[string]result{}
			if !skipped {
				want = filterAll(wantPl, wantState, wantSnap.infos)
			}
			for _, ni := range snap.infos {
				n := ni.Node().Name
				if got[n] != want[n] {
					t.Errorf("node %s: updated state %+v, fresh PreFilter %+v", n, got[n], want[n])
				}
			}
		}
		for _, change := range changes {
			with := append(append([]*v1.Pod{}, base...), change)
			t.Run(podName+"/add "+change.Name, func(t *testing.T) {
				pl, snap, state, skipped := prefilter(t, base)
				if skipped {
					return // nothing to update; the runtime would not call AddPod
				}
				before := state.Clone()
				if s := pl.AddPod(context.Background(), state, pod, framework.NewPodInfo(change), snap.byName[change.Spec.NodeName]); !s.IsSuccess() {
					t.Fatalf("AddPod: %v", s)
				}
				compare(t, pl, snap, state, with)
				compare(t, pl, snap, before, base) // the clone did not change with it
			})
			t.Run(podName+"/remove "+change.Name, func(t *testing.T) {
				pl, snap, state, skipped := prefilter(t, with)
				if skipped {
					return
				}
				if s := pl.RemovePod(context.Background(), state, pod, framework.NewPodInfo(change), snap.byName[change.Spec.NodeName]); !s.IsSuccess() {
					t.Fatalf("RemovePod: %v", s)
				}
				compare(t, pl, snap, state, base)
			})
		}
	}
}
