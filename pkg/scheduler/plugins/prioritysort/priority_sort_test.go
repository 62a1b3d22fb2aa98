package prioritysort

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func TestLess(t *testing.T) {
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	qpi := func(pod *v1.Pod, ts time.Time) *framework.QueuedPodInfo {
		return &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod), Timestamp: ts}
	}
	tests := []struct {
		name string
		a, b *framework.QueuedPodInfo
		want bool
	}{
		{
			name: "higher priority first",
			a:    qpi(st.MakePod().Name("a").Priority(100).Obj(), t1),
			b:    qpi(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: true,
		},
		{
			name: "lower priority later",
			a:    qpi(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    qpi(st.MakePod().Name("b").Priority(100).Obj(), t1),
			want: false,
		},
		{
			name: "equal priority: earlier timestamp first",
			a:    qpi(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    qpi(st.MakePod().Name("b").Priority(10).Obj(), t1),
			want: true,
		},
		{
			name: "equal priority: later timestamp later",
			a:    qpi(st.MakePod().Name("a").Priority(10).Obj(), t1),
			b:    qpi(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: false,
		},
		{
			name: "same priority and timestamp: not less",
			a:    qpi(st.MakePod().Name("a").Priority(10).Obj(), t0),
			b:    qpi(st.MakePod().Name("b").Priority(10).Obj(), t0),
			want: false,
		},
		{
			name: "unset priority is 0, below a positive one",
			a:    qpi(st.MakePod().Name("a").Obj(), t0),
			b:    qpi(st.MakePod().Name("b").Priority(1).Obj(), t1),
			want: false,
		},
		{
			name: "unset priority is 0, above a negative one",
			a:    qpi(st.MakePod().Name("a").Obj(), t1),
			b:    qpi(st.MakePod().Name("b").Priority(-1).Obj(), t0),
			want: true,
		},
	}
	p, err := New(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(framework.QueueSortPlugin)
	if pl.Name() != "PrioritySort" {
		t.Errorf("Name() = %q", pl.Name())
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pl.Less(tt.a, tt.b); got != tt.want {
				t.Errorf("Less() = %v, want %v", got, tt.want)
			}
		})
	}
}
