package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// monitor is one resource's informer, feeding the graph builder: a metadata-only informer of
// its own, or the typed shared informer another controller already runs. Each own informer
// has its own context, so that a resource discovery stops reporting (a deleted CRD) stops
// being watched.
type monitor struct {
	informer cache.SharedIndexInformer
	// registration is the collector's handler on a shared informer; nil for an own informer.
	registration cache.ResourceEventHandlerRegistration
	// cancel stops an own informer, or removes the handler from a shared one.
	cancel context.CancelFunc
	// listFailing is set when the informer's first list fails, so that one resource the
	// collector cannot list does not hold the others' sync back.
	listFailing atomic.Bool
}

func (m *monitor) synced() bool {
	if m.registration != nil {
		return m.registration.HasSynced()
	}
	return m.informer.HasSynced() || m.listFailing.Load()
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
	metadata metadata.Interface
	mapper   meta.RESTMapper
	ignored  map[schema.GroupResource]struct{}
	// handler turns an informer's notification into a graph change.
	handler func(gvk schema.GroupVersionKind) cache.ResourceEventHandler
	// shared, if not nil, has the resources read through other controllers' informers.
	shared SharedInformers

	mu      sync.Mutex
	running map[schema.GroupVersionResource]*monitor
	wg      sync.WaitGroup
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

// start runs resource's informer until ctx is done or the monitor is cancelled; for a resource
// with a shared informer, it adds the collector's handler to it instead.
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
	informer := metadatainformer.NewFilteredMetadataInformer(ms.metadata, resource, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = informer.SetTransform(trimMetadata)
	m := &monitor{informer: informer}
	logger := klog.FromContext(ctx)
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		// Only a failing first list matters: a synced informer's watch errors are routine.
		if !informer.HasSynced() && !m.listFailing.Swap(true) {
			logger.Info("Listing a resource failed; the garbage collector goes on without it until it succeeds",
				"resource", resource, "err", err)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	_, _ = informer.AddEventHandler(ms.handler(kind))
	// A successful list clears listFailing.
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { m.listFailing.Store(false) }})
	ctx, m.cancel = context.WithCancel(ctx)
	ms.wg.Go(func() { informer.RunWithContext(ctx) })
	return m
}

// join adds the collector's handler to a shared informer (which replays its cache to it).
func (ms *monitors) join(informer cache.SharedIndexInformer, kind schema.GroupVersionKind) (*monitor, error) {
	registration, err := informer.AddEventHandler(ms.handler(kind))
	if err != nil {
		return nil, err
	}
	return &monitor{
		informer:     informer,
		registration: registration,
		cancel:       func() { _ = informer.RemoveEventHandler(registration) },
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

// stop stops every monitor and waits for their informers.
func (ms *monitors) stop() {
	ms.mu.Lock()
	for _, m := range ms.running {
		m.cancel()
	}
	ms.running = nil
	ms.mu.Unlock()
	ms.wg.Wait()
}

// trimMetadata keeps of an object only what the collector reads: its identity, owners,
// finalizers, deletion timestamp and resource version (for the JSON merge patches of
// resources without strategic merge patch). Labels, annotations and managed fields, the bulk
// of most objects' metadata, are dropped.
func trimMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: m.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              m.Name,
			Namespace:         m.Namespace,
			UID:               m.UID,
			ResourceVersion:   m.ResourceVersion,
			DeletionTimestamp: m.DeletionTimestamp,
			OwnerReferences:   m.OwnerReferences,
			Finalizers:        m.Finalizers,
		},
	}, nil
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
