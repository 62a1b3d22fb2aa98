package recovery

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// newQueue is a queue whose back-off is short enough for tests: 1ms doubling to 10ms.
func newQueue() workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueue(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
}

func alwaysSynced() bool { return true }

// logContext is a context whose logger keeps every entry up to V(4), for the test to read.
func logContext(t *testing.T) (context.Context, func() ktesting.Log) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4), ktesting.BufferLogs(true)))
	buffer := logger.GetSink().(ktesting.Underlier).GetBuffer()
	return klog.NewContext(context.Background(), logger), buffer.Data
}

// entries are the log entries with message, as "<type> V<verbosity> <key/values>; <error>".
func entries(log ktesting.Log, message string) []string {
	var out []string
	for _, e := range log {
		if e.Message == message {
			out = append(out, fmt.Sprintf("%s V%d %v; %v", e.Type, e.Verbosity, e.ParameterKVList, e.Err))
		}
	}
	return out
}

// run runs w until the returned stop is called (at the latest when the test ends); stop
// returns Run's error.
func run(t *testing.T, ctx context.Context, w *Worker[string], workers int) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, workers, alwaysSynced) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(10 * time.Second):
				err = errors.New("Run did not return after its context ended")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// eventually fails the test unless cond holds within 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// counter counts calls by key.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counter) inc(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// recorder is an events.EventRecorder that keeps what it is given, the object included
// (events.FakeRecorder drops the object's name).
type recorder struct {
	mu     sync.Mutex
	events []recorded
}

type recorded struct {
	regarding                          runtime.Object
	eventType, reason, action, message string
}

var _ events.EventRecorder = &recorder{}

func (r *recorder) Eventf(regarding, _ runtime.Object, eventType, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, recorded{regarding, eventType, reason, action, fmt.Sprintf(note, args...)})
}

func (r *recorder) recorded() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func TestWorkerRetriesAFailedKeyUntilItSyncs(t *testing.T) {
	ctx, log := logContext(t)
	q := newQueue()
	var calls counter
	w := &Worker[string]{
		Name: "test-retry", Queue: q, KeyName: "thing", FailureMessage: "Syncing a thing failed",
		Sync: func(_ context.Context, key string) error {
			if calls.inc(key) <= 2 {
				return errors.New("not yet")
			}
			return nil
		},
	}
	q.Add("a")
	stop := run(t, ctx, w, 1)

	eventually(t, "a synced", func() bool { return calls.get("a") == 3 })
	// The success resets the back-off: the next failure of "a" starts again at the bottom.
	eventually(t, "a's back-off reset", func() bool { return q.NumRequeues("a") == 0 })
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if got := calls.get("a"); got != 3 {
		t.Errorf("a was synced %d times, want 3 (two failures, then the success, and no more)", got)
	}
	want := []string{"ERROR V0 [thing a]; not yet", "ERROR V0 [thing a]; not yet"}
	if got := entries(log(), "Syncing a thing failed"); !slices.Equal(got, want) {
		t.Errorf("failures logged as %q, want %q", got, want)
	}
}

func TestWorkerRecoversAPanickingSyncAndRetriesIt(t *testing.T) {
	ctx, log := logContext(t)
	q := newQueue()
	rec := &recorder{}
	var calls counter
	w := &Worker[string]{
		Name: "test-panic", Queue: q, Recorder: rec, KeyName: "thing", FailureMessage: "Syncing a thing failed",
		Reference: func(key string) *corev1.ObjectReference { return Reference("Thing", key) },
		Sync: func(_ context.Context, key string) error {
			if calls.inc(key) > 1 {
				return nil
			}
			switch key {
			case "bad":
				var m map[string]int
				m["x"] = 1 // a controller bug: assignment to a nil map
			case "failing":
				return errors.New("plain failure")
			}
			return nil
		},
	}
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component("test-panic")))
	q.Add("bad")
	q.Add("failing")
	stop := run(t, ctx, w, 2)

	eventually(t, "both keys retried", func() bool { return calls.get("bad") == 2 && calls.get("failing") == 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component("test-panic"))); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=controller/test-panic} = %v, want %v", got, before+1)
	}
	// One event, for the panic only, on the object Reference names.
	got := rec.recorded()
	if len(got) != 1 {
		t.Fatalf("events %+v, want one, for the panic", got)
	}
	e := got[0]
	if ref, ok := e.regarding.(*corev1.ObjectReference); !ok || ref.Kind != "Thing" || ref.Name != "bad" {
		t.Errorf("event on %#v, want Thing bad", e.regarding)
	}
	wantMessage := "internal error in controller/test-panic: recovered from panic: assignment to entry in nil map; retrying with back-off"
	if e.eventType != corev1.EventTypeWarning || e.reason != FailedSync || e.message != wantMessage {
		t.Errorf("event %s %s %q, want Warning %s %q", e.eventType, e.reason, e.message, FailedSync, wantMessage)
	}
	logged := entries(log(), "Syncing a thing failed")
	if len(logged) != 2 || !slices.ContainsFunc(logged, func(s string) bool { return strings.HasPrefix(s, "ERROR V0 [thing bad]; internal error") }) {
		t.Errorf("failures logged as %q, want the panic of bad and the failure of failing", logged)
	}
}

func TestWorkerWithoutReferenceRecordsNoEvent(t *testing.T) {
	ctx, _ := logContext(t)
	q := newQueue()
	rec := &recorder{}
	var calls counter
	w := &Worker[string]{
		Name: "test-no-reference", Queue: q, Recorder: rec,
		Sync: func(_ context.Context, key string) error {
			if calls.inc(key) == 1 {
				panic("once")
			}
			return nil
		},
	}
	q.Add("a")
	stop := run(t, ctx, w, 1)
	eventually(t, "a retried after its panic", func() bool { return calls.get("a") == 2 })
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if got := rec.recorded(); len(got) != 0 {
		t.Errorf("events %+v, want none without a Reference", got)
	}
}

func TestWorkerLogsExpectedFailuresQuietly(t *testing.T) {
	ctx, log := logContext(t)
	q := newQueue()
	errPlain := errors.New("plain failure")
	var calls counter
	w := &Worker[string]{
		Name: "test-expected", Queue: q, KeyName: "thing", FailureMessage: "Syncing a thing failed",
		// Everything but errPlain is routine, a panic too as far as this function goes: the
		// Worker must not ask it about panics.
		Expected: func(err error) (string, bool) { return "Cache behind; retrying", !errors.Is(err, errPlain) },
		Sync: func(_ context.Context, key string) error {
			if calls.inc(key) > 1 {
				return nil
			}
			switch key {
			case "routine":
				return errors.New("cache behind")
			case "plain":
				return errPlain
			default:
				panic("boom")
			}
		},
	}
	for _, key := range []string{"routine", "plain", "panic"} {
		q.Add(key)
	}
	stop := run(t, ctx, w, 1)
	eventually(t, "every key retried", func() bool {
		return calls.get("routine") == 2 && calls.get("plain") == 2 && calls.get("panic") == 2
	})
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v", err)
	}

	if got, want := entries(log(), "Cache behind; retrying"), []string{"INFO V4 [thing routine]; <nil>"}; !slices.Equal(got, want) {
		t.Errorf("routine failures logged as %q, want %q", got, want)
	}
	failed := entries(log(), "Syncing a thing failed")
	slices.Sort(failed)
	want := []string{"ERROR V0 [thing panic]; internal error in controller/test-expected: recovered from panic: boom", "ERROR V0 [thing plain]; plain failure"}
	if !slices.Equal(failed, want) {
		t.Errorf("failures logged as errors: %q, want %q", failed, want)
	}
}

func TestWorkerRunReturnsOnlyOnceEveryWorkerStopped(t *testing.T) {
	ctx, log := logContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	q := newQueue()
	started := make(chan string, 2)
	release := make(chan struct{})
	var inFlight atomic.Int32
	w := &Worker[string]{
		Name: "test-stop", Title: "test controller", Queue: q,
		Sync: func(_ context.Context, key string) error {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			started <- key
			<-release
			return nil
		},
	}
	q.Add("a")
	q.Add("b")
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx, 2, alwaysSynced) }()
	for range 2 {
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatal("two workers did not start syncing")
		}
	}

	cancel()
	// The queue is shut down first, while the syncs still run; Run waits for them.
	eventually(t, "the queue shut down", q.ShuttingDown)
	select {
	case err := <-done:
		t.Fatalf("Run() = %v while two syncs were still running", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v, want nil once its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the syncs finished")
	}
	if n := inFlight.Load(); n != 0 {
		t.Errorf("%d syncs still running after Run returned", n)
	}
	for _, message := range []string{"Starting test controller", "Shutting down test controller"} {
		if got := entries(log(), message); len(got) != 1 {
			t.Errorf("%q logged %d times, want once", message, len(got))
		}
	}
}

func TestWorkerRunWaitsForTheCaches(t *testing.T) {
	t.Run("they never sync", func(t *testing.T) {
		ctx, _ := logContext(t)
		ctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		q := newQueue()
		q.Add("a")
		w := &Worker[string]{
			Name:           "test-never-synced",
			Queue:          q,
			Sync:           func(context.Context, string) error { t.Error("a key synced before the caches did"); return nil },
			AfterCacheSync: func(context.Context) { t.Error("AfterCacheSync ran though the caches never synced") },
		}
		// cache.WaitForNamedCacheSyncWithContext gives up only when ctx ends, and an ended
		// context is a stop, not a failure.
		if err := w.Run(ctx, 2, alwaysSynced, func() bool { return false }); err != nil {
			t.Errorf("Run() = %v, want nil once its context ended", err)
		}
		if !q.ShuttingDown() {
			t.Error("the queue was not shut down")
		}
	})

	t.Run("AfterCacheSync runs once they synced, before the workers", func(t *testing.T) {
		ctx, _ := logContext(t)
		q := newQueue()
		var cachesSynced atomic.Bool
		timer := time.AfterFunc(150*time.Millisecond, func() { cachesSynced.Store(true) })
		defer timer.Stop()
		var mu sync.Mutex
		var order []string
		note := func(s string) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, s)
		}
		w := &Worker[string]{
			Name:  "test-after-sync",
			Queue: q,
			Sync:  func(_ context.Context, key string) error { note("sync " + key); return nil },
			AfterCacheSync: func(context.Context) {
				if !cachesSynced.Load() {
					t.Error("AfterCacheSync ran before the caches synced")
				}
				note("after cache sync")
				q.Add("queued by the hook")
			},
		}
		q.Add("queued before Run")
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(ctx, 2, alwaysSynced, cachesSynced.Load) }()
		eventually(t, "both keys synced", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(order) == 3
		})
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run() = %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Run did not return after its context ended")
		}
		mu.Lock()
		defer mu.Unlock()
		if order[0] != "after cache sync" {
			t.Errorf("ran in the order %q, want AfterCacheSync first", order)
		}
		if !slices.Contains(order, "sync queued by the hook") || !slices.Contains(order, "sync queued before Run") {
			t.Errorf("ran %q, want both keys synced", order)
		}
	})
}
