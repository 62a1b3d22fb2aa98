// Package endpointslicemirroring is berth's EndpointSlice mirroring controller
// (kube-controller-manager's endpointslice-mirroring-controller). It stands beside the pod's
// flow as a client of the API server, for the Services whose endpoints no pod selector gives:
// a Service without a selector gets the core/v1 Endpoints its owner writes through the API,
// and this controller mirrors them into the discovery.k8s.io/v1 EndpointSlices that the
// service proxy and the cluster DNS read, as pkg/controllers/endpointslice does for Services
// with selectors.
//
// For each Endpoints whose Service exists and has no selector, unless the Endpoints are
// labelled endpointslice.kubernetes.io/skip-mirror: "true" or hold a leader election record,
// it keeps EndpointSlices labelled kubernetes.io/service-name=<name> and
// endpointslice.kubernetes.io/managed-by=endpointslicemirroring-controller.k8s.io and
// controlled by the Endpoints: one slice per subset (once repacked) and address family, with
// the subset's ports and at most MaxEndpointsPerSubset of its addresses (ready ones first),
// the Endpoints' labels and their annotations but the trigger time and kubectl's last
// applied configuration. It writes only what changed and deletes the slices no longer
// needed, or all of them when the Endpoints go, the Service goes or gets a selector, or the
// Endpoints stop being mirrored. Addresses that are not IPs, or beyond the cap, are left out
// with a Warning event on the Endpoints.
//
// Its queue holds Endpoints keys ("namespace/name"). Endpoints are queued when they are added,
// updated or deleted; when their Service is added or deleted without a selector, or gains or
// loses one; and when one of their mirrored slices changes other than by this controller's own
// write (the slice tracker tells). A sync reads everything from the informers' caches; one
// that sees a slice cache older than its own last write fails and is retried, as upstream's
// does.
package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
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
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// ControllerName is the endpointslice.kubernetes.io/managed-by value of the slices this
// controller manages, upstream's.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// MaxEndpointsPerSubset is the most addresses of one Endpoints subset that are mirrored
// (kube-controller-manager's --mirroring-max-endpoints-per-subset default).
const MaxEndpointsPerSubset = 1000

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "endpointslice-mirroring"

// Upstream's event reasons, on the Endpoints.
const (
	InvalidIPAddress         = "InvalidIPAddress"
	TooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

// Retry policy, upstream's: an Endpoints' sync is retried with back-off from syncBackoff
// doubling to maxSyncBackoff, at most 10 retries a second overall, since a sync may write
// many slices. Variables, so that tests need not wait.
var (
	syncBackoff    = time.Second
	maxSyncBackoff = 100 * time.Second
)

// reconcile is one Endpoints' sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncEndpoints

// Controller mirrors the Endpoints of Services without selectors into EndpointSlices.
type Controller struct {
	client       kubernetes.Interface
	endpoints    corelisters.EndpointsLister
	slices       discoverylisters.EndpointSliceLister
	services     corelisters.ServiceLister
	synced       []cache.InformerSynced
	maxPerSubset int

	// sliceTracker holds the generation of every slice this controller last wrote, so that a
	// sync can tell a stale cache and an event its own write.
	sliceTracker *endpointsliceutil.EndpointSliceTracker

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the Warning events on Endpoints that could not be mirrored
	// whole, with upstream's reasons, and FailedSync when a sync panicked.
	Recorder events.EventRecorder
}

// NewController returns an EndpointSlice mirroring controller fed by the given informers.
// Start the informers and call Run.
func NewController(client kubernetes.Interface, endpoints coreinformers.EndpointsInformer, slices discoveryinformers.EndpointSliceInformer,
	services coreinformers.ServiceInformer) *Controller {
	c := &Controller{
		client:       client,
		endpoints:    endpoints.Lister(),
		slices:       slices.Lister(),
		services:     services.Lister(),
		maxPerSubset: MaxEndpointsPerSubset,
		sliceTracker: endpointsliceutil.NewEndpointSliceTracker(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](syncBackoff, maxSyncBackoff),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "endpoint_slice_mirroring"}),
	}
	epRegistration, _ := endpoints.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.endpointsChanged,
		UpdateFunc: c.endpointsUpdated,
		DeleteFunc: c.endpointsChanged,
	})
	sliceRegistration, _ := slices.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceAdded,
		UpdateFunc: c.sliceUpdated,
		DeleteFunc: c.sliceDeleted,
	})
	svcRegistration, _ := services.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.serviceChanged,
		UpdateFunc: c.serviceUpdated,
		DeleteFunc: c.serviceChanged,
	})
	c.synced = []cache.InformerSynced{epRegistration.HasSynced, sliceRegistration.HasSynced, svcRegistration.HasSynced}
	return c
}

// shouldMirror reports whether ep may be mirrored, its Service aside: not labelled
// skip-mirror, and not a leader election record.
func shouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discovery.LabelSkipMirror] == "true" {
		return false
	}
	_, leaderElection := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]
	return !leaderElection
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T %+v: %w", obj, obj, err))
		return
	}
	c.queue.Add(key)
}

func unwrap(obj any) any {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// endpointsChanged queues added or deleted Endpoints that may be mirrored.
func (c *Controller) endpointsChanged(obj any) {
	if ep, ok := unwrap(obj).(*corev1.Endpoints); ok && shouldMirror(ep) {
		c.enqueue(ep)
	}
}

// endpointsUpdated queues Endpoints that may be mirrored, or were (their slices then go).
func (c *Controller) endpointsUpdated(old, cur any) {
	prev, ok1 := old.(*corev1.Endpoints)
	ep, ok2 := cur.(*corev1.Endpoints)
	if ok1 && ok2 && (shouldMirror(ep) || shouldMirror(prev)) {
		c.enqueue(ep)
	}
}

// serviceChanged queues the Endpoints of a Service without a selector that was added or
// deleted.
func (c *Controller) serviceChanged(obj any) {
	if svc, ok := unwrap(obj).(*corev1.Service); ok && svc.Spec.Selector == nil {
		c.enqueue(svc)
	}
}

// serviceUpdated queues the Endpoints of a Service that gained or lost its selector.
func (c *Controller) serviceUpdated(old, cur any) {
	prev, ok1 := old.(*corev1.Service)
	svc, ok2 := cur.(*corev1.Service)
	if ok1 && ok2 && (prev.Spec.Selector == nil) != (svc.Spec.Selector == nil) {
		c.enqueue(svc)
	}
}

func managed(slice *discovery.EndpointSlice) bool {
	return slice.Labels[discovery.LabelManagedBy] == ControllerName
}

// sliceAdded queues the Endpoints of a mirrored slice this controller did not just write.
func (c *Controller) sliceAdded(obj any) {
	if slice, ok := obj.(*discovery.EndpointSlice); ok && managed(slice) && c.sliceTracker.ShouldSync(slice) {
		c.queueEndpointsOf(slice)
	}
}

// sliceUpdated queues the Endpoints of a mirrored slice changed by someone else, of a slice
// whose managed-by label moved to or from this controller, and both Endpoints of a slice
// whose service-name label changed (that does not bump the generation the tracker compares).
func (c *Controller) sliceUpdated(old, cur any) {
	prev, ok1 := old.(*discovery.EndpointSlice)
	slice, ok2 := cur.(*discovery.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	if prev.Labels[discovery.LabelServiceName] != slice.Labels[discovery.LabelServiceName] {
		c.queueEndpointsOf(slice)
		c.queueEndpointsOf(prev)
		return
	}
	if managed(prev) != managed(slice) || (managed(slice) && c.sliceTracker.ShouldSync(slice)) {
		c.queueEndpointsOf(slice)
	}
}

// sliceDeleted queues the Endpoints of a mirrored slice this controller did not delete.
func (c *Controller) sliceDeleted(obj any) {
	slice, ok := unwrap(obj).(*discovery.EndpointSlice)
	if ok && managed(slice) && c.sliceTracker.Has(slice) && !c.sliceTracker.HandleDeletion(slice) {
		c.queueEndpointsOf(slice)
	}
}

func (c *Controller) queueEndpointsOf(slice *discovery.EndpointSlice) {
	name := slice.Labels[discovery.LabelServiceName]
	if name == "" {
		return // not a slice of any Endpoints
	}
	c.queue.Add(slice.Namespace + "/" + name)
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "EndpointSliceMirroring controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("v1", "Endpoints"),
		Recorder:       c.Recorder,
		KeyName:        "endpoints",
		FailureMessage: "Mirroring Endpoints to EndpointSlices failed",
		Expected: func(err error) (string, bool) {
			return "EndpointSlice cache behind this controller's writes; retrying", errors.As(err, new(staleCacheError))
		},
	}
	return w.Run(ctx, workers, c.synced...)
}

// staleCacheError is a sync that saw a slice cache older than this controller's last write.
type staleCacheError struct{ key string }

func (e staleCacheError) Error() string {
	return fmt.Sprintf("the EndpointSlice cache of %s is out of date", e.key)
}

// syncEndpoints brings the mirrored slices of the Endpoints whose key is key in line with
// them.
func (c *Controller) syncEndpoints(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := time.Now()
	defer func() {
		logger.V(4).Info("Finished mirroring endpoints", "endpoints", key, "elapsed", time.Since(start))
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}

	// 1. The Endpoints and their Service: unless both are there, the Endpoints may be
	// mirrored and the Service has no selector, the mirrored slices go.
	ep, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return c.deleteMirroredSlices(ctx, ns, name)
	case err != nil:
		return err
	case !shouldMirror(ep):
		return c.deleteMirroredSlices(ctx, ns, name)
	}
	svc, err := c.services.Services(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		return c.deleteMirroredSlices(ctx, ns, name)
	case err != nil:
		return err
	case svc.Spec.Selector != nil:
		return c.deleteMirroredSlices(ctx, ns, name)
	}

	// 2. The slices mirrored so far, from the cache.
	existing, err := c.slices.EndpointSlices(ns).List(mirroredSelector(name))
	if err != nil {
		return err
	}
	if c.sliceTracker.StaleSlices(svc, existing) {
		return staleCacheError{key: key}
	}

	// 3. Plan, then write.
	m := desiredMirror(ep, c.maxPerSubset)
	if m.invalid > 0 {
		c.event(ep, InvalidIPAddress, "Skipped %d invalid IP addresses when mirroring to EndpointSlices", m.invalid)
	}
	if m.tooMany > 0 {
		logger.Info("Addresses in Endpoints were skipped due to exceeding MaxEndpointsPerSubset", "skippedAddresses", m.tooMany, "endpoints", klog.KObj(ep))
		c.event(ep, TooManyAddressesToMirror, "A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", c.maxPerSubset, m.tooMany)
	}
	return c.apply(ctx, ep, planSlices(ep, m, existing))
}

// mirroredSelector selects the slices this controller mirrored from the Endpoints named name.
func mirroredSelector(name string) labels.Selector {
	return labels.Set{discovery.LabelServiceName: name, discovery.LabelManagedBy: ControllerName}.AsSelectorPreValidated()
}

// apply makes p's writes for ep, tracking the generation of every slice written.
func (c *Controller) apply(ctx context.Context, ep *corev1.Endpoints, p plan) error {
	client := c.client.DiscoveryV1().EndpointSlices(ep.Namespace)
	for _, s := range p.unchanged {
		if !c.sliceTracker.Has(s) {
			c.sliceTracker.Update(s) // a slice of an earlier run of the controller
		}
	}
	// Endpoints being deleted get no new slices.
	if ep.DeletionTimestamp == nil {
		for _, s := range p.create {
			created, err := client.Create(ctx, s, metav1.CreateOptions{})
			switch {
			case err == nil:
				c.sliceTracker.Update(created)
			// Nothing may be created in a terminating namespace, and its content is being deleted.
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				return nil
			default:
				return fmt.Errorf("creating an EndpointSlice for Endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
			}
		}
	}
	for _, s := range p.update {
		updated, err := client.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("updating EndpointSlice %s for Endpoints %s/%s: %w", s.Name, ep.Namespace, ep.Name, err)
		}
		c.sliceTracker.Update(updated)
	}
	for _, s := range p.delete {
		if err := client.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting EndpointSlice %s for Endpoints %s/%s: %w", s.Name, ep.Namespace, ep.Name, err)
		}
		c.sliceTracker.ExpectDeletion(s)
	}
	if n := len(p.create) + len(p.update) + len(p.delete); n > 0 {
		klog.FromContext(ctx).V(4).Info("Mirrored endpoints", "endpoints", klog.KObj(ep),
			"created", len(p.create), "updated", len(p.update), "deleted", len(p.delete))
	}
	return nil
}

// deleteMirroredSlices deletes the slices mirrored from the Endpoints ns/name, and forgets
// them. Upstream does the same: their controller reference would let the garbage collector
// delete them only once the Endpoints are gone, not when they stop being mirrored.
func (c *Controller) deleteMirroredSlices(ctx context.Context, ns, name string) error {
	c.sliceTracker.DeleteService(ns, name)
	existing, err := c.slices.EndpointSlices(ns).List(mirroredSelector(name))
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range existing {
		err := c.client.DiscoveryV1().EndpointSlices(ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting EndpointSlice %s/%s mirrored from %s: %w", ns, s.Name, name, err))
		}
	}
	return errors.Join(errs...)
}

// event records a Warning with reason on ep; a nil Recorder records nothing (unit tests).
func (c *Controller) event(ep *corev1.Endpoints, reason, format string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, reason, eventAction, format, args...)
	}
}
