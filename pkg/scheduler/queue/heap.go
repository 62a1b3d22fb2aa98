package queue

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// podHeap is a binary heap of pods keyed by UID, so that a pod can be found, updated or
// removed in O(log n) wherever it sits. Each entry remembers its own position, so moving
// an entry writes no map.
type podHeap struct {
	items []*heapItem
	byUID map[types.UID]*heapItem
	less  func(a, b *framework.QueuedPodInfo) bool
}

type heapItem struct {
	pInfo *framework.QueuedPodInfo
	index int
}

func newPodHeap(less func(a, b *framework.QueuedPodInfo) bool) *podHeap {
	return &podHeap{byUID: map[types.UID]*heapItem{}, less: less}
}

func (h *podHeap) Len() int { return len(h.items) }

// Get returns the pod with uid, or nil.
func (h *podHeap) Get(uid types.UID) *framework.QueuedPodInfo {
	if it, ok := h.byUID[uid]; ok {
		return it.pInfo
	}
	return nil
}

// AddOrUpdate inserts pInfo, or replaces the entry of the same pod and restores the order
// (its priority or backoff may have changed).
func (h *podHeap) AddOrUpdate(pInfo *framework.QueuedPodInfo) {
	uid := pInfo.Pod.UID
	if it, ok := h.byUID[uid]; ok {
		it.pInfo = pInfo
		h.fix(it.index)
		return
	}
	it := &heapItem{pInfo: pInfo, index: len(h.items)}
	h.items = append(h.items, it)
	h.byUID[uid] = it
	h.up(it.index)
}

// Delete removes the pod with uid and returns it, or nil.
func (h *podHeap) Delete(uid types.UID) *framework.QueuedPodInfo {
	it, ok := h.byUID[uid]
	if !ok {
		return nil
	}
	h.removeAt(it.index)
	return it.pInfo
}

// Peek returns the first pod without removing it, or nil.
func (h *podHeap) Peek() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0].pInfo
}

// Pop removes and returns the first pod, or nil.
func (h *podHeap) Pop() *framework.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	it := h.items[0]
	h.removeAt(0)
	return it.pInfo
}

// List returns the pods in no particular order.
func (h *podHeap) List() []*framework.QueuedPodInfo {
	out := make([]*framework.QueuedPodInfo, len(h.items))
	for i, it := range h.items {
		out[i] = it.pInfo
	}
	return out
}

func (h *podHeap) removeAt(i int) {
	it := h.items[i]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	delete(h.byUID, it.pInfo.Pod.UID)
	if i != last {
		h.fix(i)
	}
}

func (h *podHeap) fix(i int) {
	if !h.down(i) {
		h.up(i)
	}
}

func (h *podHeap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].index = i
	h.items[j].index = j
}

func (h *podHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(h.items[i].pInfo, h.items[parent].pInfo) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

// down sinks item i and reports whether it moved.
func (h *podHeap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		left := 2*i + 1
		if left >= n {
			break
		}
		child := left
		if right := left + 1; right < n && h.less(h.items[right].pInfo, h.items[left].pInfo) {
			child = right
		}
		if !h.less(h.items[child].pInfo, h.items[i].pInfo) {
			break
		}
		h.swap(i, child)
		i = child
	}
	return i > start
}
