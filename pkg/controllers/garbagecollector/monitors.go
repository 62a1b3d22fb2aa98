package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/sharedmetadata"
)

// monitor is one resource's informer, feeding the graph builder: a metadata-only informer
// (shared with the other controllers that read the resource's metadata, sharedmetadata), or
// the typed shared informer another controller already runs. The collector's share of a
// metadata informer is let go when discovery stops reporting its resource (a deleted CRD),
// which stops it unless another controller still holds it.
type monitor struct {
	informer cache.SharedIndexInformer
	// synced reports whether the collector's handler has been handed the informer's cache,
	// or, for a metadata informer, whether its first list fails (so that one resource the
	// collector cannot list does not hold the others' sync back).
	synced func() bool
	// cancel removes the handler, and lets a metadata informer go.
	cancel func()
}

// SharedInformers are the typed informers the other controllers run (from their shared
// informer factory), by resource. The collector reads a resource through one of them when
// there is one, as kube-controller-manager's does, rather than watching and caching the same
// objects a second time.
type SharedInformers interface {
	Informer(resource schema.GroupVersionResource, kind schema.GroupVersionKind) (cache.SharedIndexInformer, bool)
}

// monitors are the running monitors by resource.
type monitors struct {
	// metadata are the metadata informers of resources without a shared typed one.
	metadata *sharedmetadata.Informers
	mapper   meta.RESTMapper
	ignored  map[schema.GroupResource]struct{}
	// handler turns an informer's notification into a graph change.
	handler func(gvk schema.GroupVersionKind) cache.ResourceEventHandler
	// shared, if not nil, has the resources read through other controllers' informers.
	shared SharedInformers

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
}

// sync starts a monitor for every resource of resources not yet watched (and not ignored) and
// stops those of resources no longer listed. It goes on past a resource it cannot map and
// returns the errors together.
func (ms *monitors) sync(ctx context.Context, resources map[schema.GroupVersionResource]struct{}) error {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if ms.running == nil {
		ms.running = map[schema.GroupVersionResource]*monitor{}
	}
	var errs []error
	added, removed := 0, 0
	for resource := range resources {
		if _, ok := ms.ignored[resource.GroupResource()]; ok {
			continue
		}
		if _, ok := ms.running[resource]; ok {
			continue
		}
		kind, err := ms.mapper.KindFor(resource)
		if err != nil {
			errs = append(errs, fmt.Errorf("couldn't look up resource %q: %w", resource, err))
			continue
		}
		ms.running[resource] = ms.start(ctx, resource, kind)
		added++
	}
	for resource, m := range ms.running {
		if _, ok := resources[resource]; !ok {
			m.cancel()
			delete(ms.running, resource)
			removed++
		}
	}
	klog.FromContext(ctx).V(4).Info("Synced monitors", "added", added, "removed", removed, "current", len(ms.running))
	return errors.Join(errs...)
}

// start joins resource's shared typed informer if there is one, else its metadata informer,
// adding the collector's handler (the informer replays its cache to it).
func (ms *monitors) start(ctx context.Context, resource schema.GroupVersionResource, kind schema.GroupVersionKind) *monitor {
	if ms.shared != nil {
		if informer, ok := ms.shared.Informer(resource, kind); ok {
			m, err := ms.join(informer, kind)
			if err == nil {
				return m
			}
			klog.FromContext(ctx).Info("Watching a resource apart from its shared informer", "resource", resource, "err", err)
		}
	}
	held := ms.metadata.Acquire(ctx, resource)
	m, err := ms.join(held.Informer, kind)
	if err != nil {
		// Only a stopped informer refuses a handler: the informers are shut down.
		held.Release()
		return &monitor{informer: held.Informer, synced: func() bool { return false }, cancel: func() {}}
	}
	removeHandler, handlerSynced := m.cancel, m.synced
	m.cancel = func() {
		removeHandler()
		held.Release()
	}
	m.synced = func() bool { return handlerSynced() || held.ListFailing() }
	return m
}

// join adds the collector's handler to a shared informer.
func (ms *monitors) join(informer cache.SharedIndexInformer, kind schema.GroupVersionKind) (*monitor, error) {
	registration, err := informer.AddEventHandler(ms.handler(kind))
	if err != nil {
		return nil, err
	}
	return &monitor{
		informer: informer,
		synced:   registration.HasSynced,
		cancel:   func() { _ = informer.RemoveEventHandler(registration) },
	}, nil
}

// synced reports whether there is a monitor and every monitor has synced or is failing to
// list its resource.
func (ms *monitors) synced() bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.running) == 0 {
		return false
	}
	for _, m := range ms.running {
		if !m.synced() {
			return false
		}
	}
	return true
}

// resourceSynced reports whether resource's monitor runs and has synced.
func (ms *monitors) resourceSynced(resource schema.GroupVersionResource) bool {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.running[resource]
	return ok && m.informer.HasSynced()
}

// store is the cache of resource's monitor, if it runs.
func (ms *monitors) store(resource schema.GroupVersionResource) (cache.Store, bool) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.running[resource]
	if !ok {
		return nil, false
	}
	return m.informer.GetStore(), true
}

func (ms *monitors) resources() []schema.GroupVersionResource {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return slices.Collect(maps.Keys(ms.running))
}

// stop stops every monitor; metadata informers no other controller holds have stopped when
// it returns.
func (ms *monitors) stop() {
	ms.mu.Lock()
	running := ms.running
	ms.running = nil
	ms.mu.Unlock()
	for _, m := range running {
		m.cancel()
	}
}

// discoveryResyncPeriod is how often discovery is asked for the deletable resources, as
// kube-controller-manager's GC resync of its monitors.
const discoveryResyncPeriod = 30 * time.Second

// deletableResources are the preferred resources discovery reports that support delete,
// list and watch. A partial failure is returned with what was found.
func deletableResources(ctx context.Context, client discovery.DiscoveryInterface) (map[schema.GroupVersionResource]struct{}, error) {
	logger := klog.FromContext(ctx)
	preferred, lookupErr := client.ServerPreferredResources()
	if lookupErr != nil {
		if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(lookupErr); ok {
			logger.Info("Failed to discover some groups", "groups", fmt.Sprintf("%q", failed))
		} else {
			logger.Info("Failed to discover preferred resources", "err", lookupErr)
		}
	}
	out := map[schema.GroupVersionResource]struct{}{}
	for _, list := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, preferred) {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			logger.Info("Ignoring an invalid discovered resource", "groupVersion", list.GroupVersion, "err", err)
			continue
		}
		for _, r := range list.APIResources {
			out[gv.WithResource(r.Name)] = struct{}{}
		}
	}
	return out, lookupErr
}
