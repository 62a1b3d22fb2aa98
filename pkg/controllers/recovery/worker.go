package recovery

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Worker runs a controller's work queue: workers goroutines take keys off Queue and sync
// them one at a time (never two at once on one key: the queue sees to that). A key whose
// sync fails, or panics, is queued again with the queue's rate-limited back-off; one whose
// sync succeeds has its back-off reset.
//
// Run goes through these steps:
//
//	wait for the caches ─synced─► AfterCacheSync ─► start the workers ─► until ctx is done ─┐
//	        └─ctx done────────────────────────────────────────────────────────────────────┤
//	                                  shut the queue down, wait for every worker, return ◄─┘
//
// A Worker is built by the controller's Run, from its queue and recorder as they are then,
// and serves one Run: a shut-down queue cannot be started again.
type Worker[T comparable] struct {
	// Name is the controller's name: its panics are counted in berth_recovered_panics_total
	// under controller/<Name>.
	Name string
	// Title names the controller in its start and stop logs and in Run's error ("endpoint
	// controller"); default "<Name> controller".
	Title string
	// Queue holds the keys to sync. Run shuts it down before it returns.
	Queue workqueue.TypedRateLimitingInterface[T]
	// Sync is one key's reconcile.
	Sync func(ctx context.Context, key T) error
	// Reference is the object a panicking sync's Warning FailedSync event is on; nil records
	// no event.
	Reference func(key T) *corev1.ObjectReference
	// Recorder gets the FailedSync events; nil records none (unit tests).
	Recorder events.EventRecorder

	// KeyName is the key's name in structured logs ("service", "namespace"); default "key".
	KeyName string
	// FailureMessage is what a failed sync is logged with, through
	// utilruntime.HandleErrorWithContext.
	FailureMessage string
	// Expected, when set, picks out failures that are routine (a cache behind the
	// controller's own write, a conflict with another writer): those are logged at V(4) with
	// the message it returns instead of as errors, and retried like any other. A panic is
	// never routine.
	Expected func(err error) (message string, ok bool)
	// AfterCacheSync, when set, runs once after the caches synced, before the workers start
	// (a first pass over what is already stored).
	AfterCacheSync func(ctx context.Context)
}

// Run waits for synced, starts workers and blocks until ctx is done; then it shuts the queue
// down and returns once every worker has stopped. It fails only if the caches never sync
// while ctx lives (cache.WaitForNamedCacheSyncWithContext gives up only when ctx ends, so
// that is a guard rather than a path taken today).
func (w *Worker[T]) Run(ctx context.Context, workers int, synced ...cache.InformerSynced) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting "+w.title(), "workers", workers)

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down " + w.title())
		w.Queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, synced...) {
		if ctx.Err() == nil {
			informers := "informers"
			if len(synced) == 1 {
				informers = "informer"
			}
			return fmt.Errorf("the %s's %s did not sync", w.title(), informers)
		}
		return nil
	}
	if w.AfterCacheSync != nil {
		w.AfterCacheSync(ctx)
	}
	for range workers {
		// A panic outside Sync (in the queue, say) restarts the loop after a back-off.
		wg.Go(func() { panics.Forever(ctx, Component(w.Name), w.work) })
	}
	<-ctx.Done()
	return nil
}

// work syncs keys until the queue is shut down.
func (w *Worker[T]) work(ctx context.Context) {
	for w.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one key, retrying it with back-off on failure, a panic included.
// It returns false once the queue is shut down.
func (w *Worker[T]) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := w.Queue.Get()
	if shutdown {
		return false
	}
	defer w.Queue.Done(key)

	err := Sync(ctx, w.Name, func() error { return w.Sync(ctx, key) })
	if err != nil {
		w.logFailure(ctx, key, err)
		w.Queue.AddRateLimited(key)
		return true
	}
	w.Queue.Forget(key)
	return true
}

// logFailure tells of a failed sync: a panic with a Warning event on its object as well as
// the log line, a routine failure at V(4) only.
func (w *Worker[T]) logFailure(ctx context.Context, key T, err error) {
	if IsPanic(err) {
		if w.Reference != nil {
			RecordPanic(w.Recorder, w.Reference(key), err)
		}
	} else if w.Expected != nil {
		if message, ok := w.Expected(err); ok {
			klog.FromContext(ctx).V(4).Info(message, w.keyName(), key)
			return
		}
	}
	utilruntime.HandleErrorWithContext(ctx, err, w.FailureMessage, w.keyName(), key)
}

func (w *Worker[T]) title() string {
	if w.Title == "" {
		return w.Name + " controller"
	}
	return w.Title
}

func (w *Worker[T]) keyName() string {
	if w.KeyName == "" {
		return "key"
	}
	return w.KeyName
}

// ReferenceByKey is a Worker's Reference for queues of namespace/name keys of one kind: the
// FailedSync event goes on the object the key names.
func ReferenceByKey(apiVersion, kind string) func(key string) *corev1.ObjectReference {
	return func(key string) *corev1.ObjectReference {
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		return &corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: ns, Name: name}
	}
}
