// Package endpoints is berth's Endpoints controller (kube-controller-manager's
// endpoints-controller). It stands beside the pod's flow as a client of the API server, after
// the node agent: once a node agent has reported a pod's IPs and readiness, this controller
// publishes them in the core/v1 Endpoints of every Service whose selector matches the pod, for
// the clients that still read Endpoints rather than EndpointSlices (pkg/controllers/
// endpointslice keeps those).
//
// For each Service with a selector (not ExternalName) it keeps the Endpoints of the same name:
// the selected pods' addresses, ready or not ready (all ready with publishNotReadyAddresses;
// terminating pods left out unless it is set), with their node, a reference to the pod and,
// when the pod's hostname and subdomain name the Service, its hostname; the ports resolved from
// each Service port's targetPort, by name in each pod's containers; laid out as RepackSubsets
// does; at most MaxCapacity addresses, with endpoints.kubernetes.io/over-capacity: truncated
// when there were more. It labels them with the Service's labels,
// endpoints.kubernetes.io/managed-by and, for a headless Service,
// service.kubernetes.io/headless, annotates endpoints.kubernetes.io/last-change-trigger-time,
// and writes only when the subsets, labels or capacity annotation changed. The Endpoints of a
// deleted Service are deleted; a Service without a selector is left alone, its Endpoints being
// its owner's to write through the API.
//
// Its queue holds Service keys ("namespace/name"). A Service is queued when it is added,
// updated or deleted; when a pod it may select is added, deleted or changed in a way that
// matters to endpoints (IPs, readiness, labels, hostname, deletion); when its Endpoints are
// deleted, or changed by another writer; and, once at start, for every Endpoints there is,
// so that those of Services deleted meanwhile go too. A sync reads everything from the
// informers' caches; one that sees Endpoints older than its own last write fails and is
// retried, as upstream's does.
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "endpoints"

// Upstream's event reasons for a failed write, on the Endpoints.
const (
	FailedToCreateEndpoint = "FailedToCreateEndpoint"
	FailedToUpdateEndpoint = "FailedToUpdateEndpoint"
)

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

// reconcile is one Service's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncService

// Controller keeps the Endpoints of Services with selectors.
type Controller struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	synced    []cache.InformerSynced

	// triggerTimes computes endpoints.kubernetes.io/last-change-trigger-time.
	triggerTimes *endpointsliceutil.TriggerTimeTracker
	// writes remembers this controller's last write of each Endpoints.
	writes *writeTracker

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the Warning events on Endpoints whose write failed, with
	// upstream's reasons, and FailedSync on a Service whose sync panicked.
	Recorder events.EventRecorder
}

// NewController returns an Endpoints controller fed by the given informers. Start the
// informers and call Run.
func NewController(client kubernetes.Interface, pods coreinformers.PodInformer, services coreinformers.ServiceInformer,
	endpoints coreinformers.EndpointsInformer) *Controller {
	c := &Controller{
		client:       client,
		services:     services.Lister(),
		pods:         pods.Lister(),
		endpoints:    endpoints.Lister(),
		triggerTimes: endpointsliceutil.NewTriggerTimeTracker(),
		writes:       newWriteTracker(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint"}),
	}
	svcRegistration, _ := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
		DeleteFunc: c.enqueue,
	})
	podRegistration, _ := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(obj, nil) },
	})
	epRegistration, _ := endpoints.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: c.endpointsUpdated,
		DeleteFunc: c.enqueue,
	})
	c.synced = []cache.InformerSynced{svcRegistration.HasSynced, podRegistration.HasSynced, epRegistration.HasSynced}
	return c
}

// enqueue queues the key of a Service, or of the Service an Endpoints belongs to.
func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T %+v: %w", obj, obj, err))
		return
	}
	c.queue.Add(key)
}

// podChanged queues the Services that selected the pod before or select it now, when it
// appeared, went, or changed in a way that matters to endpoints; old or cur is nil for an add
// or a delete. Matching the pod against its namespace's Services reads only the cache.
func (c *Controller) podChanged(old, cur any) {
	key := endpointsliceutil.GetPodUpdateProjectionKey(old, cur)
	if key == nil {
		return
	}
	services, err := endpointsliceutil.GetServicesToUpdate(c.services, key)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("finding the services of a pod in namespace %s: %w", key.Namespace, err))
		return
	}
	for svc := range services {
		c.queue.Add(svc)
	}
}

// endpointsUpdated queues the Service of Endpoints that another writer changed, so that the
// change is undone if the Endpoints are this controller's. Upstream leaves that to the
// informers' periodic resync, which berth's do not have. Endpoints without a Service are
// left alone: upstream deletes them only at its start (and at a resync, hours apart), and
// users (and the Endpoints lifecycle conformance test) write such Endpoints by hand.
func (c *Controller) endpointsUpdated(old, cur any) {
	prev, ok1 := old.(*corev1.Endpoints)
	ep, ok2 := cur.(*corev1.Endpoints)
	if !ok1 || !ok2 || prev.ResourceVersion == ep.ResourceVersion || c.writes.isOwnWrite(ep) {
		return
	}
	if _, err := c.services.Services(ep.Namespace).Get(ep.Name); err != nil {
		return
	}
	c.enqueue(ep)
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "endpoint controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("v1", "Service"),
		Recorder:       c.Recorder,
		KeyName:        "service",
		FailureMessage: "Syncing the endpoints of a service failed",
		Expected: func(err error) (string, bool) {
			return "Endpoints cache behind this controller's write; retrying", errors.As(err, new(staleCacheError))
		},
		AfterCacheSync: c.queueLeftoverEndpoints,
	}
	return w.Run(ctx, workers, c.synced...)
}

// queueLeftoverEndpoints queues the Service of every Endpoints, once at start: those whose
// Service was deleted while no controller ran are deleted by their sync, since no event will
// come for them. Endpoints holding a leader election record are not a Service's, and stay.
func (c *Controller) queueLeftoverEndpoints(ctx context.Context) {
	list, err := c.endpoints.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing the Endpoints failed; orphaned Endpoints will not be cleaned up")
		return
	}
	for _, ep := range list {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; !ok {
			c.enqueue(ep)
		}
	}
}

// staleCacheError is a sync that saw Endpoints older than this controller's last write.
type staleCacheError struct{ key, resourceVersion string }

func (e staleCacheError) Error() string {
	return fmt.Sprintf("the endpoints informer cache is out of date: resource version %s of %s already written over", e.resourceVersion, e.key)
}

// syncService brings the Endpoints of the Service whose key is key in line with the pods it
// selects.
func (c *Controller) syncService(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	defer func() {
		logger.V(4).Info("Finished syncing service endpoints", "service", key, "elapsed", time.Since(start))
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}

	// 1. The Service. The Endpoints of one that is gone are deleted.
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the endpoints of deleted service %s: %w", key, err)
		}
		c.triggerTimes.DeleteService(ns, name)
		c.writes.forget(ns, name)
		return nil
	}
	if err != nil {
		return err
	}
	// ExternalName Services get no endpoints (https://issues.k8s.io/105986); Services without
	// a selector get theirs from someone else, through the API.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}

	// 2. Its pods and its Endpoints, from the caches. The trigger time is computed even when
	// nothing is written, so that its tracker keeps up.
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return err
	}
	triggerTime := c.triggerTimes.ComputeEndpointLastChangeTriggerTime(ns, svc, pods)
	current, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = nil
	case err != nil:
		return err
	case c.writes.isStale(current):
		return staleCacheError{key: key, resourceVersion: current.ResourceVersion}
	}

	// 3. Plan, then write what changed.
	want := desiredEndpoints(svc, desiredSubsets(svc, pods), current, triggerTime)
	if want == nil {
		logger.V(5).Info("Endpoints up to date", "service", key)
		return nil
	}
	return c.write(ctx, current, want)
}

// write creates want, or updates current to want.
func (c *Controller) write(ctx context.Context, current, want *corev1.Endpoints) error {
	logger := klog.FromContext(ctx)
	client := c.client.CoreV1().Endpoints(want.Namespace)
	if current == nil {
		_, err := client.Create(ctx, want, metav1.CreateOptions{})
		switch {
		case err == nil:
			logger.V(4).Info("Created endpoints", "endpoints", klog.KObj(want), "addresses", addressCount(want))
			return nil
		// Nothing may be created in a terminating namespace, and its content is being deleted.
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return nil
		}
		c.event(want, FailedToCreateEndpoint, "Failed to create endpoint for service %s/%s: %v", want.Namespace, want.Name, err)
		return fmt.Errorf("creating endpoints %s/%s: %w", want.Namespace, want.Name, err) // AlreadyExists included: the cache was behind
	}
	updated, err := client.Update(ctx, want, metav1.UpdateOptions{})
	if err != nil {
		c.event(want, FailedToUpdateEndpoint, "Failed to update endpoint %s/%s: %v", want.Namespace, want.Name, err)
		return fmt.Errorf("updating endpoints %s/%s: %w", want.Namespace, want.Name, err)
	}
	logger.V(4).Info("Updated endpoints", "endpoints", klog.KObj(want), "addresses", addressCount(want))
	// Until the cache has moved past current, a sync reading it would undo this write. An
	// update that changed nothing (the API server's no-op) leaves the version as it was.
	if updated.ResourceVersion != current.ResourceVersion {
		c.writes.record(current, updated)
	}
	return nil
}

func addressCount(ep *corev1.Endpoints) (n int) {
	for _, ss := range ep.Subsets {
		n += len(ss.Addresses) + len(ss.NotReadyAddresses)
	}
	return n
}

// event records a Warning with reason on ep; a nil Recorder records nothing (unit tests).
func (c *Controller) event(ep *corev1.Endpoints, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, reason, eventAction, format, args...)
	}
}

// writeTracker remembers, per Endpoints, the resource version this controller last wrote
// over (a cache still showing it is stale) and the one its write produced (an update event
// bringing it is this controller's own).
type writeTracker struct {
	mu     sync.Mutex
	byName map[types.NamespacedName]writtenVersions
}

type writtenVersions struct{ over, wrote string }

func newWriteTracker() *writeTracker {
	return &writeTracker{byName: map[types.NamespacedName]writtenVersions{}}
}

func nameOf(ep *corev1.Endpoints) types.NamespacedName {
	return types.NamespacedName{Namespace: ep.Namespace, Name: ep.Name}
}

// record records that this controller updated before into after.
func (t *writeTracker) record(before, after *corev1.Endpoints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.byName[nameOf(before)] = writtenVersions{over: before.ResourceVersion, wrote: after.ResourceVersion}
}

// isStale reports whether ep is a version this controller has written over.
func (t *writeTracker) isStale(ep *corev1.Endpoints) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.byName[nameOf(ep)]
	return ok && v.over == ep.ResourceVersion
}

// isOwnWrite reports whether ep is the version this controller's last update produced.
func (t *writeTracker) isOwnWrite(ep *corev1.Endpoints) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	v, ok := t.byName[nameOf(ep)]
	return ok && v.wrote == ep.ResourceVersion
}

func (t *writeTracker) forget(ns, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byName, types.NamespacedName{Namespace: ns, Name: name})
}
