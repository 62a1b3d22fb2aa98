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
// Which resources it counts comes from discovery when the controller is built: every
// namespaced resource that can be created, listed, watched and deleted, with an informer
// from the shared factory; those without an evaluator of their own are counted as
// count/<resource>.<group>.
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
	"k8s.io/client-go/informers"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/quota/evaluator"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "resourcequota"

// FullResyncPeriod is how often every quota is recounted (kube-controller-manager's
// --resource-quota-sync-period).
const FullResyncPeriod = 5 * time.Minute

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

// Controller keeps the status of ResourceQuotas.
type Controller struct {
	client   corev1client.ResourceQuotasGetter
	quotas   corelisters.ResourceQuotaLister
	registry quota.Registry
	clock    clock.PassiveClock
	synced   []cache.InformerSynced
	// queue holds quotas to recount; missing, those whose status lacks limits or usage.
	queue, missing workqueue.TypedRateLimitingInterface[string]

	// ResyncPeriod is how often every quota is recounted; FullResyncPeriod by default, 0
	// for never.
	ResyncPeriod time.Duration
	// Recorder, when set, gets a FailedSync event on a quota whose sync panicked.
	Recorder events.EventRecorder
}

// NewController returns a resource-quota controller that writes through client and reads
// quotas, and what they count, through factory's informers. resources is what discovery
// lists of the server's namespaced resources (ServerPreferredNamespacedResources). Start
// the factory's informers and call Run.
func NewController(client corev1client.ResourceQuotasGetter, factory informers.SharedInformerFactory, resources []*metav1.APIResourceList) *Controller {
	return newController(client, factory, resources, clock.RealClock{})
}

func newController(client corev1client.ResourceQuotasGetter, factory informers.SharedInformerFactory, resources []*metav1.APIResourceList, clk clock.PassiveClock) *Controller {
	quotaInformer := factory.Core().V1().ResourceQuotas()
	listerFor := generic.ListerFuncForResourceFunc(factory.ForResource)
	c := &Controller{
		client:   client,
		quotas:   quotaInformer.Lister(),
		registry: generic.NewRegistry(evaluator.New(listerFor, clk)),
		clock:    clk,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_primary"}),
		missing: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "resourcequota_priority"}),
		ResyncPeriod: FullResyncPeriod,
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
	for _, gvr := range quotableResources(resources, evaluator.IgnoredResources(), evaluated) {
		c.monitor(factory, listerFor, gvr)
	}
	return c
}

// monitor watches gvr for changes that free quota, through the shared informer, and counts
// it as count/<resource>.<group> if no evaluator of berth's does. A resource the factory has
// no informer for (a custom resource) is not counted.
func (c *Controller) monitor(factory informers.SharedInformerFactory, listerFor quota.ListerForResourceFunc, gvr schema.GroupVersionResource) {
	informer, err := factory.ForResource(gvr)
	if err != nil {
		klog.V(4).InfoS("Resource quota controller cannot count a resource", "resource", gvr, "err", err)
		return
	}
	gr := gvr.GroupResource()
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if evaluator.UpdateChangesUsage(gr, old, cur, c.clock.Now()) {
				c.replenish(gr, cur)
			}
		},
		DeleteFunc: func(obj any) { c.replenish(gr, obj) },
	})
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("watching %s for quota: %w", gvr, err))
		return
	}
	c.synced = append(c.synced, reg.HasSynced)
	if c.registry.Get(gr) == nil {
		c.registry.Add(generic.NewObjectCountEvaluator(gr, generic.ListResourceUsingListerFunc(listerFor, gvr), ""))
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
	var wg sync.WaitGroup
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
