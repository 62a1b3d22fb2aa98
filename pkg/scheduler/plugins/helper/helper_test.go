package helper

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

func TestDefaultNormalizeScore(t *testing.T) {
	tests := []struct {
		name    string
		reverse bool
		scores  []int64
		want    []int64
	}{
		{name: "scaled to max", scores: []int64{1, 2, 3, 4, 5}, want: []int64{20, 40, 60, 80, 100}},
		{name: "reversed", reverse: true, scores: []int64{1, 2, 3, 4, 5}, want: []int64{80, 60, 40, 20, 0}},
		{name: "integer division truncates", scores: []int64{1000, 10, 20, 30}, want: []int64{100, 1, 2, 3}},
		{name: "reversed truncation", reverse: true, scores: []int64{1000, 10, 20, 30}, want: []int64{0, 99, 98, 97}},
		{name: "small max", scores: []int64{1, 1, 1, 1}, want: []int64{100, 100, 100, 100}},
		{name: "all zero", scores: []int64{0, 0, 0}, want: []int64{0, 0, 0}},
		{name: "all zero reversed gets max", reverse: true, scores: []int64{0, 0, 0}, want: []int64{100, 100, 100}},
		{name: "empty", scores: nil, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var list framework.NodeScoreList
			for i, s := range tt.scores {
				list = append(list, framework.NodeScore{Name: string(rune('a' + i)), Score: s})
			}
			if st := DefaultNormalizeScore(framework.MaxNodeScore, tt.reverse, list); !st.IsSuccess() {
				t.Fatalf("status %v", st)
			}
			var got []int64
			for _, s := range list {
				got = append(got, s.Score)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDoNotScheduleTaintsFilterFunc(t *testing.T) {
	f := DoNotScheduleTaintsFilterFunc()
	for effect, want := range map[v1.TaintEffect]bool{
		v1.TaintEffectNoSchedule:       true,
		v1.TaintEffectNoExecute:        true,
		v1.TaintEffectPreferNoSchedule: false,
	} {
		if got := f(&v1.Taint{Key: "k", Effect: effect}); got != want {
			t.Errorf("%s: got %v, want %v", effect, got, want)
		}
	}
}

func TestFindMatchingUntoleratedTaint(t *testing.T) {
	taints := []v1.Taint{
		{Key: "soft", Value: "x", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "a", Value: "1", Effect: v1.TaintEffectNoSchedule},
		{Key: "b", Value: "2", Effect: v1.TaintEffectNoExecute},
	}
	tests := []struct {
		name        string
		tolerations []v1.Toleration
		filter      func(*v1.Taint) bool
		want        v1.Taint
		wantFound   bool
	}{
		{name: "nothing tolerated: first hard taint", filter: DoNotScheduleTaintsFilterFunc(), want: taints[1], wantFound: true},
		{name: "no filter: first taint", want: taints[0], wantFound: true},
		{
			name:        "first tolerated, second not",
			tolerations: []v1.Toleration{{Key: "a", Operator: v1.TolerationOpEqual, Value: "1", Effect: v1.TaintEffectNoSchedule}},
			filter:      DoNotScheduleTaintsFilterFunc(),
			want:        taints[2], wantFound: true,
		},
		{
			name:        "tolerate everything",
			tolerations: []v1.Toleration{{Operator: v1.TolerationOpExists}},
			filter:      DoNotScheduleTaintsFilterFunc(),
		},
		{
			name: "Gt operator is off by default",
			tolerations: []v1.Toleration{
				{Key: "a", Operator: v1.TolerationOpGt, Value: "0"},
				{Key: "b", Operator: v1.TolerationOpExists},
			},
			filter: DoNotScheduleTaintsFilterFunc(),
			want:   taints[1], wantFound: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found := FindMatchingUntoleratedTaint(klog.Background(), taints, tt.tolerations, tt.filter)
			if found != tt.wantFound || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got (%v, %v), want (%v, %v)", got, found, tt.want, tt.wantFound)
			}
		})
	}
}

func TestAs(t *testing.T) {
	n1, n2 := &v1.Node{}, &v1.Node{}
	o, n, err := As[*v1.Node](n1, n2)
	if err != nil || o != n1 || n != n2 {
		t.Errorf("update: got (%p, %p, %v)", o, n, err)
	}
	o, n, err = As[*v1.Node](nil, n2)
	if err != nil || o != nil || n != n2 {
		t.Errorf("add: got (%p, %p, %v)", o, n, err)
	}
	o, _, err = As[*v1.Node](cache.DeletedFinalStateUnknown{Key: "n", Obj: n1}, nil)
	if err != nil || o != n1 {
		t.Errorf("tombstone: got (%p, %v)", o, err)
	}
	if _, _, err := As[*v1.Node](nil, &v1.Pod{}); err == nil || err.Error() != "expected *v1.Node, but got *v1.Pod" {
		t.Errorf("wrong type: got %v", err)
	}
}
