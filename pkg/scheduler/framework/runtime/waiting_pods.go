package runtime

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// WaitingPodsMap holds the pods that Permit plugins hold, by UID. Profiles may share one
// (WithWaitingPods).
type WaitingPodsMap struct {
	mu   sync.RWMutex
	pods map[types.UID]*waitingPod
}

var _ framework.WaitingPods = &WaitingPodsMap{}

// NewWaitingPodsMap returns an empty map.
func NewWaitingPodsMap() *WaitingPodsMap {
	return &WaitingPodsMap{pods: map[types.UID]*waitingPod{}}
}

func (m *WaitingPodsMap) add(wp *waitingPod) {
	m.mu.Lock()
	m.pods[wp.pod.UID] = wp
	m.mu.Unlock()
}

// remove forgets wp, unless the pod's UID already names a newer waiting pod.
func (m *WaitingPodsMap) remove(wp *waitingPod) {
	m.mu.Lock()
	if m.pods[wp.pod.UID] == wp {
		delete(m.pods, wp.pod.UID)
	}
	m.mu.Unlock()
}

func (m *WaitingPodsMap) get(uid types.UID) *waitingPod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

// IterateOverWaitingPods calls fn for every waiting pod, under the map's read lock: fn may
// Allow or Reject the pod it gets, but must not call back into the map.
func (m *WaitingPodsMap) IterateOverWaitingPods(fn func(framework.WaitingPod)) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, wp := range m.pods {
		fn(wp)
	}
}

// GetWaitingPod returns the waiting pod with uid, or nil.
func (m *WaitingPodsMap) GetWaitingPod(uid types.UID) framework.WaitingPod {
	if wp := m.get(uid); wp != nil {
		return wp
	}
	return nil // not a typed nil
}

// RejectWaitingPod rejects the waiting pod with uid (it was deleted, or preempted), and
// reports whether this decided its fate (it was waiting, not yet allowed or rejected).
func (m *WaitingPodsMap) RejectWaitingPod(uid types.UID) bool {
	if wp := m.get(uid); wp != nil {
		return wp.stop(framework.NewStatus(framework.Unschedulable, "removed"))
	}
	return false
}

// waitingPod is a pod held at Permit. Its life:
//
//	waiting ──Allow by the last pending plugin──► allowed  (Success on result)
//	waiting ──Reject, a plugin's timeout, stop──► rejected (that status on result)
//
// result has room for one status, so that Allow and Reject never block; the first decision
// wins and later ones are dropped. Every decision stops the timers that are left.
type waitingPod struct {
	pod    *v1.Pod
	result chan *framework.Status

	mu      sync.Mutex
	pending map[string]clock.Timer // plugin → its timeout
	decided bool
}

var _ framework.WaitingPod = &waitingPod{}

// newWaitingPod holds pod until each plugin in waits allows it, each within its own timeout.
func newWaitingPod(pod *v1.Pod, waits map[string]time.Duration, clk clock.WithDelayedExecution) *waitingPod {
	wp := &waitingPod{pod: pod, result: make(chan *framework.Status, 1), pending: make(map[string]clock.Timer, len(waits))}
	// A timer may fire before the loop ends; the lock makes its Reject wait for the map.
	wp.mu.Lock()
	defer wp.mu.Unlock()
	for plugin, wait := range waits {
		wp.pending[plugin] = clk.AfterFunc(wait, func() {
			// Reject stops the other timers; a fake clock runs this callback while holding
			// the lock that Stop takes, so reject from a goroutine of our own.
			go wp.Reject(plugin, fmt.Sprintf("rejected due to timeout after waiting %v at plugin %v", wait, plugin))
		})
	}
	return wp
}

// GetPod returns the pod.
func (w *waitingPod) GetPod() *v1.Pod { return w.pod }

// GetPendingPlugins lists the plugins that have not allowed the pod yet.
func (w *waitingPod) GetPendingPlugins() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.pending))
	for p := range w.pending {
		out = append(out, p)
	}
	return out
}

// Allow records that pluginName allows the pod; the last pending plugin to allow it lets it
// go on to bind.
func (w *waitingPod) Allow(pluginName string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.pending[pluginName]; ok {
		t.Stop()
		delete(w.pending, pluginName)
	}
	if len(w.pending) > 0 || w.decided {
		return
	}
	w.decided = true
	w.send(framework.NewStatus(framework.Success))
}

// Reject makes the pod Unschedulable, on behalf of pluginName.
func (w *waitingPod) Reject(pluginName, msg string) {
	w.stop(framework.NewStatus(framework.Unschedulable, msg).WithPlugin(pluginName))
}

// stop decides the pod's fate with s unless it was decided already, stops the timers left,
// and reports whether s was the decision.
func (w *waitingPod) stop(s *framework.Status) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.pending {
		t.Stop()
	}
	if w.decided {
		return false
	}
	w.decided = true
	w.send(s)
	return true
}

func (w *waitingPod) send(s *framework.Status) {
	select {
	case w.result <- s:
	default:
	}
}
