package podtopologyspread

import (
	"context"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func hostNode(name string) *v1.Node { return st.MakeNode().Name(name).Obj() }

func zoneHostNode(name, zone string) *v1.Node {
	return st.MakeNode().Name(name).Label("zone", zone).Obj()
}

func labeledPod(name, node string, labels ...string) *v1.Pod {
	w := st.MakePod().Name(name).Node(node)
	for _, l := range labels {
		w.Label(l, "")
	}
	return w.Obj()
}

// fooPods puts n pods labeled foo on each node, named <node>-<i>.
func fooPods(perNode map[string]int) []*v1.Pod {
	var out []*v1.Pod
	for node, n := range perNode {
		for i := 0; i < n; i++ {
			out = append(out, fooPod(node+"-"+string(rune('0'+i)), node))
		}
	}
	return out
}

// TestScore runs PreScore, Score and NormalizeScore on the same inputs as kube-scheduler's
// scoring tests and expects the same numbers.
func TestScore(t *testing.T) {
	soft := func(maxSkew int32, key string) *st.PodWrapper {
		return st.MakePod().Name("p").Label("foo", "").TopologySpreadConstraint(maxSkew, key, v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil)
	}
	tests := []struct {
		name        string
		pod         *v1.Pod
		pods        []*v1.Pod
		nodes       []*v1.Node // candidates
		failedNodes []*v1.Node // in the cluster, not candidates
		want        []int64    // per candidate, in order
	}{
		{
			name:  "no existing pods",
			pod:   soft(1, v1.LabelHostname).Obj(),
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b")},
			want:  []int64{100, 100},
		},
		{
			name:        "only one candidate",
			pod:         soft(1, v1.LabelHostname).Obj(),
			pods:        fooPods(map[string]int{"node-a": 2, "node-b": 1}),
			nodes:       []*v1.Node{hostNode("node-a")},
			failedNodes: []*v1.Node{hostNode("node-b")},
			want:        []int64{100},
		},
		{
			name:  "hostname 2/1/0/3",
			pod:   soft(1, v1.LabelHostname).Obj(),
			pods:  fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-d": 3}),
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-c"), hostNode("node-d")},
			want:  []int64{20, 60, 100, 0},
		},
		{
			name: "null selector counts nothing",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, nil, nil, nil, nil, nil).Obj(),
			pods:  fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-d": 3}),
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-c"), hostNode("node-d")},
			want:  []int64{100, 100, 100, 100},
		},
		{
			name:  "hostname 2/1/0/3, maxSkew 2",
			pod:   soft(2, v1.LabelHostname).Obj(),
			pods:  fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-d": 3}),
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-c"), hostNode("node-d")},
			want:  []int64{33, 66, 100, 16},
		},
		{
			name:  "hostname 4/3/2/1, maxSkew 3",
			pod:   soft(3, v1.LabelHostname).Obj(),
			pods:  fooPods(map[string]int{"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1}),
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-c"), hostNode("node-d")},
			want:  []int64{44, 66, 77, 100},
		},
		{
			name:        "hostname 4/2/1/~3~",
			pod:         soft(1, v1.LabelHostname).Obj(),
			pods:        fooPods(map[string]int{"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
			nodes:       []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-x")},
			failedNodes: []*v1.Node{hostNode("node-y")},
			want:        []int64{33, 83, 100},
		},
		{
			name:        "hostname 4/?2?/1/~3~: a candidate without the key scores 0",
			pod:         soft(1, v1.LabelHostname).Obj(),
			pods:        fooPods(map[string]int{"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
			nodes:       []*v1.Node{hostNode("node-a"), withoutLabel(st.MakeNode().Name("node-b").Label("n", "node-b").Obj(), v1.LabelHostname), hostNode("node-x")},
			failedNodes: []*v1.Node{hostNode("node-y")},
			want:        []int64{16, 0, 100},
		},
		{
			name:        "zone 4/2/1/~3~",
			pod:         soft(1, "zone").Obj(),
			pods:        fooPods(map[string]int{"node-a": 4, "node-b": 2, "node-x": 1, "node-y": 3}),
			nodes:       []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-x", "zone2")},
			failedNodes: []*v1.Node{zoneHostNode("node-y", "zone2")},
			want:        []int64{75, 75, 100},
		},
		{
			name: "zone and hostname, 2/~1~/2/~4~",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj(),
			pods:        fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-x": 2, "node-y": 4}),
			nodes:       []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-x", "zone2")},
			failedNodes: []*v1.Node{zoneHostNode("node-b", "zone1"), zoneHostNode("node-y", "zone2")},
			want:        []int64{100, 63},
		},
		{
			name: "two zone constraints with different selectors",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, barSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				labeledPod("a1", "node-a", "foo", "bar"), labeledPod("a2", "node-a", "foo"), labeledPod("b1", "node-b", "foo", "bar"),
				labeledPod("y1", "node-y", "foo"), labeledPod("y2", "node-y", "foo", "bar"), labeledPod("y3", "node-y", "foo"),
			},
			nodes:       []*v1.Node{zoneNode("node-a", "zone1"), zoneNode("node-x", "zone2")},
			failedNodes: []*v1.Node{zoneNode("node-b", "zone1"), zoneNode("node-y", "zone2")},
			want:        []int64{85, 100},
		},
		{
			name: "zone (foo) and hostname (bar), 2/2/1/1 and 0/1/0/1",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, barSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				labeledPod("a1", "node-a", "foo"), labeledPod("b1", "node-b", "foo", "bar"),
				labeledPod("y1", "node-y", "foo"), labeledPod("y2", "node-y", "bar"),
			},
			nodes: []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-x", "zone2"), zoneHostNode("node-y", "zone2")},
			want:  []int64{60, 20, 100, 60},
		},
		{
			name: "zone (foo) and hostname (bar), 0/0/2/2 and 0/1/0/1",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, barSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				labeledPod("b1", "node-b", "bar"), labeledPod("x1", "node-x", "foo"), labeledPod("y1", "node-y", "foo", "bar"),
			},
			nodes: []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-x", "zone2"), zoneHostNode("node-y", "zone2")},
			want:  []int64{100, 60, 40, 0},
		},
		{
			name: "zone (foo) and hostname (bar), 3 of 4 candidates",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, barSelector, nil, nil, nil, nil).Obj(),
			pods: []*v1.Pod{
				labeledPod("a1", "node-a", "foo"), labeledPod("b1", "node-b", "foo", "bar"),
				labeledPod("y1", "node-y", "foo"), labeledPod("y2", "node-y", "bar"),
			},
			nodes:       []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-x", "zone2")},
			failedNodes: []*v1.Node{zoneHostNode("node-y", "zone2")},
			want:        []int64{50, 25, 100},
		},
		{
			name: "pods in other namespaces do not count",
			pod:  soft(1, v1.LabelHostname).Obj(),
			pods: []*v1.Pod{
				st.MakePod().Name("a1").Namespace("ns1").Node("node-a").Label("foo", "").Obj(),
				fooPod("a2", "node-a"), fooPod("b1", "node-b"), fooPod("b2", "node-b"),
			},
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b")},
			want:  []int64{100, 33},
		},
		{
			name:  "terminating pods do not count",
			pod:   soft(1, v1.LabelHostname).Obj(),
			pods:  []*v1.Pod{st.MakePod().Name("a").Node("node-a").Label("foo", "").Terminating().Obj(), fooPod("b", "node-b")},
			nodes: []*v1.Node{hostNode("node-a"), hostNode("node-b")},
			want:  []int64{100, 0},
		},
		{
			name: "minDomains has no effect on scoring",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(2, "node", v1.ScheduleAnyway, fooSelector, ptr.To[int32](10), nil, nil, nil).Obj(),
			pods:  fooPods(map[string]int{"node-a": 2, "node-b": 2, "node-c": 1}),
			nodes: []*v1.Node{st.MakeNode().Name("node-a").Label("node", "node-a").Obj(), st.MakeNode().Name("node-b").Label("node", "node-b").Obj(), st.MakeNode().Name("node-c").Label("node", "node-c").Obj()},
			want:  []int64{75, 75, 100},
		},
		{
			name: "node affinity honored",
			pod: st.MakePod().Name("p").Label("foo", "").NodeSelector(map[string]string{"foo": ""}).
				TopologySpreadConstraint(1, "node", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).Obj(),
			pods: fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-c": 1}),
			nodes: []*v1.Node{
				st.MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
				st.MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
				st.MakeNode().Name("node-c").Label("node", "node-c").Obj(),
			},
			want: []int64{0, 33, 100},
		},
		{
			name: "node affinity ignored",
			pod: st.MakePod().Name("p").Label("foo", "").NodeSelector(map[string]string{"foo": ""}).
				TopologySpreadConstraint(1, "node", v1.ScheduleAnyway, fooSelector, nil, &ignorePolicy, nil, nil).Obj(),
			pods: fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-c": 1}),
			nodes: []*v1.Node{
				st.MakeNode().Name("node-a").Label("node", "node-a").Label("foo", "").Obj(),
				st.MakeNode().Name("node-b").Label("node", "node-b").Label("foo", "").Obj(),
				st.MakeNode().Name("node-c").Label("node", "node-c").Obj(),
			},
			want: []int64{66, 100, 100},
		},
		{
			name: "node taints honored",
			pod: st.MakePod().Name("p").Label("foo", "").
				TopologySpreadConstraint(1, "node", v1.ScheduleAnyway, fooSelector, nil, nil, &honorPolicy, nil).Obj(),
			pods: fooPods(map[string]int{"node-a": 2, "node-b": 1, "node-c": 1}),
			nodes: []*v1.Node{
				st.MakeNode().Name("node-a").Label("node", "node-a").Obj(),
				st.MakeNode().Name("node-b").Label("node", "node-b").Obj(),
				st.MakeNode().Name("node-c").Label("node", "node-c").Taints(taints...).Obj(),
			},
			want: []int64{0, 33, 100},
		},
		{
			name: "matchLabelKeys ANDed with an empty selector",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, &metav1.LabelSelector{}, nil, nil, nil, []string{"foo"}).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, &metav1.LabelSelector{}, nil, nil, nil, []string{"bar"}).Obj(),
			pods: []*v1.Pod{
				labeledPod("a1", "node-a", "foo"), labeledPod("b1", "node-b", "foo", "bar"),
				labeledPod("c1", "node-c", "foo"), labeledPod("c2", "node-c", "bar"),
			},
			nodes: []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-c", "zone2"), zoneHostNode("node-d", "zone2")},
			want:  []int64{60, 20, 60, 100},
		},
		{
			name: "matchLabelKeys ANDed with a selector",
			pod: st.MakePod().Name("p").Label("foo", "").Label("bar", "").Label("baz", "").
				TopologySpreadConstraint(1, "zone", v1.ScheduleAnyway, fooSelector, nil, nil, nil, nil).
				TopologySpreadConstraint(1, v1.LabelHostname, v1.ScheduleAnyway, barSelector, nil, nil, nil, []string{"baz"}).Obj(),
			pods: []*v1.Pod{
				labeledPod("a1", "node-a", "foo"), labeledPod("b1", "node-b", "foo", "bar", "baz"),
				labeledPod("c1", "node-c", "foo"), labeledPod("c2", "node-c", "bar"), labeledPod("c3", "node-c", "bar", "baz"),
			},
			nodes: []*v1.Node{zoneHostNode("node-a", "zone1"), zoneHostNode("node-b", "zone1"), zoneHostNode("node-c", "zone2"), zoneHostNode("node-d", "zone2")},
			want:  []int64{60, 20, 60, 100},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := append(append([]*v1.Node{}, tt.nodes...), tt.failedNodes...)
			pl, snap := newPlugin(t, nil, tt.pods, all)
			if got := scoreNodes(t, pl, snap, tt.pod, tt.nodes); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("scores %v, want %v", got, tt.want)
			}
		})
	}
}

// scoreNodes runs PreScore over candidates, then Score and NormalizeScore.
func scoreNodes(t *testing.T, pl *Plugin, snap *snapshot, pod *v1.Pod, candidates []*v1.Node) []int64 {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	infos := snap.infosOf(candidates)
	if s := pl.PreScore(ctx, state, pod, infos); !s.IsSuccess() {
		t.Fatalf("PreScore: %v", s)
	}
	var list framework.NodeScoreList
	for _, ni := range infos {
		score, s := pl.Score(ctx, state, pod, ni)
		if !s.IsSuccess() {
			t.Fatalf("Score: %v", s)
		}
		list = append(list, framework.NodeScore{Name: ni.Node().Name, Score: score})
	}
	if s := pl.NormalizeScore(ctx, state, pod, list); !s.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", s)
	}
	out := make([]int64, len(list))
	for i := range list {
		out[i] = list[i].Score
	}
	return out
}

// newPluginWithObjects builds the plugin with informers over a fake API that serves services
// and replica sets, holding objs.
func newPluginWithObjects(t *testing.T, args runtime.Object, pods []*v1.Pod, nodes []*v1.Node, objs ...runtime.Object) (*Plugin, *snapshot) {
	t.Helper()
	client := fake.NewClientset(objs...)
	client.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "services"}, {Name: "pods"}}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "replicasets"}}},
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	snap := newSnapshot(pods, nodes)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	pl, err := New(ctx, args, &fakeHandle{snap: snap, client: client, factory: factory})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	return pl.(*Plugin), snap
}

func TestSystemDefaultConstraints(t *testing.T) {
	nodes := []*v1.Node{hostNode("node-a"), hostNode("node-b"), hostNode("node-c"), hostNode("node-d")}
	pods := fooPods(map[string]int{"node-a": 4, "node-b": 3, "node-c": 2, "node-d": 1})
	service := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "default"}, Spec: v1.ServiceSpec{Selector: map[string]string{"foo": ""}}}

	t.Run("pods of a service spread like one hostname constraint with maxSkew 3", func(t *testing.T) {
		pl, snap := newPluginWithObjects(t, nil, pods, nodes, service)
		got := scoreNodes(t, pl, snap, st.MakePod().Name("p").Label("foo", "").Obj(), nodes)
		if want := []int64{44, 66, 77, 100}; !reflect.DeepEqual(got, want) {
			t.Errorf("scores %v, want %v", got, want)
		}
	})
	t.Run("the owning replica set's selector", func(t *testing.T) {
		rs := &metav1.LabelSelector{MatchLabels: map[string]string{"foo": ""}}
		pl, snap := newPluginWithObjects(t, nil, pods, nodes, replicaSet("rs", rs))
		pod := st.MakePod().Name("p").Label("foo", "").ControllerOwner("apps/v1", "ReplicaSet", "rs").Obj()
		got := scoreNodes(t, pl, snap, pod, nodes)
		if want := []int64{44, 66, 77, 100}; !reflect.DeepEqual(got, want) {
			t.Errorf("scores %v, want %v", got, want)
		}
	})
	t.Run("no owner known: no default constraints", func(t *testing.T) {
		pl, snap := newPluginWithObjects(t, nil, pods, nodes)
		s := pl.PreScore(context.Background(), framework.NewCycleState(), st.MakePod().Name("p").Label("foo", "").Obj(), snap.infos)
		if !s.IsSkip() {
			t.Errorf("PreScore: %v, want Skip", s)
		}
	})
	t.Run("no informers at all: no default constraints", func(t *testing.T) {
		pl, snap := newPlugin(t, nil, pods, nodes)
		s := pl.PreScore(context.Background(), framework.NewCycleState(), st.MakePod().Name("p").Label("foo", "").Obj(), snap.infos)
		if !s.IsSkip() {
			t.Errorf("PreScore: %v, want Skip", s)
		}
	})
	t.Run("list defaulting with a hard constraint filters", func(t *testing.T) {
		args := &configv1.PodTopologySpreadArgs{
			DefaultingType:     configv1.ListDefaulting,
			DefaultConstraints: []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: v1.LabelHostname, WhenUnsatisfiable: v1.DoNotSchedule}},
		}
		pl, snap := newPluginWithObjects(t, args, pods, nodes, service)
		pod := st.MakePod().Name("p").Label("foo", "").Obj()
		state := framework.NewCycleState()
		if _, s := pl.PreFilter(context.Background(), state, pod, snap.infos); !s.IsSuccess() {
			t.Fatalf("PreFilter: %v", s)
		}
		for i, want := range []result{tooSkewed, tooSkewed, tooSkewed, fits} {
			if got := statusResult(pl.Filter(context.Background(), state, pod, snap.infos[i])); got != want {
				t.Errorf("%s: got %+v, want %+v", snap.infos[i].Node().Name, got, want)
			}
		}
	})
	t.Run("system defaulting: nodes without a zone still spread by hostname", func(t *testing.T) {
		zoned := []*v1.Node{st.MakeNode().Name("node-a").Label(v1.LabelTopologyZone, "z1").Obj(), hostNode("node-b")}
		pl, snap := newPluginWithObjects(t, nil, fooPods(map[string]int{"node-a": 1}), zoned, service)
		got := scoreNodes(t, pl, snap, st.MakePod().Name("p").Label("foo", "").Obj(), zoned)
		// Both constraints weigh log(2+2). node-a: 1*1.39+2 (host) + 1*1.39+4 (zone) = 8.77 → 9;
		// node-b has no zone: 0*1.39+2 = 2. Normalized 100*(9+2-s)/9.
		if want := []int64{22, 100}; !reflect.DeepEqual(got, want) {
			t.Errorf("scores %v, want %v", got, want)
		}
	})
}

func replicaSet(name string, selector *metav1.LabelSelector) runtime.Object {
	return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: appsv1.ReplicaSetSpec{Selector: selector}}
}
