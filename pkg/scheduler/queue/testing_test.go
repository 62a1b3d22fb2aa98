package queue

import (
	"context"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Helpers shared by the queue's tests.

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// byPriorityThenTime is PrioritySort's order.
func byPriorityThenTime(a, b *framework.QueuedPodInfo) bool {
	pa, pb := priority(a.Pod), priority(b.Pod)
	return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
}

func priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

func newTestQueue(t testing.TB, opts ...Option) (*PriorityQueue, *testingclock.FakeClock, klog.Logger) {
	t.Helper()
	logger, _ := ktesting.NewTestContext(t)
	fc := testingclock.NewFakeClock(start)
	q := NewPriorityQueue(byPriorityThenTime, append([]Option{WithClock(fc)}, opts...)...)
	t.Cleanup(q.Close)
	return q, fc, logger
}

// where tells which sub-queue holds a pod: "active", "backoff", "unschedulable", "gated",
// "in flight", or "" for none.
func where(q *PriorityQueue, pod *v1.Pod) string {
	q.lock.Lock()
	defer q.lock.Unlock()
	switch {
	case q.activeQ.Get(pod.UID) != nil:
		return QueueActive
	case q.backoffQ.Get(pod.UID) != nil:
		return QueueBackoff
	case q.unschedulablePods.get(pod.UID) != nil:
		if q.unschedulablePods.pods[pod.UID].gated {
			return QueueGated
		}
		return QueueUnschedulable
	case q.inFlight.get(pod.UID) != nil:
		return "in flight"
	}
	return ""
}

// popAndFail pops the head, which must be want, and hands it back rejected by plugins (an
// Error when none).
func popAndFail(t *testing.T, q *PriorityQueue, logger klog.Logger, want *v1.Pod, plugins ...string) *framework.QueuedPodInfo {
	t.Helper()
	pInfo := mustPop(t, q, logger, want)
	fail(t, q, logger, pInfo, plugins...)
	return pInfo
}

func mustPop(t *testing.T, q *PriorityQueue, logger klog.Logger, want *v1.Pod) *framework.QueuedPodInfo {
	t.Helper()
	pInfo, err := q.Pop(logger)
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	if pInfo.Pod.UID != want.UID {
		t.Fatalf("Pop returned %s, want %s", pInfo.Pod.Name, want.Name)
	}
	return pInfo
}

func fail(t *testing.T, q *PriorityQueue, logger klog.Logger, pInfo *framework.QueuedPodInfo, plugins ...string) {
	t.Helper()
	pInfo.UnschedulablePlugins = sets.New(plugins...)
	pInfo.PendingPlugins = sets.New[string]()
	if err := q.AddUnschedulableIfNotPresent(logger, pInfo, q.SchedulingCycle()); err != nil {
		t.Fatalf("AddUnschedulableIfNotPresent: %v", err)
	}
}

// gatePlugin holds back pods with scheduling gates, as SchedulingGates does.
type gatePlugin struct{}

func (gatePlugin) Name() string { return "SchedulingGates" }

func (gatePlugin) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) > 0 {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, "waiting for scheduling gates")
	}
	return nil
}

// fakeRecorder keeps the last pending counts and the incoming counts.
type fakeRecorder struct {
	mu       sync.Mutex
	pending  map[string]int
	incoming map[[2]string]int
}

func newFakeRecorder() *fakeRecorder {
	return &fakeRecorder{pending: map[string]int{}, incoming: map[[2]string]int{}}
}

func (r *fakeRecorder) SetPendingPods(queue string, n int) {
	r.mu.Lock()
	r.pending[queue] = n
	r.mu.Unlock()
}

func (r *fakeRecorder) IncomingPod(queue, event string) {
	r.mu.Lock()
	r.incoming[[2]string{queue, event}]++
	r.mu.Unlock()
}

func (r *fakeRecorder) pendingCounts() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, v := range r.pending {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// hintFn returns a QueueingHintFn that always answers h (and err).
func hintFn(h framework.QueueingHint, err error) framework.QueueingHintFn {
	return func(klog.Logger, *v1.Pod, interface{}, interface{}) (framework.QueueingHint, error) { return h, err }
}

func hintsFor(m QueueingHintMap) Option {
	return WithQueueingHintMap(QueueingHintMapPerProfile{v1.DefaultSchedulerName: m})
}
