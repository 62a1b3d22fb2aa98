package nodeaffinity

import (
	"context"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func req(key string, op v1.NodeSelectorOperator, values ...string) v1.NodeSelectorRequirement {
	return v1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// exprs is a term of matchExpressions; fields a term of matchFields.
func exprs(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: reqs}
}

func fields(reqs ...v1.NodeSelectorRequirement) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchFields: reqs}
}

func nameIn(names ...string) v1.NodeSelectorRequirement {
	return req(metav1.ObjectNameField, v1.NodeSelectorOpIn, names...)
}

func podRequiring(terms ...v1.NodeSelectorTerm) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: terms},
	}}}}
}

func preferred(weight int32, t v1.NodeSelectorTerm) v1.PreferredSchedulingTerm {
	return v1.PreferredSchedulingTerm{Weight: weight, Preference: t}
}

func podPreferring(terms ...v1.PreferredSchedulingTerm) *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: terms,
	}}}}
}

func withNodeSelector(pod *v1.Pod, sel map[string]string) *v1.Pod {
	pod.Spec.NodeSelector = sel
	return pod
}

func nodeInfo(name string, labels map[string]string) *framework.NodeInfo {
	n := st.MakeNode().Name(name).Obj()
	n.Labels = labels
	ni := framework.NewNodeInfo()
	ni.SetNode(n)
	return ni
}

func TestFilter(t *testing.T) {
	fooBar := map[string]string{"foo": "bar"}
	tests := []struct {
		name          string
		pod           *v1.Pod
		nodeName      string
		labels        map[string]string
		args          *configv1.NodeAffinityArgs
		skipPreFilter bool
		// wantPreFilter is the PreFilter status code; wantNames its node names (nil: all).
		wantPreFilter framework.Code
		wantNames     sets.Set[string]
		wantReason    string // empty: the node fits
	}{
		{
			name: "missing labels", pod: withNodeSelector(&v1.Pod{}, fooBar),
			wantReason: ErrReasonPod,
		},
		{name: "same labels", pod: withNodeSelector(&v1.Pod{}, fooBar), labels: fooBar},
		{
			name: "node labels are a superset", pod: withNodeSelector(&v1.Pod{}, fooBar),
			labels: map[string]string{"foo": "bar", "baz": "blah"},
		},
		{
			name: "node labels are a subset", pod: withNodeSelector(&v1.Pod{}, map[string]string{"foo": "bar", "baz": "blah"}),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name: "In matches", pod: podRequiring(exprs(req("foo", v1.NodeSelectorOpIn, "bar", "value2"))),
			labels: fooBar,
		},
		{
			name: "Gt matches", pod: podRequiring(exprs(req("kernel-version", v1.NodeSelectorOpGt, "0204"))),
			labels: map[string]string{"kernel-version": "0206"},
		},
		{
			name: "Lt does not match", pod: podRequiring(exprs(req("kernel-version", v1.NodeSelectorOpLt, "0204"))),
			labels: map[string]string{"kernel-version": "0206"}, wantReason: ErrReasonPod,
		},
		{
			name: "NotIn matches", pod: podRequiring(exprs(req("mem-type", v1.NodeSelectorOpNotIn, "DDR", "DDR2"))),
			labels: map[string]string{"mem-type": "DDR3"},
		},
		{
			name: "Exists matches", pod: podRequiring(exprs(req("GPU", v1.NodeSelectorOpExists))),
			labels: map[string]string{"GPU": "NVIDIA-GRID-K1"},
		},
		{
			name: "DoesNotExist rejects", pod: podRequiring(exprs(req("GPU", v1.NodeSelectorOpDoesNotExist))),
			labels: map[string]string{"GPU": "NVIDIA-GRID-K1"}, wantReason: ErrReasonPod,
		},
		{
			name: "affinity that does not match", pod: podRequiring(exprs(req("foo", v1.NodeSelectorOpIn, "value1", "value2"))),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name: "an empty term matches nothing", pod: podRequiring(exprs()),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name: "no terms match nothing", pod: podRequiring(),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name: "no affinity: PreFilter skips", pod: &v1.Pod{},
			labels: fooBar, wantPreFilter: framework.Skip,
		},
		{
			name:   "affinity without required terms: PreFilter skips",
			pod:    &v1.Pod{Spec: v1.PodSpec{Affinity: &v1.Affinity{NodeAffinity: &v1.NodeAffinity{}}}},
			labels: fooBar, wantPreFilter: framework.Skip,
		},
		{
			name: "ANDed expressions all match",
			pod: podRequiring(exprs(
				req("GPU", v1.NodeSelectorOpExists),
				req("GPU", v1.NodeSelectorOpNotIn, "AMD", "INTER"),
			)),
			labels: map[string]string{"GPU": "NVIDIA-GRID-K1"},
		},
		{
			name: "ANDed expressions, one fails",
			pod: podRequiring(exprs(
				req("GPU", v1.NodeSelectorOpExists),
				req("GPU", v1.NodeSelectorOpIn, "AMD", "INTER"),
			)),
			labels: map[string]string{"GPU": "NVIDIA-GRID-K1"}, wantReason: ErrReasonPod,
		},
		{
			name: "ORed terms, the second matches",
			pod: podRequiring(
				exprs(req("foo", v1.NodeSelectorOpIn, "bar", "value2")),
				exprs(req("diffkey", v1.NodeSelectorOpIn, "wrong", "value2")),
			),
			labels: fooBar,
		},
		{
			name:   "affinity and nodeSelector both match",
			pod:    withNodeSelector(podRequiring(exprs(req("foo", v1.NodeSelectorOpExists))), fooBar),
			labels: fooBar,
		},
		{
			name:   "affinity matches, nodeSelector does not",
			pod:    withNodeSelector(podRequiring(exprs(req("foo", v1.NodeSelectorOpExists))), map[string]string{"baz": "blah"}),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name:   "a term with an invalid value matches nothing",
			pod:    podRequiring(exprs(req("foo", v1.NodeSelectorOpNotIn, "invalid value: ___@#$%^"))),
			labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name: "an invalid term does not spoil a valid one",
			pod: podRequiring(
				exprs(req("foo", v1.NodeSelectorOpGt, "not-a-number", "2")),
				exprs(req("foo", v1.NodeSelectorOpIn, "bar")),
			),
			labels: fooBar,
		},
		{
			name:     "matchFields In matches",
			pod:      podRequiring(fields(nameIn("node1"))),
			nodeName: "node1", wantNames: sets.New("node1"),
		},
		{
			name:     "matchFields In does not match",
			pod:      podRequiring(fields(nameIn("node1"))),
			nodeName: "node2", wantNames: sets.New("node1"), wantReason: ErrReasonPod,
		},
		{
			name:     "matchFields NotIn",
			pod:      podRequiring(fields(req(metav1.ObjectNameField, v1.NodeSelectorOpNotIn, "node1"))),
			nodeName: "node1", wantReason: ErrReasonPod,
		},
		{
			name:     "two terms: fields do not match, expressions do",
			pod:      podRequiring(fields(nameIn("node1"), nameIn("node2")), exprs(req("foo", v1.NodeSelectorOpIn, "bar"))),
			nodeName: "node2", labels: fooBar,
		},
		{
			name: "one term: fields do not match, expressions do",
			pod: podRequiring(v1.NodeSelectorTerm{
				MatchFields:      []v1.NodeSelectorRequirement{nameIn("node1")},
				MatchExpressions: []v1.NodeSelectorRequirement{req("foo", v1.NodeSelectorOpIn, "bar")},
			}),
			nodeName: "node2", labels: fooBar, wantNames: sets.New("node1"), wantReason: ErrReasonPod,
		},
		{
			name: "one term: fields and expressions match",
			pod: podRequiring(v1.NodeSelectorTerm{
				MatchFields:      []v1.NodeSelectorRequirement{nameIn("node1")},
				MatchExpressions: []v1.NodeSelectorRequirement{req("foo", v1.NodeSelectorOpIn, "bar")},
			}),
			nodeName: "node1", labels: fooBar, wantNames: sets.New("node1"),
		},
		{
			name:     "two terms, neither matches",
			pod:      podRequiring(fields(nameIn("node1")), exprs(req("foo", v1.NodeSelectorOpIn, "not-match-to-bar"))),
			nodeName: "node2", labels: fooBar, wantReason: ErrReasonPod,
		},
		{
			name:     "two terms of node names: their union",
			pod:      podRequiring(fields(nameIn("node1")), fields(nameIn("node2"))),
			nodeName: "node2", wantNames: sets.New("node1", "node2"),
		},
		{
			name:     "names intersected within a term",
			pod:      podRequiring(fields(nameIn("node1", "node2"), nameIn("node2", "node3"))),
			nodeName: "node2", wantNames: sets.New("node2"), wantReason: ErrReasonPod, // a multi-value In does not parse
		},
		{
			name:     "conflicting name requirements",
			pod:      podRequiring(fields(nameIn("node1"), nameIn("node2"))),
			nodeName: "node2", labels: fooBar,
			wantPreFilter: framework.UnschedulableAndUnresolvable, wantReason: ErrReasonPod,
		},
		{
			name:     "matches the added affinity and the pod's",
			pod:      podRequiring(exprs(req("zone", v1.NodeSelectorOpIn, "foo"))),
			nodeName: "node2", labels: map[string]string{"zone": "foo"},
			args: &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{fields(nameIn("node2"))}},
			}},
		},
		{
			name:     "matches the added affinity, not the pod's",
			pod:      podRequiring(exprs(req("zone", v1.NodeSelectorOpIn, "bar"))),
			nodeName: "node2", labels: map[string]string{"zone": "foo"},
			args: &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{fields(nameIn("node2"))}},
			}},
			wantReason: ErrReasonPod,
		},
		{
			name:     "does not match the added affinity",
			pod:      &v1.Pod{},
			nodeName: "node2", labels: map[string]string{"zone": "foo"},
			args: &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{exprs(req("zone", v1.NodeSelectorOpIn, "bar"))}},
			}},
			wantReason: "node(s) didn't match scheduler-enforced node affinity",
		},
		{
			name: "nodeSelector without PreFilter", pod: withNodeSelector(&v1.Pod{}, fooBar),
			labels: fooBar, skipPreFilter: true,
		},
		{
			name: "affinity without PreFilter", pod: podRequiring(exprs(req("foo", v1.NodeSelectorOpIn, "baz"))),
			labels: fooBar, skipPreFilter: true, wantReason: ErrReasonPod,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var args runtime.Object
			if tt.args != nil {
				args = tt.args
			}
			p, err := New(ctx, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*NodeAffinity)
			if tt.nodeName == "" {
				tt.nodeName = "node"
			}
			state := framework.NewCycleState()
			if !tt.skipPreFilter {
				res, s := pl.PreFilter(ctx, state, tt.pod, nil)
				if s.Code() != tt.wantPreFilter {
					t.Fatalf("PreFilter status %v, want %v", s, tt.wantPreFilter)
				}
				if s.Code() == framework.UnschedulableAndUnresolvable && s.Message() != "pod affinity terms conflict" {
					t.Errorf("PreFilter reason %q", s.Message())
				}
				if tt.wantNames == nil && !res.AllNodes() {
					t.Errorf("PreFilter narrowed to %v", res.NodeNames)
				}
				if tt.wantNames != nil && (res.AllNodes() || !res.NodeNames.Equal(tt.wantNames)) {
					t.Errorf("PreFilter = %v, want %v", res, sets.List(tt.wantNames))
				}
			}
			got := pl.Filter(ctx, state, tt.pod, nodeInfo(tt.nodeName, tt.labels))
			if tt.wantReason == "" {
				if !got.IsSuccess() {
					t.Errorf("Filter = %v, want success", got)
				}
			} else if got.Code() != framework.UnschedulableAndUnresolvable || !reflect.DeepEqual(got.Reasons(), []string{tt.wantReason}) {
				t.Errorf("Filter = %v, want UnschedulableAndUnresolvable: %s", got, tt.wantReason)
			}
		})
	}
}

func TestScore(t *testing.T) {
	label1 := map[string]string{"foo": "bar"}
	label2 := map[string]string{"key": "value"}
	label3 := map[string]string{"az": "az1"}
	label4 := map[string]string{"abc": "az11", "def": "az22"}
	label5 := map[string]string{"foo": "bar", "key": "value", "az": "az1"}
	affinity1 := []v1.PreferredSchedulingTerm{preferred(2, exprs(req("foo", v1.NodeSelectorOpIn, "bar")))}
	affinity2 := []v1.PreferredSchedulingTerm{
		preferred(2, exprs(req("foo", v1.NodeSelectorOpIn, "bar"))),
		preferred(4, exprs(req("key", v1.NodeSelectorOpIn, "value"))),
		preferred(5, exprs(
			req("foo", v1.NodeSelectorOpIn, "bar"),
			req("key", v1.NodeSelectorOpIn, "value"),
			req("az", v1.NodeSelectorOpIn, "az1"),
		)),
	}
	type node struct {
		name   string
		labels map[string]string
	}
	tests := []struct {
		name          string
		pod           *v1.Pod
		nodes         []node
		args          *configv1.NodeAffinityArgs
		skipPreScore  bool
		wantPreScore  framework.Code
		wantPreScoreM string
		want          []int64
	}{
		{
			name:         "no affinity: all zero (without PreScore)",
			pod:          &v1.Pod{},
			nodes:        []node{{"node1", label1}, {"node2", label2}, {"node3", label3}},
			skipPreScore: true,
			want:         []int64{0, 0, 0},
		},
		{
			name:         "no affinity: PreScore skips",
			pod:          &v1.Pod{},
			nodes:        []node{{"node1", label1}},
			wantPreScore: framework.Skip,
		},
		{
			name:         "a broken preferred term fails PreScore",
			pod:          podPreferring(preferred(2, exprs(req("invalid key", v1.NodeSelectorOpIn, "bar")))),
			nodes:        []node{{"node1", label1}},
			wantPreScore: framework.Error,
			wantPreScoreM: `[0].matchExpressions[0].key: Invalid value: "invalid key": name part must consist of alphanumeric characters, '-', '_' or '.', ` +
				`and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', ` +
				`regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		{
			name:  "no node matches",
			pod:   podPreferring(affinity1...),
			nodes: []node{{"node1", label4}, {"node2", label2}, {"node3", label3}},
			want:  []int64{0, 0, 0},
		},
		{
			name:  "only node1 matches",
			pod:   podPreferring(affinity1...),
			nodes: []node{{"node1", label1}, {"node2", label2}, {"node3", label3}},
			want:  []int64{100, 0, 0},
		},
		{
			// raw 2, 11, 4 -> 200/11 = 18, 100, 400/11 = 36
			name:  "all match with different weights",
			pod:   podPreferring(affinity2...),
			nodes: []node{{"node1", label1}, {"node5", label5}, {"node2", label2}},
			want:  []int64{18, 100, 36},
		},
		{
			name:  "added preferred affinity",
			pod:   &v1.Pod{},
			nodes: []node{{"node1", label1}, {"node2", label2}},
			args:  &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: affinity1}},
			want:  []int64{100, 0},
		},
		{
			// raw 2, 3, 5
			name:  "added preferred affinity and the pod's",
			pod:   podPreferring(affinity1...),
			nodes: []node{{"node1", label1}, {"node2", label2}, {"node3", label5}},
			args: &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
				preferred(3, exprs(req("key", v1.NodeSelectorOpIn, "value"))),
			}}},
			want: []int64{40, 60, 100},
		},
		{
			name:         "the same without PreScore",
			pod:          podPreferring(affinity2...),
			nodes:        []node{{"node1", label1}, {"node5", label5}, {"node2", label2}},
			skipPreScore: true,
			want:         []int64{18, 100, 36},
		},
		{
			name: "weight 0 and empty terms count for nothing",
			pod: podPreferring(
				preferred(0, exprs(req("foo", v1.NodeSelectorOpIn, "bar"))),
				preferred(7, v1.NodeSelectorTerm{}),
				preferred(1, exprs(req("key", v1.NodeSelectorOpExists))),
			),
			nodes: []node{{"node1", label1}, {"node2", label2}},
			want:  []int64{0, 100},
		},
		{
			name:  "preferred node name",
			pod:   podPreferring(preferred(10, fields(nameIn("node2"))), preferred(5, exprs(req("foo", v1.NodeSelectorOpExists)))),
			nodes: []node{{"node1", label1}, {"node2", label2}, {"node3", label5}},
			want:  []int64{50, 100, 50},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			var args runtime.Object
			if tt.args != nil {
				args = tt.args
			}
			p, err := New(ctx, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			pl := p.(*NodeAffinity)
			var infos []*framework.NodeInfo
			for _, n := range tt.nodes {
				infos = append(infos, nodeInfo(n.name, n.labels))
			}
			state := framework.NewCycleState()
			if !tt.skipPreScore {
				s := pl.PreScore(ctx, state, tt.pod, infos)
				if s.Code() != tt.wantPreScore || (tt.wantPreScoreM != "" && s.Message() != tt.wantPreScoreM) {
					t.Fatalf("PreScore = %v, want %v: %s", s, tt.wantPreScore, tt.wantPreScoreM)
				}
				if !s.IsSuccess() {
					return
				}
			}
			var list framework.NodeScoreList
			for _, ni := range infos {
				score, s := pl.Score(ctx, state, tt.pod, ni)
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

func TestNew(t *testing.T) {
	tests := []struct {
		name    string
		args    runtime.Object
		wantErr string
	}{
		{name: "nil args"},
		{name: "typed nil args", args: (*configv1.NodeAffinityArgs)(nil)},
		{name: "empty args", args: &configv1.NodeAffinityArgs{}},
		{name: "wrong type", args: &configv1.InterPodAffinityArgs{}, wantErr: "args are not of type NodeAffinityArgs, got *v1.InterPodAffinityArgs"},
		{
			name: "invalid added affinity",
			args: &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{
					exprs(req("foo", v1.NodeSelectorOpIn)),
				}},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{
					preferred(1, fields(req(metav1.ObjectNameField, v1.NodeSelectorOpExists))),
				},
			}},
			wantErr: "[addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: " +
				"Invalid value: null: for 'in', 'notin' operators, values set can't be empty, " +
				`addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].operator: Unsupported value: "Exists": supported values: "In", "NotIn"]`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(context.Background(), tt.args, nil)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.wantErr {
				t.Errorf("New() error %q, want %q", got, tt.wantErr)
			}
		})
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	pod := podRequiring(exprs(req("foo", v1.NodeSelectorOpIn, "bar")))
	added := &configv1.NodeAffinityArgs{AddedAffinity: &v1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{exprs(req("zone", v1.NodeSelectorOpIn, "a"))}},
	}}
	node := func(labels ...string) *v1.Node {
		n := st.MakeNode().Obj()
		for i := 0; i < len(labels); i += 2 {
			n.Labels[labels[i]] = labels[i+1]
		}
		return n
	}
	tests := []struct {
		name           string
		args           *configv1.NodeAffinityArgs
		oldObj, newObj interface{}
		want           framework.QueueingHint
		wantErr        bool
	}{
		{name: "wrong new object", newObj: "not-a-node", want: framework.Queue, wantErr: true},
		{name: "wrong old object", oldObj: "not-a-node", newObj: node(), want: framework.Queue, wantErr: true},
		{name: "added node does not match", newObj: node(), want: framework.QueueSkip},
		{name: "added node matches", newObj: node("foo", "bar"), want: framework.Queue},
		{name: "unrelated change", oldObj: node(), newObj: node("k", "v"), want: framework.QueueSkip},
		{name: "node stops matching", oldObj: node("foo", "bar"), newObj: node("k", "v"), want: framework.QueueSkip},
		{name: "node starts matching", oldObj: node(), newObj: node("foo", "bar"), want: framework.Queue},
		{name: "node kept matching", oldObj: node("foo", "bar"), newObj: node("foo", "bar", "k", "v"), want: framework.QueueSkip},
		{name: "added affinity not met", args: added, newObj: node("foo", "bar"), want: framework.QueueSkip},
		{name: "added affinity met", args: added, newObj: node("foo", "bar", "zone", "a"), want: framework.Queue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var args runtime.Object
			if tt.args != nil {
				args = tt.args
			}
			p, err := New(context.Background(), args, nil)
			if err != nil {
				t.Fatal(err)
			}
			events, _ := p.(*NodeAffinity).EventsToRegister(context.Background())
			got, err := events[0].QueueingHintFn(klog.Background(), pod, tt.oldObj, tt.newObj)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v (err %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
