// Package resourcequota is berth's resource-quota controller (kube-controller-manager's
// "resourcequota"). It keeps each ResourceQuota's status: status.hard is spec.hard, and
// status.used what the quota's namespace holds of each limited resource, counted by berth's
// quota evaluators (pkg/quota/evaluator) over the shared informers' caches. The ResourceQuota
// admission plugin in the API server enforces status.hard against status.used and raises
// status.used as it admits; this controller brings the count back down when objects go away.
//
// A quota is recounted:
//   - when it is created or its spec.hard changes, ahead of the others (a second queue, with
//     its own workers, holds quotas whose status lacks their limits or a countable usage:
//     admission cannot enforce those yet);
//   - when an object it counts is deleted, or changes its charge: a pod that terminates or
//     whose scope or allocated resources change, a service that changes type, a claim whose
//     allocation changes (replenishment);
//   - every FullResyncPeriod, all of them.
//
// Which resources it counts comes from discovery, asked again every DiscoveryPeriod as
// kube-controller-manager's controller does (monitors.go): every namespaced resource that can
// be created, listed, watched and deleted gets a monitor, through the shared typed informer if
// client-go has one and otherwise through a metadata-only informer shared with the garbage
// collector (custom resources, aggregated APIs); those without an evaluator of their own are
// counted as count/<resource>.<group> once their monitor has listed them, and the quotas
// naming them are recounted then. A resource discovery stops reporting loses its monitor; one
// of a group discovery failed to list this time keeps it.
package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/controllers/sharedmetadata"
	"github.com/berth-cluster/berth/pkg/quota/evaluator"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "resourcequota"

// FullResyncPeriod is how often every quota is recounted (kube-controller-manager's
// --resource-quota-sync-period).
const FullResyncPeriod = 5 * time.Minute

// DiscoveryPeriod is how often discovery is asked for the resources to count
// (kube-controller-manager's 30 s).
const DiscoveryPeriod = 30 * time.Second

// evaluated are the resources berth's own evaluators read: always watched.
var evaluated = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("pods"),
	corev1.SchemeGroupVersion.WithResource("services"),
	corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"),
	corev1.SchemeGroupVersion.WithResource("configmaps"),
	corev1.SchemeGroupVersion.WithResource("secrets"),
	corev1.SchemeGroupVersion.WithResource("replicationcontrollers"),
	corev1.SchemeGroupVersion.WithResource("resourcequotas"),
}

// DiscoverFunc lists the server's namespaced resources (a discovery client's
// ServerPreferredNamespacedResources); a partial failure returns what it found.
type DiscoverFunc func() ([]*metav1.APIResourceList, error)

// Controller keeps the status of ResourceQuotas.
type Controller struct {
	client   corev1client.ResourceQuotasGetter
	quotas   corelisters.ResourceQuotaLister
	registry quota.Registry
	clock    clock.PassiveClock
	synced   []cache.InformerSynced
	// queue holds quotas to recount; missing, those whose status lacks limits or usage.
	queue, missing workqueue.TypedRateLimitingInterface[string]

	// The sources of monitors: typed informers, metadata informers for the rest, and the
	// resources to watch.
	factory  informers.SharedInformerFactory
	metadata *sharedmetadata.Informers
	discover DiscoverFunc
	monitors monitorSet

	// ResyncPeriod is how often every quota is recounted; FullResyncPeriod by default, 0
	// for never.
	ResyncPeriod time.Duration
	// DiscoveryPeriod is how often discovery is asked again; DiscoveryPeriod by default.
	DiscoveryPeriod time.Duration
	// Recorder, when set, gets a FailedSync event on a quota whose sync panicked.
	Recorder events.EventRecorder
}

// NewController returns a resource-quota controller that writes through client and reads
// quotas, and what they count, through factory's informers, or metadata's for resources
// factory has no informer for (metadata may be nil: those are then not counted). discover
// lists the resources to count, in Run and every DiscoveryPeriod; nil counts only those
// berth's evaluators read. Start the factory's informers and call Run.
func NewController(client corev1client.ResourceQuotasGetter, factory informers.SharedInformerFactory, metadata *sharedmetadata.Informers, discover DiscoverFunc) *Controller {
	return newController(client, factory, metadata, discover, clock.RealClock{})
}

func newController(client corev1client.ResourceQuotasGetter, factory informers.SharedInformerFactory, metadata *sharedmetadata.Informers, discover DiscoverFunc, clk clock.PassiveClock) *Controller {
	quotaInformer := factory.Core().V1().ResourceQuotas()
	c := &Controller{
		client:   client,
		quotas:   quotaInformer.Lister(),
		registry: generic.NewRegistry(evaluator.New(generic.ListerFuncForResourceFunc(factory.ForResource), clk)),
		clock:    clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_primary"}),
		missing: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_priority"}),
		factory:         factory,
		metadata:        metadata,
		discover:        discover,
		ResyncPeriod:    FullResyncPeriod,
		DiscoveryPeriod: DiscoveryPeriod,
	}
	reg, _ := quotaInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.addQuota,
		// Status updates are this controller's own: only a new spec.hard needs a recount.
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.ResourceQuota)
			q, ok2 := cur.(*corev1.ResourceQuota)
			if ok1 && ok2 && !quota.Equals(o.Spec.Hard, q.Spec.Hard) {
				c.addQuota(q)
			}
		},
		DeleteFunc: func(obj any) { c.enqueue(c.queue, obj) },
	})
	c.synced = append(c.synced, reg.HasSynced)
	// Berth's evaluators count from these caches from the first sync: the workers wait for
	// them. Registering them now has them start with the factory's other informers.
	for _, gvr := range evaluated {
		if informer, err := factory.ForResource(gvr); err == nil {
			c.synced = append(c.synced, informer.Informer().HasSynced)
		}
	}
	c.discover = registerTyped(factory, discover)
	c.synced = append(c.synced, c.monitors.synced)
	return c
}

// registerTyped asks discover for the resources now, registers the typed informers of those
// client-go has one for, so that they start with the factory's other informers (and the
// garbage collector, which joins started informers, reads them too), and returns a discover
// that answers the first call with what it found.
func registerTyped(factory informers.SharedInformerFactory, discover DiscoverFunc) DiscoverFunc {
	if discover == nil {
		return nil
	}
	lists, err := discover()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return discover // the first sync asks again
	}
	for _, gvr := range quotableResources(lists, evaluator.IgnoredResources(), nil) {
		_, _ = factory.ForResource(gvr) // those it has no informer for are the metadata ones
	}
	first := true
	return func() ([]*metav1.APIResourceList, error) {
		if first { // only the monitors' sync loop calls it
			first = false
			return lists, err
		}
		return discover()
	}
}

// Run starts workers for each queue and blocks until ctx is done, then waits for them to
// stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	worker := func(queue workqueue.TypedRateLimitingInterface[string], title string, afterSync func(context.Context)) *recovery.Worker[string] {
		return &recovery.Worker[string]{
			Name:           controllerName,
			Title:          title,
			Queue:          queue,
			Sync:           c.sync,
			Reference:      recovery.ReferenceByKey("v1", "ResourceQuota"),
			Recorder:       c.Recorder,
			KeyName:        "resourceQuota",
			FailureMessage: "Error processing resource quota work item",
			Expected: func(err error) (string, bool) {
				return "Conflict writing the resource quota's status, will retry", apierrors.IsConflict(err)
			},
			AfterCacheSync: afterSync,
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	// The monitors follow discovery until the workers have stopped; then they stop.
	defer c.monitors.stopAll()
	wg.Go(func() { wait.UntilWithContext(ctx, c.syncMonitors, c.DiscoveryPeriod) })
	resync := func(ctx context.Context) {
		if c.ResyncPeriod > 0 {
			wg.Go(func() { wait.UntilWithContext(ctx, c.enqueueAll, c.ResyncPeriod) })
		}
	}
	var missingErr error
	wg.Go(func() {
		missingErr = worker(c.missing, "resource quota controller (missing usage)", nil).Run(ctx, workers, c.synced...)
	})
	err := worker(c.queue, "resource quota controller", resync).Run(ctx, workers, c.synced...)
	cancel()
	wg.Wait()
	return errors.Join(err, missingErr)
}

// addQuota queues a new or changed quota, on the priority queue if its status is behind.
func (c *Controller) addQuota(obj any) {
	q, ok := obj.(*corev1.ResourceQuota)
	if !ok {
		return
	}
	if missingUsage(q, c.matching) {
		c.enqueue(c.missing, q)
		return
	}
	c.enqueue(c.queue, q)
}

// matching picks the names some evaluator counts.
func (c *Controller) matching(names []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, e := range c.registry.List() {
		out = append(out, e.MatchingResources(names)...)
	}
	return out
}

func (c *Controller) enqueue(queue workqueue.TypedRateLimitingInterface[string], obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("the key of quota %#v: %w", obj, err))
		return
	}
	queue.Add(key)
}

// enqueueAll queues every quota for a full recount.
func (c *Controller) enqueueAll(ctx context.Context) {
	quotas, err := c.quotas.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Unable to enqueue all - error listing resource quotas")
		return
	}
	for _, q := range quotas {
		c.enqueue(c.queue, q)
	}
	klog.FromContext(ctx).V(4).Info("Resource quota controller queued all resource quota for full calculation of usage")
}

// replenish queues the quotas of obj's namespace that count resources of gr: obj was
// deleted, or changed what it is charged.
func (c *Controller) replenish(gr schema.GroupResource, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m.GetNamespace() == "" {
		return
	}
	e := c.registry.Get(gr)
	if e == nil {
		return
	}
	quotas, err := c.quotas.ResourceQuotas(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing the resource quotas of namespace %s: %w", m.GetNamespace(), err))
		return
	}
	for _, q := range toReplenish(quotas, e.MatchingResources) {
		c.enqueue(c.queue, q)
	}
}

// sync recounts the quota key names and writes its status if it changed.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing resource quota", "key", key, "duration", c.clock.Since(start))
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Resource quota has been deleted", "resourceQuota", klog.KRef(ns, name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting resource quota %s from the cache: %w", key, err)
	}
	// A failed count still updates the resources that were counted; the error retries the rest.
	counted, countErr := quota.CalculateUsage(ns, q.Spec.Scopes, quota.Add(corev1.ResourceList{}, q.Spec.Hard), c.registry, q.Spec.ScopeSelector)
	if countErr != nil {
		countErr = fmt.Errorf("counting the usage of resource quota %s: %w", key, countErr)
	}
	status, write := planStatus(q, counted)
	if !write {
		return countErr
	}
	update := q.DeepCopy()
	update.Status = status
	if _, err := c.client.ResourceQuotas(ns).UpdateStatus(ctx, update, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return countErr
		}
		return errors.Join(countErr, fmt.Errorf("updating the status of resource quota %s: %w", key, err))
	}
	logger.V(4).Info("Updated resource quota status", "resourceQuota", klog.KObj(q), "used", status.Used)
	return countErr
}
