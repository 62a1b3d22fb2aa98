package podworkers

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/pleg"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// fakeSyncer records the calls; a call whose key ("SyncPod:a", ...) has a gate blocks until the
// gate opens or its context ends.
type fakeSyncer struct {
	mu    sync.Mutex
	calls []string
	gates map[string]chan struct{}
	// panics are how many more times a call of the key panics.
	panics map[string]int
}

func newFakeSyncer() *fakeSyncer {
	return &fakeSyncer{gates: map[string]chan struct{}{}, panics: map[string]int{}}
}

func (f *fakeSyncer) gate(key string) chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	f.gates[key] = ch
	return ch
}

func (f *fakeSyncer) record(ctx context.Context, key, call string) error {
	f.mu.Lock()
	f.calls = append(f.calls, call)
	gate := f.gates[key]
	panicNow := f.panics[key] > 0
	if panicNow {
		f.panics[key]--
	}
	f.mu.Unlock()
	if panicNow {
		var pod *v1.Pod
		_ = pod.Name // a nil dereference, as an unchecked optional field makes one
	}
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeSyncer) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeSyncer) SyncPod(ctx context.Context, updateType nodetypes.SyncPodType, pod, mirrorPod *v1.Pod, podStatus *container.PodStatus) (bool, error) {
	err := f.record(ctx, "SyncPod:"+string(pod.UID), fmt.Sprintf("SyncPod:%s:%s:%s", pod.UID, updateType, pod.ResourceVersion))
	return false, err
}

func (f *fakeSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, gracePeriod *int64, podStatusFn func(*v1.PodStatus)) error {
	return f.record(ctx, "SyncTerminatingPod:"+string(pod.UID), fmt.Sprintf("SyncTerminatingPod:%s:gp=%d", pod.UID, *gracePeriod))
}

func (f *fakeSyncer) SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error {
	return f.record(ctx, "SyncTerminatingRuntimePod:"+string(runningPod.ID), "SyncTerminatingRuntimePod:"+string(runningPod.ID))
}

func (f *fakeSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) error {
	return f.record(ctx, "SyncTerminatedPod:"+string(pod.UID), "SyncTerminatedPod:"+string(pod.UID))
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func waitCalls(t *testing.T, f *fakeSyncer, want ...string) {
	t.Helper()
	waitFor(t, strings.Join(want, ", "), func() bool { return len(f.got()) >= len(want) })
	if got := f.got(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("calls\n got  %v\n want %v", got, want)
	}
}

// relister moves the cache's global time forward every few milliseconds, as the PLEG does.
func relister(ctx context.Context, c pleg.Cache) {
	for {
		c.UpdateTime(time.Now())
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Millisecond):
		}
	}
}

type testEnv struct {
	pw     *podWorkers
	syncer *fakeSyncer
	cache  pleg.Cache
	queue  WorkQueue
	qclock *clocktesting.FakeClock
	cancel context.CancelFunc
	done   chan struct{}
}

func newTestEnv(t *testing.T) *testEnv {
	e := &testEnv{syncer: newFakeSyncer(), cache: pleg.NewCache(), qclock: clocktesting.NewFakeClock(t0), done: make(chan struct{})}
	e.queue = NewWorkQueue(e.qclock)
	e.pw = newPodWorkers(e.syncer, record.NewFakeRecorder(100), e.queue, time.Minute, 10*time.Second, e.cache, clock.RealClock{})
	e.pw.jitter = func(d time.Duration, _ float64) time.Duration { return d }
	var ctx context.Context
	ctx, e.cancel = context.WithCancel(context.Background())
	go func() {
		e.pw.Run(ctx)
		close(e.done)
	}()
	t.Cleanup(e.stop)
	return e
}

func (e *testEnv) stop() {
	e.cancel()
	<-e.done
}

func (e *testEnv) workers() int {
	e.pw.mu.Lock()
	defer e.pw.mu.Unlock()
	return len(e.pw.workers)
}

func podV(uid, name, version string) *v1.Pod {
	p := newPod(uid).name(name).grace(30).Pod
	p.ResourceVersion = version
	return p
}

func TestWorkerOrdering(t *testing.T) {
	e := newTestEnv(t)
	e.cache.UpdateTime(time.Now()) // the first relist
	gate := e.syncer.gate("SyncPod:a")

	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("a", "a", "1")})
	waitCalls(t, e.syncer, "SyncPod:a:create:1")

	// While the first sync runs, two updates arrive: only the latest is synced after it.
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodUpdate, Pod: podV("a", "a", "2")})
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: podV("a", "a", "3")})
	e.syncer.mu.Lock()
	delete(e.syncer.gates, "SyncPod:a")
	e.syncer.mu.Unlock()
	close(gate)

	// The next sync waits for a runtime status newer than the first sync.
	time.Sleep(50 * time.Millisecond)
	if got := e.syncer.got(); len(got) != 1 {
		t.Fatalf("synced again before a fresher status: %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go relister(ctx, e.cache)
	waitCalls(t, e.syncer, "SyncPod:a:create:1", "SyncPod:a:sync:3")

	// A successful sync puts the pod in the work queue for the resync interval.
	waitFor(t, "the requeue", func() bool {
		e.qclock.Step(time.Minute)
		return len(e.queue.GetWork()) == 1
	})

	// Kill: terminating with the grace period, the kill's channel, then clean-up.
	completed := make(chan struct{})
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, Pod: podV("a", "a", "3"),
		KillPodOptions: &KillPodOptions{CompletedCh: completed}})
	select {
	case <-completed:
	case <-time.After(10 * time.Second):
		t.Fatal("the kill did not complete")
	}
	waitFor(t, "the worker to finish", func() bool { return e.pw.ShouldPodBeFinished("a") })
	waitCalls(t, e.syncer, "SyncPod:a:create:1", "SyncPod:a:sync:3", "SyncTerminatingPod:a:gp=30", "SyncTerminatedPod:a")
	waitFor(t, "the worker goroutine to exit", func() bool { return e.workers() == 0 })

	// Finished pods ignore updates until forgotten.
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: podV("a", "a", "4")})
	if known := e.pw.SyncKnownPods(nil); len(known) != 0 {
		t.Errorf("known after forgetting: %v", known)
	}
	if e.pw.IsPodKnownTerminated("a") || e.pw.CouldHaveRunningContainers("a") {
		t.Error("a forgotten pod is unknown and cannot run")
	}
}

func TestKillCancelsRunningSync(t *testing.T) {
	e := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go relister(ctx, e.cache)
	e.syncer.gate("SyncPod:a") // never opened: SyncPod runs until cancelled

	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("a", "a", "1")})
	waitCalls(t, e.syncer, "SyncPod:a:create:1")
	grace := int64(2)
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, Pod: podV("a", "a", "1"),
		KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: &grace}})
	waitFor(t, "the worker to finish", func() bool { return e.pw.ShouldPodBeFinished("a") })
	waitCalls(t, e.syncer, "SyncPod:a:create:1", "SyncTerminatingPod:a:gp=2", "SyncTerminatedPod:a")
}

func TestSameFullNameStartsAfterTheOldPodFinished(t *testing.T) {
	e := newTestEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go relister(ctx, e.cache)

	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("old", "web", "1")})
	waitCalls(t, e.syncer, "SyncPod:old:create:1")
	cleanup := e.syncer.gate("SyncTerminatedPod:old")
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, Pod: podV("old", "web", "1")})
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("new", "web", "1")})
	waitCalls(t, e.syncer, "SyncPod:old:create:1", "SyncTerminatingPod:old:gp=30", "SyncTerminatedPod:old")

	time.Sleep(50 * time.Millisecond)
	if got := e.syncer.got(); len(got) != 3 {
		t.Fatalf("the new pod started before the old one released its resources: %v", got)
	}
	close(cleanup)
	waitCalls(t, e.syncer, "SyncPod:old:create:1", "SyncTerminatingPod:old:gp=30", "SyncTerminatedPod:old", "SyncPod:new:create:1")

	// A pod of another name never waits.
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("other", "db", "1")})
	waitFor(t, "the other pod", func() bool { return len(e.syncer.got()) == 5 })
}

func TestRuntimePodIsKilledWithoutStatus(t *testing.T) {
	e := newTestEnv(t) // no relist at all: a runtime pod does not wait for the cache
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodKill, RunningPod: &container.Pod{ID: "r", Name: "r", Namespace: "ns"}})
	waitCalls(t, e.syncer, "SyncTerminatingRuntimePod:r")
	waitFor(t, "the worker goroutine to exit", func() bool { return e.workers() == 0 })
	if known := e.pw.SyncKnownPods(nil); len(known) != 0 {
		t.Errorf("a killed runtime pod is still known: %v", known)
	}
}

func TestStatusErrorIsRetriedWithEvent(t *testing.T) {
	e := newTestEnv(t)
	e.cache.Set("a", nil, fmt.Errorf("rpc error"), time.Now())
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("a", "a", "1")})
	rec := e.pw.recorder.(*record.FakeRecorder)
	select {
	case ev := <-rec.Events:
		if !strings.Contains(ev, "FailedSync") || !strings.Contains(ev, "error determining status: rpc error") {
			t.Errorf("event %q", ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no FailedSync event")
	}
	waitFor(t, "the back-off requeue", func() bool {
		e.qclock.Step(10 * time.Second)
		return len(e.queue.GetWork()) == 1
	})
	if got := e.syncer.got(); len(got) != 0 {
		t.Errorf("synced without a status: %v", got)
	}
}

func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	e := newTestEnv(t)
	e.cache.UpdateTime(time.Now())
	for i := 0; i < 20; i++ {
		uid := fmt.Sprintf("p%d", i)
		if i%2 == 0 {
			e.syncer.gate("SyncPod:" + uid) // blocked in SyncPod until cancelled
		}
		e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV(uid, uid, "1")})
	}
	// The finished ones now wait for a status newer than their sync, which never comes.
	waitFor(t, "every pod to sync", func() bool { return len(e.syncer.got()) == 20 })
	for i := 0; i < 20; i += 3 {
		uid := fmt.Sprintf("p%d", i)
		e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: podV(uid, uid, "2")})
	}
	if n := e.workers(); n != 20 {
		t.Fatalf("%d workers, want 20", n)
	}
	e.stop()
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
	e.pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("late", "late", "1")})
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("an update after Run ended started a worker (%d goroutines, %d before)", n, before)
	}
}

func TestWorkQueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	q := NewWorkQueue(clk)
	q.Enqueue("a", 0)
	q.Enqueue("b", time.Second)
	q.Enqueue("c", time.Minute)
	q.Enqueue("c", 2*time.Second) // replaces
	tests := []struct {
		at   time.Duration
		want string
	}{
		{0, "a"},
		{0, ""},
		{time.Second, "b"},
		{2 * time.Second, "c"},
		{time.Hour, ""},
	}
	for _, tt := range tests {
		clk.SetTime(t0.Add(tt.at))
		var got []string
		for _, uid := range q.GetWork() {
			got = append(got, string(uid))
		}
		if strings.Join(got, ",") != tt.want {
			t.Errorf("at %v: GetWork = %v, want %q", tt.at, got, tt.want)
		}
	}
}

// panicReporter is a fakeSyncer that records the panics reported to it.
type panicReporter struct {
	*fakeSyncer
	reported chan error
}

func (r *panicReporter) PodSyncPanicked(_ context.Context, pod *v1.Pod, _ *container.PodStatus, err error) {
	r.reported <- err
}

// A sync that panics is that pod's failed sync: the workers live on, the pod gets a FailedSync
// event and its status reason, the panic is counted, the pod is retried after the back-off,
// and other pods are untouched.
func TestASyncPanicIsContainedAndRetried(t *testing.T) {
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component))
	syncer := &panicReporter{fakeSyncer: newFakeSyncer(), reported: make(chan error, 10)}
	syncer.panics["SyncPod:a"] = 1
	recorder := record.NewFakeRecorder(100)
	qclock := clocktesting.NewFakeClock(t0)
	queue := NewWorkQueue(qclock)
	cache := pleg.NewCache()
	pw := newPodWorkers(syncer, recorder, queue, time.Minute, 10*time.Second, cache, clock.RealClock{})
	pw.jitter = func(d time.Duration, _ float64) time.Duration { return d }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pw.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	go relister(ctx, cache)

	pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("a", "a", "1")})
	pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodCreate, Pod: podV("b", "b", "1")})
	select {
	case err := <-syncer.reported:
		if !strings.Contains(err.Error(), "internal error in podworker: recovered from panic: runtime error: invalid memory address or nil pointer dereference") {
			t.Errorf("reported %q", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the panic was not reported to the syncer")
	}
	waitFor(t, "pod b's sync", func() bool { return strings.Contains(strings.Join(syncer.got(), " "), "SyncPod:b:create:1") })
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync error syncing pod: internal error in podworker: recovered from panic") {
			t.Errorf("event %q", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no FailedSync event")
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component)); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=podworker} = %v, want %v", got, before+1)
	}

	// The failed sync is due again after the back-off (10 s), not the resync (1 min).
	// The queue's clock stays at t0 until the requeue is seen, so its due time tells which.
	wq := queue.(*workQueue)
	var due time.Time
	waitFor(t, "pod a requeued", func() bool {
		wq.mu.Lock()
		defer wq.mu.Unlock()
		var ok bool
		due, ok = wq.due["a"]
		return ok
	})
	if want := t0.Add(10 * time.Second); !due.Equal(want) {
		t.Fatalf("pod a is due again at %s, want %s (the back-off, not the resync)", due, want)
	}
	qclock.SetTime(t0.Add(11 * time.Second))
	if work := queue.GetWork(); !slices.Contains(work, "a") {
		t.Fatalf("pod a is not due after the back-off: %v", work)
	}
	pw.UpdatePod(UpdatePodOptions{UpdateType: nodetypes.SyncPodSync, Pod: podV("a", "a", "1")})
	waitFor(t, "pod a's retry", func() bool { return strings.Count(strings.Join(syncer.got(), " "), "SyncPod:a:") == 2 })
	if n := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component)); n != before+1 {
		t.Errorf("the retry panicked too: counter %v", n)
	}
}
