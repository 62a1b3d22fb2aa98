package resourcequota

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/quota/evaluator"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// monitor watches one resource for changes that free quota. Its life:
//
//	started (handler added) ─► listed: counted (an object-count evaluator added if the
//	resource has none), the quotas naming it queued ─► stopped (handler removed, the
//	evaluator it added removed, its metadata informer let go)
//
// A monitor stopped before it listed never counts. One whose list fails is ready (the
// workers do not wait for it) but counts only once a list succeeds.
type monitor struct {
	// stop ends the wait for the first list and takes the handler off the informer.
	stop func()
	// ready is set once the monitor counts, or its list fails.
	ready atomic.Bool
	// evaluator is the object-count evaluator the monitor added to the registry once it
	// had listed; nil if the resource has an evaluator of berth's, or has not listed yet.
	evaluator quota.Evaluator
}

// monitorSet are the running monitors by resource.
type monitorSet struct {
	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
	// discovered is set once the first discovery's monitors have started.
	discovered bool
	// waits are the goroutines waiting for monitors' first lists.
	waits sync.WaitGroup
}

func (s *monitorSet) resources() []schema.GroupVersionResource {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.running))
}

// synced reports whether the first discovery's monitors have started and every monitor is
// ready: the workers wait for it, so that the first counts see every resource discovered
// (kube-controller-manager's controller waits for its monitors likewise).
func (s *monitorSet) synced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.discovered {
		return false
	}
	for _, m := range s.running {
		if !m.ready.Load() {
			return false
		}
	}
	return true
}

// syncMonitors asks discovery for the resources to count and starts and stops monitors to
// match (monitorChanges). A partial failure keeps the monitors of the groups discovery failed
// to list; a total one keeps every monitor.
func (c *Controller) syncMonitors(ctx context.Context) {
	logger := klog.FromContext(ctx)
	var lists []*metav1.APIResourceList
	var err error
	if c.discover != nil {
		lists, err = c.discover()
	}
	failed, partial := discovery.GroupDiscoveryFailedErrorGroups(err)
	switch {
	case partial:
		logger.Info("Failed to discover some groups; keeping their monitors", "groups", fmt.Sprintf("%q", failed))
	case err != nil:
		// Nothing is known: every running monitor is kept, and those of berth's own
		// evaluators are started if they are not running.
		utilruntime.HandleErrorWithContext(ctx, err, "Discovering the resources to count failed; keeping the monitors")
		lists, failed = nil, map[schema.GroupVersion]error{}
		for _, gvr := range c.monitors.resources() {
			failed[gvr.GroupVersion()] = err
		}
	}
	defer func() {
		c.monitors.mu.Lock()
		c.monitors.discovered = true
		c.monitors.mu.Unlock()
	}()
	start, stop := monitorChanges(c.monitors.resources(), quotableResources(lists, evaluator.IgnoredResources(), evaluated), failed)
	if len(start) == 0 && len(stop) == 0 {
		return
	}
	logger.V(2).Info("Syncing resource quota monitors with updated resources from discovery", "added", start, "removed", stop)
	// Stopped first: a resource that changed its preferred version loses the old version's
	// evaluator before the new version's monitor may add one.
	for _, gvr := range stop {
		c.stopMonitor(gvr)
	}
	for _, gvr := range start {
		c.startMonitor(ctx, gvr)
	}
	// Typed informers created for new resources start now; those started go on.
	c.factory.Start(ctx.Done())
}

// listPollInterval is how often a new monitor is checked for its first list.
const listPollInterval = 100 * time.Millisecond

// startMonitor adds the controller's handler to gvr's informer: the shared typed one if
// client-go has one, else a metadata informer. Once the informer has listed, the resource
// is counted.
func (c *Controller) startMonitor(ctx context.Context, gvr schema.GroupVersionResource) {
	logger := klog.FromContext(ctx)
	var (
		informer    cache.SharedIndexInformer
		lister      cache.GenericLister
		release     = func() {}
		listFailing = func() bool { return false }
	)
	if typed, err := c.factory.ForResource(gvr); err == nil {
		informer, lister = typed.Informer(), typed.Lister()
	} else if c.metadata != nil {
		held := c.metadata.Acquire(ctx, gvr)
		informer, release, listFailing = held.Informer, held.Release, held.ListFailing
		lister = cache.NewGenericLister(informer.GetIndexer(), gvr.GroupResource())
	} else {
		logger.V(4).Info("Resource quota controller cannot count a resource", "resource", gvr, "err", err)
		return
	}
	gr := gvr.GroupResource()
	reg, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if evaluator.UpdateChangesUsage(gr, old, cur, c.clock.Now()) {
				c.replenish(gr, cur)
			}
		},
		DeleteFunc: func(obj any) { c.replenish(gr, obj) },
	})
	if err != nil {
		release()
		utilruntime.HandleErrorWithContext(ctx, err, "Watching a resource for quota failed", "resource", gvr)
		return
	}
	waitCtx, cancel := context.WithCancel(ctx)
	m := &monitor{stop: func() {
		cancel()
		_ = informer.RemoveEventHandler(reg)
		release()
	}}
	c.monitors.mu.Lock()
	if c.monitors.running == nil {
		c.monitors.running = map[schema.GroupVersionResource]*monitor{}
	}
	c.monitors.running[gvr] = m
	c.monitors.mu.Unlock()
	c.monitors.waits.Go(func() {
		_ = wait.PollUntilContextCancel(waitCtx, listPollInterval, true, func(context.Context) (bool, error) {
			if reg.HasSynced() {
				// This goroutine is the resource's alone: a panic in it is recovered
				// and counted here, and the monitor counts as ready all the same, so that
				// one resource never holds the controller's start back.
				_ = panics.Call(ctx, "controller/resourcequota", func() error { c.counting(ctx, gvr, m, lister); return nil })
				m.ready.Store(true)
				return true, nil
			}
			if listFailing() {
				m.ready.Store(true)
			}
			return false, nil
		})
	})
}

// counting is called once m, gvr's monitor, has listed: a resource without an evaluator
// gets an object-count one, and the quotas that limit it are queued to count it.
func (c *Controller) counting(ctx context.Context, gvr schema.GroupVersionResource, m *monitor, lister cache.GenericLister) {
	gr := gvr.GroupResource()
	c.monitors.mu.Lock()
	if c.monitors.running[gvr] != m || c.registry.Get(gr) != nil {
		c.monitors.mu.Unlock()
		return // stopped meanwhile, or counted by an evaluator of berth's
	}
	list := generic.ListResourceUsingListerFunc(func(schema.GroupVersionResource) (cache.GenericLister, error) { return lister, nil }, gvr)
	m.evaluator = generic.NewObjectCountEvaluator(gr, list, "")
	c.registry.Add(m.evaluator)
	c.monitors.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Resource quota controller counts a new resource", "resource", gvr)

	quotas, err := c.quotas.List(labels.Everything())
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Listing the resource quotas to count a new resource failed", "resource", gvr)
		return
	}
	for _, q := range quotas {
		if len(m.evaluator.MatchingResources(quota.ResourceNames(q.Spec.Hard))) > 0 {
			c.addQuota(q)
		}
	}
}

// stopMonitor stops gvr's monitor, and its counting if it added the evaluator.
func (c *Controller) stopMonitor(gvr schema.GroupVersionResource) {
	c.monitors.mu.Lock()
	m, ok := c.monitors.running[gvr]
	delete(c.monitors.running, gvr)
	if ok && m.evaluator != nil {
		c.registry.Remove(m.evaluator)
	}
	c.monitors.mu.Unlock()
	if ok {
		m.stop()
	}
}

// stopAll stops every monitor and waits for them.
func (s *monitorSet) stopAll() {
	s.mu.Lock()
	running := s.running
	s.running = nil
	s.mu.Unlock()
	for _, m := range running {
		m.stop()
	}
	s.waits.Wait()
}
