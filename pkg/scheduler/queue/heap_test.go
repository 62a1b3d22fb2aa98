package queue

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func qpi(name string, prio int32) *framework.QueuedPodInfo {
	return &framework.QueuedPodInfo{PodInfo: &framework.PodInfo{Pod: st.MakePod().Name(name).Priority(prio).Obj()}}
}

// TestPodHeapAgainstSort applies random adds, updates and deletes and checks that the heap
// pops what sorting the survivors gives.
func TestPodHeapAgainstSort(t *testing.T) {
	less := func(a, b *framework.QueuedPodInfo) bool {
		pa, pb := priority(a.Pod), priority(b.Pod)
		return pa > pb || (pa == pb && a.Pod.Name < b.Pod.Name)
	}
	rng := rand.New(rand.NewSource(1))
	for round := range 50 {
		h := newPodHeap(less)
		live := map[types.UID]*framework.QueuedPodInfo{}
		for i := range 200 {
			name := fmt.Sprintf("p%d", rng.Intn(60))
			switch rng.Intn(3) {
			case 0, 1: // add or update with a new priority
				pi := qpi(name, int32(rng.Intn(10)))
				h.AddOrUpdate(pi)
				live[pi.Pod.UID] = pi
			case 2:
				uid := types.UID(name + "-uid")
				got := h.Delete(uid)
				if (got != nil) != (live[uid] != nil) {
					t.Fatalf("round %d op %d: Delete(%s) = %v, live %v", round, i, name, got, live[uid])
				}
				delete(live, uid)
			}
			if h.Len() != len(live) {
				t.Fatalf("round %d op %d: Len %d, want %d", round, i, h.Len(), len(live))
			}
		}
		var want []*framework.QueuedPodInfo
		for _, pi := range live {
			want = append(want, pi)
		}
		sort.Slice(want, func(i, j int) bool { return less(want[i], want[j]) })
		for i, w := range want {
			if got := h.Pop(); got != w {
				t.Fatalf("round %d: pop %d = %s, want %s", round, i, got.Pod.Name, w.Pod.Name)
			}
		}
		if h.Pop() != nil || h.Peek() != nil {
			t.Fatal("empty heap returned a pod")
		}
	}
}
