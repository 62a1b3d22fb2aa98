// Package sharedmetadata shares metadata-only informers between the controllers that watch
// resources no typed informer covers (custom resources, aggregated APIs): the garbage
// collector, which reads owners and finalizers, and the resource-quota controller, which
// counts objects. One resource is listed and watched once however many of them read it, as
// kube-controller-manager's metadata informer factory does, but unlike that factory an
// informer here stops when the last controller holding it lets it go, so that a resource
// discovery no longer reports (a deleted CRD) stops being watched.
//
// An informer's life:
//
//	Acquire (first holder) ─► running ─► Acquire / Release (more holders) ─► Release (last
//	holder) ─► stopped, and Release returns once its goroutine has ended
//
// The next Acquire of a resource whose informer stopped starts a new one.
package sharedmetadata

import (
	"context"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Informers are the running metadata informers, by resource. The zero value is not usable:
// build it with New.
type Informers struct {
	client metadata.Interface

	mu       sync.Mutex
	running  map[schema.GroupVersionResource]*entry
	shutDown bool
}

// entry is one resource's running informer and how many hold it.
type entry struct {
	informer cache.SharedIndexInformer
	holders  int
	cancel   context.CancelFunc
	done     chan struct{} // closed when the informer's goroutine has returned
	// listFailing is set while the informer has never listed and its list fails, so that a
	// resource a controller cannot list does not hold the others' sync back.
	listFailing atomic.Bool
}

// New returns informers that list and watch through client.
func New(client metadata.Interface) *Informers {
	return &Informers{client: client, running: map[schema.GroupVersionResource]*entry{}}
}

// Held is one holder's share of a resource's informer. Add handlers to Informer (and remove
// them) as to any shared informer; call Release once done with it.
type Held struct {
	Informer cache.SharedIndexInformer
	entry    *entry
	release  func()
}

// ListFailing reports whether the informer has never listed its resource and its last
// attempt failed.
func (h *Held) ListFailing() bool { return h.entry.listFailing.Load() }

// Release lets the informer go; the last holder's Release stops it and returns once it has
// stopped. Calling it again does nothing.
func (h *Held) Release() { h.release() }

// Acquire returns resource's informer, started if it was not running. ctx gives the logger
// of a new informer's list failures; the informer runs until its last holder releases it,
// or Shutdown. After Shutdown, the informer returned is never started.
func (s *Informers) Acquire(ctx context.Context, resource schema.GroupVersionResource) *Held {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.running[resource]
	if !ok {
		e = s.start(ctx, resource)
		if !s.shutDown {
			s.running[resource] = e
		}
	}
	e.holders++
	var once sync.Once
	return &Held{Informer: e.informer, entry: e, release: func() { once.Do(func() { s.release(resource, e) }) }}
}

func (s *Informers) release(resource schema.GroupVersionResource, e *entry) {
	s.mu.Lock()
	e.holders--
	last := e.holders == 0
	if last && s.running[resource] == e {
		delete(s.running, resource)
	}
	s.mu.Unlock()
	if last {
		e.cancel()
		<-e.done
	}
}

// start builds resource's informer and, unless the informers are shut down, runs it.
func (s *Informers) start(ctx context.Context, resource schema.GroupVersionResource) *entry {
	informer := metadatainformer.NewFilteredMetadataInformer(s.client, resource, metav1.NamespaceAll, 0, cache.Indexers{
		cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, // the quota controller lists by namespace
	}, nil).Informer()
	_ = informer.SetTransform(trimMetadata)
	e := &entry{informer: informer, done: make(chan struct{})}
	logger := klog.FromContext(ctx)
	_ = informer.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		// Only a failing first list matters: a synced informer's watch errors are routine.
		if !informer.HasSynced() && !e.listFailing.Swap(true) {
			logger.Info("Listing a resource failed; the controllers go on without it until it succeeds",
				"resource", resource, "err", err)
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	// A successful list clears listFailing (an empty one is seen through HasSynced).
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { e.listFailing.Store(false) }})
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	e.cancel = cancel
	if s.shutDown {
		cancel()
		close(e.done)
		return e
	}
	go func() {
		defer close(e.done)
		informer.RunWithContext(runCtx)
	}()
	return e
}

// Shutdown stops every informer, held or not, and waits for them; Acquire then hands out
// informers that never start. The controller manager calls it once its controllers have
// stopped.
func (s *Informers) Shutdown() {
	s.mu.Lock()
	s.shutDown = true
	running := s.running
	s.running = map[schema.GroupVersionResource]*entry{}
	s.mu.Unlock()
	for _, e := range running {
		e.cancel()
		<-e.done
	}
}

// trimMetadata keeps of an object only what the controllers sharing the informers read:
// its identity, owners, finalizers, deletion timestamp and resource version (the garbage
// collector's JSON merge patches of resources without strategic merge patch carry it); the
// quota controller counts objects by namespace. Labels, annotations and managed fields, the
// bulk of most objects' metadata, are dropped.
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
