// Package endpointslice is berth's EndpointSlice controller (kube-controller-manager's
// endpointslice-controller). It stands beside the pod's flow as a client of the API server,
// after the node agent: once a node agent has reported a pod's IPs and readiness, this
// controller publishes them in the discovery.k8s.io/v1 EndpointSlices of every Service whose
// selector matches the pod, which the service proxy (services/proxy), DNS and kube-proxy-like
// clients read.
//
// For each Service with a selector (not ExternalName) it keeps EndpointSlices labelled
// kubernetes.io/service-name=<service> and endpointslice.kubernetes.io/managed-by=
// endpointslice-controller.k8s.io and controlled by the Service: one address type per IP
// family of the Service, one group of slices per set of resolved ports (a named targetPort is
// looked up in each pod's containers), at most maxEndpointsPerSlice endpoints each. Planning
// and writing the slices is upstream's own reconciler, the staging library k8s.io/endpointslice,
// which this package drives as kube-controller-manager does: it computes each endpoint
// (addresses, ready/serving/terminating, nodeName, zone, targetRef, hostname), writes only
// what changed, deletes slices no longer needed, and sets the
// endpoints.kubernetes.io/last-change-trigger-time annotation and the
// service.kubernetes.io/headless label.
//
// Its queue holds Service keys ("namespace/name"). A Service is queued when it is added,
// updated or deleted; when a pod it may select is added, deleted or changed in a way that
// matters to endpoints (IPs, readiness, labels, hostname, deletion); and when one of its
// slices changes other than by this controller's own write (the slice tracker tells). Node
// changes that move the zone distribution requeue the Services using topology-aware hints.
// A sync reads everything from the informers' caches; one that sees a cache older than its
// own last write fails and is retried, as upstream's does.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	endpointslicerec "k8s.io/endpointslice"
	endpointslicemetrics "k8s.io/endpointslice/metrics"
	"k8s.io/endpointslice/topologycache"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// ControllerName is the endpointslice.kubernetes.io/managed-by value of the slices this
// controller manages, upstream's.
const ControllerName = "endpointslice-controller.k8s.io"

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "endpointslice"

// Upstream's event reasons for a failed sync, on the Service.
const (
	FailedToListPods             = "FailedToListPods"
	FailedToListEndpointSlices   = "FailedToListEndpointSlices"
	FailedToUpdateEndpointSlices = "FailedToUpdateEndpointSlices"
)

// Retry policy, upstream's: a Service's sync is retried with back-off from syncBackoff
// doubling to maxSyncBackoff, at most 10 retries a second overall, and dropped after
// maxRetries failures in a row (its next change queues it again). This controller's writes
// can be large (a Deployment's rollout touches every slice), so its back-off starts at a
// second rather than the usual 5ms. Variables, so that tests need not wait.
var (
	syncBackoff    = time.Second
	maxSyncBackoff = 1000 * time.Second
)

const maxRetries = 15

// endpointSliceChangeMinSyncDelay batches the syncs a burst of slice changes queues, as
// upstream's does.
const endpointSliceChangeMinSyncDelay = time.Second

// topologyKey is the one key of the topology queue.
const topologyKey = "topology"

// reconcile is one Service's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncService

// Controller keeps the EndpointSlices of Services with selectors.
type Controller struct {
	client               kubernetes.Interface
	services             corelisters.ServiceLister
	pods                 corelisters.PodLister
	nodes                corelisters.NodeLister
	slices               discoverylisters.EndpointSliceLister
	synced               []cache.InformerSynced
	maxEndpointsPerSlice int32

	reconciler *endpointslicerec.Reconciler
	// sliceTracker holds the generation of every slice this controller last wrote, so that a
	// sync can tell a stale cache and an event its own write.
	sliceTracker *endpointsliceutil.EndpointSliceTracker
	// triggerTimes computes endpoints.kubernetes.io/last-change-trigger-time.
	triggerTimes *endpointsliceutil.TriggerTimeTracker
	// topology tracks nodes and endpoints per zone for service.kubernetes.io/topology-mode.
	topology *topologycache.TopologyCache

	// queue holds Service keys; topologyQueue holds topologyKey while the node distribution
	// needs a look.
	queue         workqueue.TypedRateLimitingInterface[string]
	topologyQueue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the Warning events on a Service whose sync failed, with
	// upstream's reasons, and FailedSync when it panicked.
	Recorder events.EventRecorder
}

// NewController returns an EndpointSlice controller fed by the given informers, writing
// slices of at most maxEndpointsPerSlice endpoints (kube-controller-manager's
// --max-endpoints-per-slice, 100 by default). Start the informers and call Run.
func NewController(client kubernetes.Interface, pods coreinformers.PodInformer, services coreinformers.ServiceInformer,
	nodes coreinformers.NodeInformer, slices discoveryinformers.EndpointSliceInformer, maxEndpointsPerSlice int32) *Controller {
	endpointslicemetrics.RegisterMetrics()
	c := &Controller{
		client:               client,
		services:             services.Lister(),
		pods:                 pods.Lister(),
		nodes:                nodes.Lister(),
		slices:               slices.Lister(),
		maxEndpointsPerSlice: maxEndpointsPerSlice,
		sliceTracker:         endpointsliceutil.NewEndpointSliceTracker(),
		triggerTimes:         endpointsliceutil.NewTriggerTimeTracker(),
		topology:             topologycache.NewTopologyCache(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](syncBackoff, maxSyncBackoff),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice"}),
		topologyQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice_topology"}),
	}
	// PreferSameTrafficDistribution is GA and locked on in v1.37.
	c.reconciler = endpointslicerec.NewReconciler(client, c.nodes, maxEndpointsPerSlice, c.sliceTracker, c.topology,
		reconcilerEvents{c}, ControllerName, endpointslicerec.WithPreferSameTrafficDistributionEnabled(true))

	svcRegistration, _ := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.serviceChanged,
		UpdateFunc: func(_, obj any) { c.serviceChanged(obj) },
		DeleteFunc: c.serviceChanged,
	})
	podRegistration, _ := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj) },
		UpdateFunc: c.podChanged,
		DeleteFunc: func(obj any) { c.podChanged(obj, nil) },
	})
	nodeRegistration, _ := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.topologyQueue.Add(topologyKey) },
		UpdateFunc: c.nodeUpdated,
		DeleteFunc: func(any) { c.topologyQueue.Add(topologyKey) },
	})
	sliceRegistration, _ := slices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceAdded,
		UpdateFunc: c.sliceUpdated,
		DeleteFunc: c.sliceDeleted,
	})
	c.synced = []cache.InformerSynced{svcRegistration.HasSynced, podRegistration.HasSynced,
		nodeRegistration.HasSynced, sliceRegistration.HasSynced}
	return c
}

func (c *Controller) serviceChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of service %+v: %w", obj, err))
		return
	}
	c.queue.Add(key)
}

// podChanged queues the Services that selected the pod before or select it now, when it
// appeared, went, or changed in a way that matters to endpoints; old or cur is nil for an
// add or a delete. Matching the pod against its namespace's Services reads only the cache.
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

// nodeUpdated looks at the zone distribution again when a node's readiness or zone changed.
func (c *Controller) nodeUpdated(old, cur any) {
	oldNode, ok1 := old.(*corev1.Node)
	node, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if isNodeReady(oldNode) != isNodeReady(node) || oldNode.Labels[corev1.LabelTopologyZone] != node.Labels[corev1.LabelTopologyZone] {
		c.topologyQueue.Add(topologyKey)
	}
}

func isNodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// sliceAdded queues the Service of a managed slice this controller did not just write.
func (c *Controller) sliceAdded(obj any) {
	slice, ok := obj.(*discovery.EndpointSlice)
	if ok && c.reconciler.ManagedByController(slice) && c.sliceTracker.ShouldSync(slice) {
		c.queueServiceOf(slice)
	}
}

// sliceUpdated queues the Service of a managed slice changed by someone else, of a slice
// whose managed-by label moved to or from this controller, and both Services of a slice whose
// service-name label changed (that does not bump the generation the tracker compares).
func (c *Controller) sliceUpdated(old, cur any) {
	prev, ok1 := old.(*discovery.EndpointSlice)
	slice, ok2 := cur.(*discovery.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if prev.Labels[discovery.LabelServiceName] != slice.Labels[discovery.LabelServiceName] {
		c.queueServiceOf(slice)
		c.queueServiceOf(prev)
		return
	}
	if c.reconciler.ManagedByChanged(prev, slice) || (c.reconciler.ManagedByController(slice) && c.sliceTracker.ShouldSync(slice)) {
		c.queueServiceOf(slice)
	}
}

// sliceDeleted queues the Service of a managed slice this controller did not delete itself.
func (c *Controller) sliceDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	slice, ok := obj.(*discovery.EndpointSlice)
	if ok && c.reconciler.ManagedByController(slice) && c.sliceTracker.Has(slice) && !c.sliceTracker.HandleDeletion(slice) {
		c.queueServiceOf(slice)
	}
}

// queueServiceOf queues a slice's Service after a short delay, which batches the syncs of a
// burst of slice changes.
func (c *Controller) queueServiceOf(slice *discovery.EndpointSlice) {
	key, err := endpointslicerec.ServiceControllerKey(slice)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the service of EndpointSlice %s/%s: %w", slice.Namespace, slice.Name, err))
		return
	}
	c.queue.AddAfter(key, endpointSliceChangeMinSyncDelay)
}

// Run starts workers Service workers and a topology worker and blocks until ctx is done, then
// waits for them to stop. It fails only if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	logger := klog.FromContext(ctx)
	logger.Info("Starting endpoint slice controller")

	var wg sync.WaitGroup
	defer func() {
		logger.Info("Shutting down endpoint slice controller")
		c.queue.ShutDown()
		c.topologyQueue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForNamedCacheSyncWithContext(ctx, c.synced...) {
		if ctx.Err() == nil {
			return errors.New("the endpoint slice controller's informers did not sync")
		}
		return nil
	}
	for range workers {
		wg.Go(func() { panics.Forever(ctx, recovery.Component(controllerName), c.worker) })
	}
	wg.Go(func() { panics.Forever(ctx, recovery.Component(controllerName), c.topologyWorker) })
	<-ctx.Done()
	return nil
}

func (c *Controller) worker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one Service, retrying it with back-off on failure, a panic
// included. It returns false once the queue is shut down.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(key)

	err := recovery.Sync(ctx, controllerName, func() error { return reconcile(c, ctx, key) })
	trackSync(err)
	if err == nil {
		c.queue.Forget(key)
		return true
	}
	recovery.RecordPanic(c.Recorder, recovery.ReferenceByKey("v1", "Service")(key), err)
	if c.queue.NumRequeues(key) < maxRetries {
		klog.FromContext(ctx).V(2).Info("Syncing the endpoint slices of a service failed, retrying", "service", key, "err", err)
		c.queue.AddRateLimited(key)
		return true
	}
	utilruntime.HandleErrorWithContext(ctx, err, "Syncing the endpoint slices of a service failed too often; dropping it until it changes", "service", key)
	c.queue.Forget(key)
	return true
}

// staleCacheError is a sync that saw a slice cache older than this controller's last write.
type staleCacheError struct{ service string }

func (e staleCacheError) Error() string {
	return fmt.Sprintf("the EndpointSlice cache of service %s is out of date", e.service)
}

// trackSync counts a sync in endpoint_slice_controller_syncs, as upstream does.
func trackSync(err error) {
	result := "success"
	if err != nil {
		result = "error"
		if errors.As(err, new(staleCacheError)) {
			result = "stale"
		}
	}
	endpointslicemetrics.EndpointSliceSyncs.WithLabelValues(result).Inc()
}

// syncService brings the EndpointSlices of the Service whose key is key in line with the
// pods it selects.
func (c *Controller) syncService(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	defer func() {
		logger.V(4).Info("Finished syncing service endpoint slices", "service", key, "elapsed", time.Since(start))
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}

	// 1. The Service. One that is gone is forgotten, and its slices deleted.
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.triggerTimes.DeleteService(ns, name)
		c.reconciler.DeleteService(ns, name)
		c.sliceTracker.DeleteService(ns, name)
		return c.deleteOrphanedSlices(ctx, ns, name)
	}
	if err != nil {
		return err
	}
	// ExternalName Services get no endpoints (https://issues.k8s.io/105986); Services without
	// a selector get theirs from someone else, through the API.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return nil
	}

	// 2. Its pods and its slices, from the caches.
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		c.event(svc, FailedToListPods, "Error listing Pods for Service %s/%s: %v", ns, name, err)
		return err
	}
	slices, err := c.slices.EndpointSlices(ns).List(managedSelector(name))
	if err != nil {
		c.event(svc, FailedToListEndpointSlices, "Error listing Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	// A slice being deleted is not one to update: it would keep the controller stuck.
	live := slices[:0:0]
	for _, s := range slices {
		if s.DeletionTimestamp == nil {
			live = append(live, s)
		}
	}
	if c.sliceTracker.StaleSlices(svc, live) {
		return staleCacheError{service: key}
	}

	// 3. Plan and write: the reconciler writes only what changed. The trigger time is
	// computed even when nothing is written, so that its tracker keeps up.
	triggerTime := c.triggerTimes.ComputeEndpointLastChangeTriggerTime(ns, svc, pods)
	if err := c.reconciler.Reconcile(logger, svc, pods, live, triggerTime); err != nil {
		c.event(svc, FailedToUpdateEndpointSlices, "Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return err
	}
	return nil
}

// managedSelector selects the slices of service that this controller manages.
func managedSelector(service string) labels.Selector {
	return labels.Set{discovery.LabelServiceName: service, discovery.LabelManagedBy: ControllerName}.AsSelectorPreValidated()
}

// deleteOrphanedSlices deletes the managed slices that a Service named name in ns, now gone,
// controlled. Upstream leaves them to the garbage collector, which berth does not run; a slice
// controlled by a newer Service of the same name is the reconciler's to judge, once the cache
// shows that Service.
func (c *Controller) deleteOrphanedSlices(ctx context.Context, ns, name string) error {
	slices, err := c.slices.EndpointSlices(ns).List(managedSelector(name))
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range slices {
		owner := metav1.GetControllerOf(s)
		if s.DeletionTimestamp != nil || owner == nil || owner.Kind != "Service" || owner.APIVersion != "v1" || owner.Name != name {
			continue
		}
		uid := s.UID // the slice the cache saw, not a newer one of the same name
		err := c.client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s/%s of deleted service %s: %w", ns, s.Name, name, err))
		}
	}
	return errors.Join(errs...)
}

func (c *Controller) topologyWorker(ctx context.Context) {
	for c.processNextTopologyItem(ctx) {
	}
}

// processNextTopologyItem hands the topology cache the nodes and queues the Services whose
// hints the new distribution overloads.
func (c *Controller) processNextTopologyItem(ctx context.Context) bool {
	key, shutdown := c.topologyQueue.Get()
	if shutdown {
		return false
	}
	defer c.topologyQueue.Done(key)

	err := recovery.Sync(ctx, controllerName, func() error {
		nodes, err := c.nodes.List(labels.Everything())
		if err != nil {
			return err
		}
		logger := klog.FromContext(ctx)
		c.topology.SetNodes(logger, nodes)
		for _, svc := range c.topology.GetOverloadedServices() {
			logger.V(2).Info("Queuing a service whose topology hints a node change overloads", "service", svc)
			c.queue.Add(svc)
		}
		return nil
	})
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Checking the node topology distribution failed")
		c.topologyQueue.AddRateLimited(key)
		return true
	}
	c.topologyQueue.Forget(key)
	return true
}
