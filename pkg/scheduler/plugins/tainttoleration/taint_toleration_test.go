package tainttoleration

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func podWithTolerations(tolerations ...v1.Toleration) *v1.Pod {
	p := st.MakePod().Name("pod1")
	for _, t := range tolerations {
		p.Toleration(t)
	}
	return p.Obj()
}

func nodeWithTaints(name string, taints ...v1.Taint) *v1.Node {
	return st.MakeNode().Name(name).Taints(taints...).Obj()
}

func nodeInfo(node *v1.Node) *framework.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name       string
		pod        *v1.Pod
		node       *v1.Node
		wantReason string // empty: the node fits
	}{
		{
			name:       "no tolerations, NoSchedule taint",
			pod:        podWithTolerations(),
			node:       nodeWithTaints("nodeA", v1.Taint{Key: "dedicated", Value: "user1", Effect: v1.TaintEffectNoSchedule}),
			wantReason: "node(s) had untolerated taint {dedicated: user1}",
		},
		{
			name:       "no tolerations, NoExecute taint without a value",
			pod:        podWithTolerations(),
			node:       nodeWithTaints("nodeA", v1.Taint{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoExecute}),
			wantReason: "node(s) had untolerated taint {node.kubernetes.io/not-ready: }",
		},
		{
			name: "toleration matches key, value and effect",
			pod:  podWithTolerations(v1.Toleration{Key: "dedicated", Value: "user1", Effect: v1.TaintEffectNoSchedule}),
			node: nodeWithTaints("nodeA", v1.Taint{Key: "dedicated", Value: "user1", Effect: v1.TaintEffectNoSchedule}),
		},
		{
			name:       "toleration for another value",
			pod:        podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "user2", Effect: v1.TaintEffectNoSchedule}),
			node:       nodeWithTaints("nodeA", v1.Taint{Key: "dedicated", Value: "user1", Effect: v1.TaintEffectNoSchedule}),
			wantReason: "node(s) had untolerated taint {dedicated: user1}",
		},
		{
			name: "Exists tolerates any value",
			pod:  podWithTolerations(v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}),
			node: nodeWithTaints("nodeA", v1.Taint{Key: "foo", Value: "bar", Effect: v1.TaintEffectNoSchedule}),
		},
		{
			name: "all of several taints tolerated",
			pod: podWithTolerations(
				v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "user2", Effect: v1.TaintEffectNoSchedule},
				v1.Toleration{Key: "foo", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule},
			),
			node: nodeWithTaints("nodeA",
				v1.Taint{Key: "dedicated", Value: "user2", Effect: v1.TaintEffectNoSchedule},
				v1.Taint{Key: "foo", Value: "bar", Effect: v1.TaintEffectNoSchedule},
			),
		},
		{
			name: "the first untolerated taint is named",
			pod:  podWithTolerations(v1.Toleration{Key: "a", Operator: v1.TolerationOpExists}),
			node: nodeWithTaints("nodeA",
				v1.Taint{Key: "soft", Value: "x", Effect: v1.TaintEffectPreferNoSchedule},
				v1.Taint{Key: "a", Value: "1", Effect: v1.TaintEffectNoSchedule},
				v1.Taint{Key: "b", Value: "2", Effect: v1.TaintEffectNoExecute},
				v1.Taint{Key: "c", Value: "3", Effect: v1.TaintEffectNoSchedule},
			),
			wantReason: "node(s) had untolerated taint {b: 2}",
		},
		{
			name:       "toleration with another (non-empty) effect",
			pod:        podWithTolerations(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual, Value: "bar", Effect: v1.TaintEffectPreferNoSchedule}),
			node:       nodeWithTaints("nodeA", v1.Taint{Key: "foo", Value: "bar", Effect: v1.TaintEffectNoSchedule}),
			wantReason: "node(s) had untolerated taint {foo: bar}",
		},
		{
			name: "toleration with empty effect tolerates NoSchedule",
			pod:  podWithTolerations(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual, Value: "bar"}),
			node: nodeWithTaints("nodeA", v1.Taint{Key: "foo", Value: "bar", Effect: v1.TaintEffectNoSchedule}),
		},
		{
			name: "PreferNoSchedule taints do not filter",
			pod:  podWithTolerations(),
			node: nodeWithTaints("nodeA", v1.Taint{Key: "dedicated", Value: "user1", Effect: v1.TaintEffectPreferNoSchedule}),
		},
		{
			name:       "Gt is off (the feature gate is alpha)",
			pod:        podWithTolerations(v1.Toleration{Key: "sla", Operator: v1.TolerationOpGt, Value: "750", Effect: v1.TaintEffectNoSchedule}),
			node:       nodeWithTaints("nodeA", v1.Taint{Key: "sla", Value: "950", Effect: v1.TaintEffectNoSchedule}),
			wantReason: "node(s) had untolerated taint {sla: 950}",
		},
		{name: "no taints", pod: podWithTolerations(), node: nodeWithTaints("nodeA")},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(framework.FilterPlugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pl.Filter(context.Background(), nil, tt.pod, nodeInfo(tt.node))
			if tt.wantReason == "" {
				if !got.IsSuccess() {
					t.Errorf("Filter = %v, want success", got)
				}
				return
			}
			if got.Code() != framework.UnschedulableAndUnresolvable || !reflect.DeepEqual(got.Reasons(), []string{tt.wantReason}) {
				t.Errorf("Filter = %v, want UnschedulableAndUnresolvable: %s", got, tt.wantReason)
			}
		})
	}
}

func TestScore(t *testing.T) {
	prefer := func(k, v string) v1.Taint { return v1.Taint{Key: k, Value: v, Effect: v1.TaintEffectPreferNoSchedule} }
	tests := []struct {
		name  string
		pod   *v1.Pod
		nodes []*v1.Node
		want  []int64
	}{
		{
			name: "tolerated taint beats intolerable one",
			pod:  podWithTolerations(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual, Value: "bar", Effect: v1.TaintEffectPreferNoSchedule}),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA", prefer("foo", "bar")),
				nodeWithTaints("nodeB", prefer("foo", "blah")),
			},
			want: []int64{100, 0},
		},
		{
			name: "the number of tolerated taints does not matter",
			pod: podWithTolerations(
				v1.Toleration{Key: "cpu-type", Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectPreferNoSchedule},
				v1.Toleration{Key: "disk-type", Operator: v1.TolerationOpEqual, Value: "ssd", Effect: v1.TaintEffectPreferNoSchedule},
			),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA"),
				nodeWithTaints("nodeB", prefer("cpu-type", "arm64")),
				nodeWithTaints("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")),
			},
			want: []int64{100, 100, 100},
		},
		{
			name: "more intolerable taints score lower",
			pod:  podWithTolerations(v1.Toleration{Key: "foo", Operator: v1.TolerationOpEqual, Value: "bar", Effect: v1.TaintEffectPreferNoSchedule}),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA"),
				nodeWithTaints("nodeB", prefer("cpu-type", "arm64")),
				nodeWithTaints("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")),
			},
			want: []int64{100, 50, 0},
		},
		{
			name: "only PreferNoSchedule taints and tolerations count",
			pod: podWithTolerations(
				v1.Toleration{Key: "cpu-type", Operator: v1.TolerationOpEqual, Value: "arm64", Effect: v1.TaintEffectNoSchedule},
				v1.Toleration{Key: "disk-type", Operator: v1.TolerationOpEqual, Value: "ssd", Effect: v1.TaintEffectNoSchedule},
			),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA"),
				nodeWithTaints("nodeB", v1.Taint{Key: "cpu-type", Value: "arm64", Effect: v1.TaintEffectNoSchedule}),
				nodeWithTaints("nodeC", prefer("cpu-type", "arm64"), prefer("disk-type", "ssd")),
			},
			want: []int64{100, 100, 0},
		},
		{
			name: "a toleration without effect counts",
			pod:  podWithTolerations(v1.Toleration{Key: "cpu-type", Operator: v1.TolerationOpExists}),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA", prefer("cpu-type", "arm64")),
				nodeWithTaints("nodeB", prefer("disk-type", "ssd")),
			},
			want: []int64{100, 0},
		},
		{
			name: "no tolerations: the untainted node wins",
			pod:  podWithTolerations(),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA"),
				nodeWithTaints("nodeB", prefer("cpu-type", "arm64")),
			},
			want: []int64{100, 0},
		},
		{
			name: "three levels truncate as integers",
			pod:  podWithTolerations(),
			nodes: []*v1.Node{
				nodeWithTaints("nodeA", prefer("a", "")),
				nodeWithTaints("nodeB", prefer("a", ""), prefer("b", ""), prefer("c", "")),
				nodeWithTaints("nodeC", prefer("a", ""), prefer("b", "")),
			},
			want: []int64{67, 0, 34},
		},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(*TaintToleration)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState()
			var infos []*framework.NodeInfo
			for _, n := range tt.nodes {
				infos = append(infos, nodeInfo(n))
			}
			if s := pl.PreScore(ctx, state, tt.pod, infos); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			var list framework.NodeScoreList
			for _, ni := range infos {
				score, s := pl.Score(ctx, state.Clone(), tt.pod, ni)
				if !s.IsSuccess() {
					t.Fatalf("Score: %v", s)
				}
				list = append(list, framework.NodeScore{Name: ni.Node().Name, Score: score})
			}
			if s := pl.ScoreExtensions().NormalizeScore(ctx, state, tt.pod, list); !s.IsSuccess() {
				t.Fatalf("NormalizeScore: %v", s)
			}
			var got []int64
			for _, s := range list {
				got = append(got, s.Score)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("scores %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScoreWithoutPreScore(t *testing.T) {
	p, _ := New(context.Background(), nil, nil)
	_, s := p.(framework.ScorePlugin).Score(context.Background(), framework.NewCycleState(), podWithTolerations(), nodeInfo(nodeWithTaints("n")))
	if s.Code() != framework.Error || s.Message() != `reading "PreScoreTaintToleration" from cycleState: not found` {
		t.Errorf("Score = %v", s)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pod := podWithTolerations(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpEqual, Value: "user2", Effect: v1.TaintEffectNoSchedule})
	user := func(u string) v1.Taint { return v1.Taint{Key: "dedicated", Value: u, Effect: v1.TaintEffectNoSchedule} }
	tests := []struct {
		name           string
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "wrong new object", newObj: "not-a-node", want: framework.Queue, wantErr: true},
		{name: "wrong old object", oldObj: "not-a-node", newObj: nodeWithTaints("nodeA", user("user1")), want: framework.Queue, wantErr: true},
		{name: "node with an untolerated taint added", newObj: nodeWithTaints("nodeA", user("user1")), want: framework.QueueSkip},
		{name: "node with a tolerated taint added", newObj: nodeWithTaints("nodeA", user("user2")), want: framework.Queue},
		{
			name:   "another untolerated taint added",
			oldObj: nodeWithTaints("nodeA", user("user1")), newObj: nodeWithTaints("nodeA", user("user1"), user("user3")),
			want: framework.QueueSkip,
		},
		{
			name:   "untolerated taint replaced by a tolerated one",
			oldObj: nodeWithTaints("nodeA", user("user1")), newObj: nodeWithTaints("nodeA", user("user2")),
			want: framework.Queue,
		},
		{
			name:   "node was already fine",
			oldObj: nodeWithTaints("nodeA"), newObj: nodeWithTaints("nodeA", user("user2")),
			want: framework.QueueSkip,
		},
		{
			name:   "only a PreferNoSchedule taint left",
			oldObj: nodeWithTaints("nodeA", user("user1")), newObj: nodeWithTaints("nodeA", v1.Taint{Key: "x", Effect: v1.TaintEffectPreferNoSchedule}),
			want: framework.Queue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterNodeChange(klog.Background(), pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v (err %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestIsSchedulableAfterPodTolerationChange(t *testing.T) {
	pod := st.MakePod().Name("p").Obj()
	for _, tt := range []struct {
		name   string
		newObj *v1.Pod
		want   framework.QueueingHint
	}{
		{name: "the pod itself", newObj: st.MakePod().Name("p").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(), want: framework.Queue},
		{name: "another pod", newObj: st.MakePod().Name("q").Toleration(v1.Toleration{Operator: v1.TolerationOpExists}).Obj(), want: framework.QueueSkip},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterPodTolerationChange(klog.Background(), pod, pod, tt.newObj)
			if err != nil || got != tt.want {
				t.Errorf("got %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

// Filter and Score run for every node of every pod: they must not allocate.
func TestHotPathDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	pod := podWithTolerations(
		v1.Toleration{Key: "a", Operator: v1.TolerationOpExists},
		v1.Toleration{Key: "b", Value: "1", Effect: v1.TaintEffectPreferNoSchedule},
	)
	ni := nodeInfo(nodeWithTaints("n",
		v1.Taint{Key: "a", Value: "x", Effect: v1.TaintEffectNoSchedule},
		v1.Taint{Key: "b", Value: "1", Effect: v1.TaintEffectPreferNoSchedule},
		v1.Taint{Key: "c", Value: "1", Effect: v1.TaintEffectPreferNoSchedule},
	))
	pl := &TaintToleration{}
	state := framework.NewCycleState()
	pl.PreScore(ctx, state, pod, nil)
	if allocs := testing.AllocsPerRun(100, func() {
		if s := pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			t.Fatal(s)
		}
		if score, _ := pl.Score(ctx, state, pod, ni); score != 1 {
			t.Fatal(score)
		}
	}); allocs != 0 {
		t.Errorf("Filter and Score allocate %v times", allocs)
	}
}
