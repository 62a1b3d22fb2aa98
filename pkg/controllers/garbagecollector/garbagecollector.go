// Package garbagecollector is berth's garbage collector, kube-controller-manager's
// garbagecollector controller: what makes "kubectl delete" of an owner (a ReplicaSet, a Job,
// any object named in others' metadata.ownerReferences) reach its dependents. It stands
// beside the pod's flow as a client of the API server: the API server only marks an object
// being deleted with a finalizer (foregroundDeletion, orphan) or deletes it outright
// (background), and this collector does the rest.
//
// It keeps a graph of ownerReferences (graph.go) built from metadata-only informers over every
// resource discovery reports as deletable, listable and watchable (monitors.go, discovered
// again every 30 s), or from the typed informers other controllers already run. The graph builder (graph_builder.go) applies the informers' changes in
// one goroutine and queues nodes:
//
//	informers ─► graph changes ─► graph builder ─┬─► attemptToDelete ─► delete dependents whose
//	                                             │     owners are all gone (background), delete
//	                                             │     blocking dependents of foreground-deleted
//	                                             │     owners, then drop their finalizer
//	                                             └─► attemptToOrphan ─► strip the owner from its
//	                                                   dependents, then drop the orphan finalizer
//
// Both queues are worked by recovery.Worker, so one malformed object costs a retry with
// back-off, never the collector. Decisions about one node are a pure function of what the
// API server said (plan.go); operations.go holds the API calls.
package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/controllers/sharedmetadata"
)

// controllerName names the collector in logs and berth_recovered_panics_total.
const controllerName = "garbagecollector"

// initialSyncTimeout is how long Run waits for the monitors' first lists before collecting
// anyway, as kube-controller-manager does: a resource that never lists must not stop the rest.
const initialSyncTimeout = 30 * time.Second

// DefaultIgnoredResources are the resources the collector does not watch, as upstream's:
// events, which are many, short-lived and never owners.
func DefaultIgnoredResources() map[schema.GroupResource]struct{} {
	return map[schema.GroupResource]struct{}{
		{Group: "", Resource: "events"}:                 {},
		{Group: eventsv1.GroupName, Resource: "events"}: {},
	}
}

// GarbageCollector deletes objects whose owners are gone and carries out foreground and
// orphan deletion. Build it with NewGarbageCollector and call Run once.
type GarbageCollector struct {
	metadata  metadata.Interface
	mapper    meta.ResettableRESTMapper
	discovery discovery.DiscoveryInterface

	graph    *graphBuilder
	monitors *monitors
	// attemptToDelete holds nodes that may be collectable, or owners waiting for their
	// dependents; attemptToOrphan holds owners whose dependents are to be orphaned.
	attemptToDelete workqueue.TypedRateLimitingInterface[*node]
	attemptToOrphan workqueue.TypedRateLimitingInterface[*node]
	absent          *absentOwners

	// Recorder, when set, gets the OwnerRefInvalidNamespace events and the Warning events on
	// objects whose processing panicked.
	Recorder events.EventRecorder
	// Shared, when set, are the other controllers' informers: a resource one of them watches
	// is read through it rather than through a metadata informer.
	Shared SharedInformers
	// Metadata, when set, are the metadata informers the collector shares with other
	// controllers (the resource-quota controller's custom resources); by default it has its
	// own, on its metadata client.
	Metadata *sharedmetadata.Informers
}

// NewGarbageCollector returns a collector that reads and writes through meta, maps kinds with
// mapper (reset when discovery reports new resources) and watches every deletable resource
// discovery reports except ignored (DefaultIgnoredResources if nil).
func NewGarbageCollector(meta metadata.Interface, mapper meta.ResettableRESTMapper, discovery discovery.DiscoveryInterface,
	ignored map[schema.GroupResource]struct{}) (*GarbageCollector, error) {
	if meta == nil || mapper == nil || discovery == nil {
		return nil, errors.New("the garbage collector needs a metadata client, a REST mapper and a discovery client")
	}
	if ignored == nil {
		ignored = DefaultIgnoredResources()
	}
	newQueue := func(name string) workqueue.TypedRateLimitingInterface[*node] {
		return workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[*node](),
			workqueue.TypedRateLimitingQueueConfig[*node]{Name: name})
	}
	gc := &GarbageCollector{
		metadata:        meta,
		mapper:          mapper,
		discovery:       discovery,
		attemptToDelete: newQueue("garbage_collector_attempt_to_delete"),
		attemptToOrphan: newQueue("garbage_collector_attempt_to_orphan"),
		absent:          newAbsentOwners(),
	}
	gc.graph = newGraphBuilder(gc.attemptToDelete, gc.attemptToOrphan, gc.absent)
	gc.monitors = &monitors{metadata: sharedmetadata.New(meta), mapper: mapper, ignored: maps.Clone(ignored), handler: gc.graph.handler}
	return gc, nil
}

// Run discovers the resources, starts their monitors and the graph builder, and runs workers
// workers on each queue until ctx is done; discovery is asked again every 30 s. It returns
// once everything it started has stopped.
func (gc *GarbageCollector) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	gc.graph.recorder = gc.Recorder
	gc.monitors.shared = gc.Shared
	if gc.Metadata != nil {
		gc.monitors.metadata = gc.Metadata
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	graphDone := make(chan struct{})
	go func() {
		defer close(graphDone)
		gc.graph.run(ctx)
	}()
	// Stopping goes from the producers of graph changes to their consumer: the resync loop
	// and the workers, then the monitors, then the graph builder.
	var loops sync.WaitGroup
	defer func() {
		cancel()
		loops.Wait()
		gc.monitors.stop()
		gc.graph.changes.ShutDown()
		<-graphDone
	}()

	// The first sync is made here so that the workers' wait below has monitors to wait for.
	known := gc.resyncMonitors(ctx, nil)
	loops.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) { known = gc.resyncMonitors(ctx, known) }, discoveryResyncPeriod)
	})

	start := time.Now()
	var timedOut sync.Once
	synced := func() bool {
		if gc.monitors.synced() {
			return true
		}
		if time.Since(start) > initialSyncTimeout {
			timedOut.Do(func() {
				logger.Info("Garbage collector: not all resource monitors could be synced, proceeding anyways")
			})
			return true
		}
		return false
	}
	deleter := &recovery.Worker[*node]{
		Name:           controllerName,
		Title:          "garbage collector attemptToDelete workers",
		Queue:          gc.attemptToDelete,
		Sync:           gc.syncAttemptToDelete,
		Reference:      func(n *node) *corev1.ObjectReference { return n.identity.eventReference() },
		Recorder:       gc.Recorder,
		KeyName:        "item",
		FailureMessage: "Error syncing item",
		Expected:       expectedDeleteFailure,
	}
	orphaner := &recovery.Worker[*node]{
		Name:           controllerName,
		Title:          "garbage collector attemptToOrphan workers",
		Queue:          gc.attemptToOrphan,
		Sync:           gc.syncAttemptToOrphan,
		Reference:      func(n *node) *corev1.ObjectReference { return n.identity.eventReference() },
		Recorder:       gc.Recorder,
		KeyName:        "owner",
		FailureMessage: "Orphaning the dependents of an owner failed",
	}
	errs := make(chan error, 2)
	loops.Go(func() { errs <- deleter.Run(ctx, workers, synced) })
	loops.Go(func() { errs <- orphaner.Run(ctx, workers, synced) })
	// A worker returns only when ctx is done (or, in principle, its caches never synced).
	err := <-errs
	cancel()
	return errors.Join(err, <-errs)
}

// resyncMonitors asks discovery for the deletable resources and, if they changed since known,
// resets the REST mapper and starts and stops monitors to match. It returns the resources now
// known: known itself when nothing changed or the sync failed, to be tried again next time.
func (gc *GarbageCollector) resyncMonitors(ctx context.Context, known map[schema.GroupVersionResource]struct{}) map[schema.GroupVersionResource]struct{} {
	logger := klog.FromContext(ctx)
	found, err := deletableResources(ctx, gc.discovery)
	if len(found) == 0 {
		logger.V(2).Info("No resources reported by discovery, skipping garbage collector sync")
		return known
	}
	if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok {
		// Keep watching the synced resources of groups discovery failed to list this time.
		for r := range known {
			if _, isFailed := failed[r.GroupVersion()]; isFailed && gc.monitors.resourceSynced(r) {
				found[r] = struct{}{}
			}
		}
	}
	if maps.Equal(known, found) {
		return known
	}
	logger.V(2).Info("Syncing garbage collector with updated resources from discovery", "resources", len(found))
	gc.mapper.Reset()
	if err := gc.monitors.sync(ctx, found); err != nil {
		// The monitors that could be started run; the rest are tried again next time.
		utilruntime.HandleErrorWithContext(ctx, err, "Failed to sync resource monitors")
		return known
	}
	return found
}

// errNotObserved: the node is still virtual although its object exists; it is retried with
// back-off until an informer reports it (else a node added and removed while a watch was
// re-established could stay in the graph for good).
var errNotObserved = errors.New("item hasn't been observed via informer yet")

// expectedDeleteFailure picks out the attemptToDelete failures that are routine.
func expectedDeleteFailure(err error) (string, bool) {
	var mappingErr *restMappingError
	switch {
	case errors.Is(err, errNotObserved):
		return "Item hasn't been observed via informer yet", true
	case errors.As(err, &mappingErr):
		// A kind not mapped yet (a new CRD) or not at all (a malformed reference): the
		// next discovery may know it.
		return "Error syncing item: " + mappingErr.Error(), true
	}
	return "", false
}

// syncAttemptToDelete processes one node of attemptToDelete.
func (gc *GarbageCollector) syncAttemptToDelete(ctx context.Context, n *node) error {
	logger := klog.FromContext(ctx)
	if !n.isObserved() {
		current, ok := gc.graph.nodes.read(n.identity.UID)
		if !ok {
			logger.V(5).Info("Item no longer in the graph, skipping attemptToDeleteItem", "item", n.identity)
			return nil
		}
		if current.isObserved() {
			logger.V(5).Info("Item no longer virtual in the graph, skipping attemptToDeleteItem on virtual node", "item", n.identity)
			return nil
		}
	}
	err := gc.attemptToDeleteItem(ctx, n)
	switch {
	case errors.Is(err, errEnqueuedVirtualDelete), errors.Is(err, errNamespacedOwnerOfClusterScoped):
		// The graph builder takes it from here, or a retry could not help.
		return nil
	case err != nil:
		return fmt.Errorf("attempting to delete %s: %w", n.identity, err)
	case !n.isObserved():
		return errNotObserved
	}
	return nil
}

// syncAttemptToOrphan removes owner from its dependents' ownerReferences, then its orphan
// finalizer.
func (gc *GarbageCollector) syncAttemptToOrphan(ctx context.Context, owner *node) error {
	if err := gc.orphanDependents(ctx, owner.identity, owner.getDependents()); err != nil {
		return err
	}
	if err := gc.removeFinalizer(ctx, owner, metav1.FinalizerOrphanDependents); err != nil {
		return fmt.Errorf("removeOrphanFinalizer for %s failed: %w", owner.identity, err)
	}
	return nil
}

// GraphHasUID reports whether the graph holds a node for uid (for tests).
func (gc *GarbageCollector) GraphHasUID(uid types.UID) bool {
	_, ok := gc.graph.nodes.read(uid)
	return ok
}

// IsSynced reports whether every monitor has listed its resource once (or failed to).
func (gc *GarbageCollector) IsSynced() bool { return gc.monitors.synced() }
