package runtime

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

var testPod = st.MakePod().Name("p").Priority(10).Obj()

func nodeSet(ns ...string) *framework.PreFilterResult {
	return &framework.PreFilterResult{NodeNames: sets.New(ns...)}
}

func TestRunPreFilterPlugins(t *testing.T) {
	type behaviour func(*v1.Pod, []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status)
	result := func(r *framework.PreFilterResult, s *framework.Status) behaviour {
		return func(*v1.Pod, []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) { return r, s }
	}
	tests := []struct {
		name          string
		plugins       map[string]behaviour // A, B, C run in that order
		wantNodes     sets.Set[string]     // nil: all nodes
		wantCode      framework.Code
		wantMessage   string
		wantPlugin    string
		wantSkip      sets.Set[string]
		wantNarrowing sets.Set[string]
		wantCalls     []string
	}{
		{
			name:          "results intersect",
			plugins:       map[string]behaviour{"A": result(nodeSet("n1", "n2"), nil), "B": result(nodeSet("n2", "n3"), nil), "C": result(nil, nil)},
			wantNodes:     sets.New("n2"),
			wantNarrowing: sets.New("A", "B"),
			wantSkip:      sets.New[string](),
			wantCalls:     []string{"A.PreFilter", "B.PreFilter", "C.PreFilter"},
		},
		{
			name:          "Skip is recorded for Filter",
			plugins:       map[string]behaviour{"A": result(nil, framework.NewStatus(framework.Skip)), "B": result(nil, nil)},
			wantSkip:      sets.New("A"),
			wantNarrowing: sets.New[string](),
			wantCalls:     []string{"A.PreFilter", "B.PreFilter"},
		},
		{
			name:        "UnschedulableAndUnresolvable stops at once",
			plugins:     map[string]behaviour{"A": result(nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "never")), "B": result(nil, nil)},
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantMessage: "never",
			wantPlugin:  "A",
			wantSkip:    sets.New[string](),
			wantCalls:   []string{"A.PreFilter"},
		},
		{
			name:          "Unschedulable lets the others run",
			plugins:       map[string]behaviour{"A": result(nil, framework.NewStatus(framework.Unschedulable, "not now")), "B": result(nil, nil)},
			wantCode:      framework.Unschedulable,
			wantMessage:   "not now",
			wantPlugin:    "A",
			wantSkip:      sets.New[string](),
			wantNarrowing: sets.New[string](),
			wantCalls:     []string{"A.PreFilter", "B.PreFilter"},
		},
		{
			name:        "Error stops and is wrapped",
			plugins:     map[string]behaviour{"A": result(nil, framework.NewStatus(framework.Error, "boom")), "B": result(nil, nil)},
			wantCode:    framework.Error,
			wantMessage: `running PreFilter plugin "A": boom`,
			wantPlugin:  "A",
			wantSkip:    sets.New[string](),
			wantCalls:   []string{"A.PreFilter"},
		},
		{
			name:          "one plugin leaves no node",
			plugins:       map[string]behaviour{"A": result(nodeSet(), nil), "B": result(nil, nil)},
			wantNodes:     sets.New[string](),
			wantCode:      framework.UnschedulableAndUnresolvable,
			wantMessage:   "node(s) didn't satisfy plugin A",
			wantSkip:      sets.New[string](),
			wantNarrowing: sets.New("A"),
			wantCalls:     []string{"A.PreFilter"},
		},
		{
			name:          "two plugins leave no node together",
			plugins:       map[string]behaviour{"A": result(nodeSet("n1"), nil), "B": result(nodeSet("n2"), nil), "C": result(nil, nil)},
			wantNodes:     sets.New[string](),
			wantCode:      framework.UnschedulableAndUnresolvable,
			wantMessage:   "node(s) didn't satisfy plugin(s) [A B] simultaneously",
			wantSkip:      sets.New[string](),
			wantNarrowing: sets.New("A", "B"),
			wantCalls:     []string{"A.PreFilter", "B.PreFilter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			var plugins []framework.Plugin
			for _, n := range []string{"A", "B", "C"} {
				if b, ok := tt.plugins[n]; ok {
					plugins = append(plugins, filterPlugin{&fake{name: n, log: log, preFilter: b}})
				}
			}
			f := newFramework(t, plugins, nil, WithSnapshotSharedLister(lister(makeNodes("n1", "n2", "n3"))))
			state := newState(f)
			r, s, narrowing := f.RunPreFilterPlugins(context.Background(), state, testPod)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			var gotNodes sets.Set[string]
			if r != nil {
				gotNodes = r.NodeNames
			}
			if diff := cmp.Diff(tt.wantNodes, gotNodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNarrowing, narrowing); diff != "" {
				t.Errorf("narrowing plugins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkip, state.SkipFilterPlugins); diff != "" {
				t.Errorf("SkipFilterPlugins (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunPreFilterPluginsPassesSnapshotNodes(t *testing.T) {
	var got []string
	p := filterPlugin{&fake{name: "A", preFilter: func(_ *v1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
		for _, n := range nodes {
			got = append(got, n.Node().Name)
		}
		return nil, nil
	}}}
	f := newFramework(t, []framework.Plugin{p}, nil, WithSnapshotSharedLister(lister(makeNodes("n1", "n2"))))
	if _, s, _ := f.RunPreFilterPlugins(context.Background(), framework.NewCycleState(), testPod); !s.IsSuccess() {
		t.Fatal(s)
	}
	if diff := cmp.Diff([]string{"n1", "n2"}, got); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

func TestRunFilterPlugins(t *testing.T) {
	reject := func(code framework.Code, msg string) func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
		return func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
			return framework.NewStatus(code, msg)
		}
	}
	tests := []struct {
		name        string
		filters     map[string]func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status
		skip        sets.Set[string]
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantCalls   []string
	}{
		{
			name:      "all pass",
			filters:   map[string]func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status{},
			wantCalls: []string{"A.Filter", "B.Filter", "C.Filter"},
		},
		{
			name:        "first rejection stops, with the plugin's name",
			filters:     map[string]func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status{"B": reject(framework.Unschedulable, "Insufficient cpu")},
			wantCode:    framework.Unschedulable,
			wantMessage: "Insufficient cpu",
			wantPlugin:  "B",
			wantCalls:   []string{"A.Filter", "B.Filter"},
		},
		{
			name:      "skipped plugins do not run",
			filters:   map[string]func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status{"A": reject(framework.Unschedulable, "no")},
			skip:      sets.New("A"),
			wantCalls: []string{"B.Filter", "C.Filter"},
		},
		{
			name:        "anything but a rejection is an Error",
			filters:     map[string]func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status{"A": reject(framework.Error, "oops")},
			wantCode:    framework.Error,
			wantMessage: `running "A" filter plugin: oops`,
			wantPlugin:  "A",
			wantCalls:   []string{"A.Filter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			var plugins []framework.Plugin
			for _, n := range []string{"A", "B", "C"} {
				plugins = append(plugins, filterOnly{&fake{name: n, log: log, filter: tt.filters[n]}})
			}
			f := newFramework(t, plugins, nil)
			state := newState(f)
			state.SkipFilterPlugins = tt.skip
			s := f.RunFilterPlugins(context.Background(), state, testPod, makeNodes("n1")[0])
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

// addedKey is where the test's AddPod notes the nominated pods it was told about.
const addedKey framework.StateKey = "added"

type addedPods []string

func (a addedPods) Clone() framework.StateData { return append(addedPods(nil), a...) }

func TestRunFilterPluginsWithNominatedPods(t *testing.T) {
	high := framework.NewPodInfo(st.MakePod().Name("high").Priority(100).Obj())
	equal := framework.NewPodInfo(st.MakePod().Name("equal").Priority(10).Obj())
	low := framework.NewPodInfo(st.MakePod().Name("low").Priority(1).Obj())
	self := framework.NewPodInfo(testPod)

	// maxPods rejects a node with n pods or more, as a resource filter would; it also checks
	// that AddPod updated the state it is given along with the node.
	maxPods := func(n int) func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status {
		return func(state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
			var added addedPods
			if d, err := state.Read(addedKey); err == nil {
				added = d.(addedPods)
			}
			if len(added) != len(ni.Pods) {
				return framework.NewStatus(framework.Error, fmt.Sprintf("state knows %d added pods, node has %d", len(added), len(ni.Pods)))
			}
			if len(ni.Pods) >= n {
				return framework.NewStatus(framework.Unschedulable, "Too many pods")
			}
			return nil
		}
	}
	// needsPods accepts a node only with pods on it, as a pod-affinity filter would.
	needsPods := func(state *framework.CycleState, _ *v1.Pod, ni *framework.NodeInfo) *framework.Status {
		if len(ni.Pods) == 0 {
			return framework.NewStatus(framework.Unschedulable, "node(s) didn't match pod affinity rules")
		}
		return nil
	}
	tests := []struct {
		name        string
		nominated   []*framework.PodInfo
		filter      func(*framework.CycleState, *v1.Pod, *framework.NodeInfo) *framework.Status
		wantCode    framework.Code
		wantMessage string
		wantCalls   []string
	}{
		{
			name:      "no nominated pods: one pass",
			filter:    maxPods(1),
			wantCalls: []string{"A.Filter"},
		},
		{
			name:      "lower-priority nominated pods and the pod itself are ignored",
			nominated: []*framework.PodInfo{low, self},
			filter:    maxPods(1),
			wantCalls: []string{"A.Filter"},
		},
		{
			name:      "fits with and without the nominated pods: two passes",
			nominated: []*framework.PodInfo{high, equal, low},
			filter:    maxPods(3),
			wantCalls: []string{"A.AddPod", "A.AddPod", "A.Filter", "A.Filter"},
		},
		{
			name:        "does not fit with the nominated pods: the first pass decides",
			nominated:   []*framework.PodInfo{high},
			filter:      maxPods(1),
			wantCode:    framework.Unschedulable,
			wantMessage: "Too many pods",
			wantCalls:   []string{"A.AddPod", "A.Filter"},
		},
		{
			name:        "fits only with the nominated pods: the second pass rejects",
			nominated:   []*framework.PodInfo{equal},
			filter:      needsPods,
			wantCode:    framework.Unschedulable,
			wantMessage: "node(s) didn't match pod affinity rules",
			wantCalls:   []string{"A.AddPod", "A.Filter", "A.Filter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			p := filterPlugin{&fake{name: "A", log: log, filter: tt.filter,
				addPod: func(state *framework.CycleState, added *framework.PodInfo, _ *framework.NodeInfo) *framework.Status {
					var list addedPods
					if d, err := state.Read(addedKey); err == nil {
						list = d.(addedPods)
					}
					state.Write(addedKey, append(list, added.Pod.Name))
					return nil
				}}}
			f := newFramework(t, []framework.Plugin{p}, nil, WithPodNominator(nominator{"n1": tt.nominated}))
			state := newState(f)
			node := makeNodes("n1")[0]
			s := f.RunFilterPluginsWithNominatedPods(context.Background(), state, testPod, node)
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage {
				t.Errorf("status = %v, want %v: %q", s, tt.wantCode, tt.wantMessage)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
			if len(node.Pods) != 0 {
				t.Errorf("the node itself got %d pods", len(node.Pods))
			}
			if _, err := state.Read(addedKey); err == nil {
				t.Error("the state itself was changed")
			}
		})
	}
}

func TestRunPostFilterPlugins(t *testing.T) {
	nominate := &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatedNodeName: "n1", NominatingMode: framework.ModeOverride}}
	type behaviour func() (*framework.PostFilterResult, *framework.Status)
	ret := func(r *framework.PostFilterResult, s *framework.Status) behaviour {
		return func() (*framework.PostFilterResult, *framework.Status) { return r, s }
	}
	tests := []struct {
		name        string
		a, b        behaviour
		wantResult  *framework.PostFilterResult
		wantCode    framework.Code
		wantMessage string
		wantPlugin  string
		wantCalls   []string
	}{
		{
			name:       "the first success wins",
			a:          ret(nominate, nil),
			b:          ret(nil, nil),
			wantResult: nominate,
			wantCalls:  []string{"A.PostFilter"},
		},
		{
			name:        "all unschedulable: reasons joined, first plugin named, last nomination kept",
			a:           ret(nominate, framework.NewStatus(framework.Unschedulable, "a: no")),
			b:           ret(nil, framework.NewStatus(framework.Unschedulable, "b: no")),
			wantResult:  nominate,
			wantCode:    framework.Unschedulable,
			wantMessage: "a: no, b: no",
			wantPlugin:  "A",
			wantCalls:   []string{"A.PostFilter", "B.PostFilter"},
		},
		{
			name:        "UnschedulableAndUnresolvable stops",
			a:           ret(nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, "hopeless")),
			b:           ret(nil, nil),
			wantCode:    framework.UnschedulableAndUnresolvable,
			wantMessage: "hopeless",
			wantPlugin:  "A",
			wantCalls:   []string{"A.PostFilter"},
		},
		{
			name:        "Error stops",
			a:           ret(nil, framework.NewStatus(framework.Error, "broken")),
			b:           ret(nil, nil),
			wantCode:    framework.Error,
			wantMessage: "broken",
			wantPlugin:  "A",
			wantCalls:   []string{"A.PostFilter"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := &callLog{}
			f := newFramework(t, []framework.Plugin{
				postFilterPlugin{&fake{name: "A", log: log, post: tt.a}},
				postFilterPlugin{&fake{name: "B", log: log, post: tt.b}},
			}, nil)
			r, s := f.RunPostFilterPlugins(context.Background(), newState(f), testPod, NewDefaultNodeToStatus())
			if r != tt.wantResult {
				t.Errorf("result = %v, want %v", r, tt.wantResult)
			}
			if s.Code() != tt.wantCode || s.Message() != tt.wantMessage || s.Plugin() != tt.wantPlugin {
				t.Errorf("status = %v (plugin %q), want %v: %q (plugin %q)", s, s.Plugin(), tt.wantCode, tt.wantMessage, tt.wantPlugin)
			}
			if diff := cmp.Diff(tt.wantCalls, log.get()); diff != "" {
				t.Errorf("calls (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunPreScorePlugins(t *testing.T) {
	log := &callLog{}
	f := newFramework(t, []framework.Plugin{
		scorePlugin{&fake{name: "S1", log: log, preScore: func() *framework.Status { return framework.NewStatus(framework.Skip) }}},
		scorePlugin{&fake{name: "S2", log: log}},
	}, nil)
	state := newState(f)
	if s := f.RunPreScorePlugins(context.Background(), state, testPod, nil); !s.IsSuccess() {
		t.Fatal(s)
	}
	if diff := cmp.Diff(sets.New("S1"), state.SkipScorePlugins); diff != "" {
		t.Errorf("SkipScorePlugins (-want +got):\n%s", diff)
	}

	f = newFramework(t, []framework.Plugin{
		scorePlugin{&fake{name: "S1", preScore: func() *framework.Status { return framework.NewStatus(framework.Unschedulable, "no") }}},
	}, nil)
	s := f.RunPreScorePlugins(context.Background(), newState(f), testPod, nil)
	if s.Code() != framework.Error || s.Message() != `running PreScore plugin "S1": no` {
		t.Errorf("status = %v", s)
	}
}
