package proxy

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// changeTracker is the proxy's view of the Services and EndpointSlices, fed by the
// informers' handlers (kube-proxy's ServiceChangeTracker and EndpointsChangeTracker in one).
// Each object is converted once, when it changes, into what the rules need (a Service it
// cannot fully program is logged then, once); the names of the Services whose conversion
// changed wait in dirty until a sync checks them out. A change that changes nothing the
// proxy programs (a status write, an annotation) marks nothing.
type changeTracker struct {
	families []v1.IPFamily
	nodeName string
	// notify asks for a sync; called without the lock held.
	notify func()
	// skipped counts the objects, by kind, that could not be programmed in full.
	skipped func(kind string)

	mu       sync.Mutex
	services map[types.NamespacedName]map[v1.IPFamily][]*servicePort
	// slices holds each Service's slices by slice name; sliceOwner the Service of each slice
	// (namespace/name), to follow a slice whose service-name label changes.
	slices     map[types.NamespacedName]map[string]*sliceInfo
	sliceOwner map[string]types.NamespacedName
	dirty      sets.Set[types.NamespacedName]
}

func newChangeTracker(families []v1.IPFamily, nodeName string) *changeTracker {
	return &changeTracker{
		families:   families,
		nodeName:   nodeName,
		notify:     func() {},
		skipped:    func(string) {},
		services:   map[types.NamespacedName]map[v1.IPFamily][]*servicePort{},
		slices:     map[types.NamespacedName]map[string]*sliceInfo{},
		sliceOwner: map[string]types.NamespacedName{},
		dirty:      sets.New[types.NamespacedName](),
	}
}

// serviceInput is what a sync plans one Service from: its ports by family and its slices
// in name order. A Service that is gone has no ports.
type serviceInput struct {
	ports  map[v1.IPFamily][]*servicePort
	slices []*sliceInfo
}

// endpoints are the endpoints of the Service's ports in family.
func (in *serviceInput) endpoints(family v1.IPFamily) map[servicePortName][]endpoint {
	if in == nil {
		return nil
	}
	out := map[servicePortName][]endpoint{}
	for _, sp := range in.ports[family] {
		if eps := endpointsFor(sp.name, family, in.slices); len(eps) > 0 {
			out[sp.name] = eps
		}
	}
	return out
}

// checkout hands over the Services that changed since the last checkout, or every Service
// when all is set, with what to plan them from, and forgets the changes.
func (t *changeTracker) checkout(all bool) map[types.NamespacedName]*serviceInput {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := t.dirty
	if all {
		names = names.Union(sets.KeySet(t.services))
	}
	out := make(map[types.NamespacedName]*serviceInput, len(names))
	for nn := range names {
		in := &serviceInput{ports: t.services[nn]}
		bySlice := t.slices[nn]
		for _, name := range slices.Sorted(maps.Keys(bySlice)) {
			in.slices = append(in.slices, bySlice[name])
		}
		out[nn] = in
	}
	t.dirty = sets.New[types.NamespacedName]()
	return out
}

// pending says whether a change waits for a sync.
func (t *changeTracker) pending() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dirty.Len() > 0
}

// handlers are the informers' event handlers, logging to logger. A handler that panics on
// an object skips that object: the panic is logged and counted
// (berth_recovered_panics_total{component="proxy"}) and the others go on.
func (t *changeTracker) serviceHandlers(logger klog.Logger) cache.ResourceEventHandler {
	ctx := klog.NewContext(context.Background(), logger)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.guard(ctx, func() { t.serviceChanged(logger, obj, false) }) },
		UpdateFunc: func(_, obj any) { t.guard(ctx, func() { t.serviceChanged(logger, obj, false) }) },
		DeleteFunc: func(obj any) { t.guard(ctx, func() { t.serviceChanged(logger, obj, true) }) },
	}
}

func (t *changeTracker) sliceHandlers(logger klog.Logger) cache.ResourceEventHandler {
	ctx := klog.NewContext(context.Background(), logger)
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.guard(ctx, func() { t.sliceChanged(logger, obj, false) }) },
		UpdateFunc: func(_, obj any) { t.guard(ctx, func() { t.sliceChanged(logger, obj, false) }) },
		DeleteFunc: func(obj any) { t.guard(ctx, func() { t.sliceChanged(logger, obj, true) }) },
	}
}

func (t *changeTracker) guard(ctx context.Context, f func()) {
	_ = panics.Call(ctx, Component, func() error { f(); return nil })
}

func tombstone(obj any) any {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return d.Obj
	}
	return obj
}

func (t *changeTracker) serviceChanged(logger klog.Logger, obj any, deleted bool) {
	svc, ok := tombstone(obj).(*v1.Service)
	if !ok {
		logger.Info("Ignoring an object that is not a Service", "type", reflect.TypeOf(obj))
		return
	}
	nn := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	var ports map[v1.IPFamily][]*servicePort
	if !deleted {
		var skipped []error
		ports, skipped = convertService(svc, t.families)
		if len(skipped) > 0 {
			t.skipped("Service")
			logger.Info("Skipping what the proxy cannot program of a Service", "service", klog.KObj(svc), "errs", skipped)
		}
		if len(ports) == 0 {
			ports = nil
		}
	}
	t.mu.Lock()
	old, had := t.services[nn]
	changed := had != (ports != nil) || !reflect.DeepEqual(old, ports)
	if ports == nil {
		delete(t.services, nn)
	} else {
		t.services[nn] = ports
	}
	if changed {
		t.dirty.Insert(nn)
	}
	t.mu.Unlock()
	if changed {
		t.notify()
	}
}

func (t *changeTracker) sliceChanged(logger klog.Logger, obj any, deleted bool) {
	slice, ok := tombstone(obj).(*discovery.EndpointSlice)
	if !ok {
		logger.Info("Ignoring an object that is not an EndpointSlice", "type", reflect.TypeOf(obj))
		return
	}
	sliceKey := slice.Namespace + "/" + slice.Name
	var (
		nn   types.NamespacedName
		info *sliceInfo
	)
	if !deleted {
		var skipped []error
		nn, info, skipped = convertSlice(slice, t.nodeName, t.families)
		if len(skipped) > 0 {
			t.skipped("EndpointSlice")
			logger.Info("Skipping what the proxy cannot program of an EndpointSlice", "endpointSlice", klog.KObj(slice), "errs", skipped)
		}
	}
	t.mu.Lock()
	var changed []types.NamespacedName
	if owner, ok := t.sliceOwner[sliceKey]; ok && (info == nil || owner != nn) {
		// Gone, of no use, or moved to another Service.
		delete(t.slices[owner], slice.Name)
		if len(t.slices[owner]) == 0 {
			delete(t.slices, owner)
		}
		delete(t.sliceOwner, sliceKey)
		changed = append(changed, owner)
	}
	if info != nil {
		bySlice := t.slices[nn]
		if bySlice == nil {
			bySlice = map[string]*sliceInfo{}
			t.slices[nn] = bySlice
		}
		if old, ok := bySlice[slice.Name]; !ok || !reflect.DeepEqual(old, info) {
			changed = append(changed, nn)
		}
		bySlice[slice.Name] = info
		t.sliceOwner[sliceKey] = nn
	}
	t.dirty.Insert(changed...)
	t.mu.Unlock()
	if len(changed) > 0 {
		t.notify()
	}
}

// sortedNames is names in order, so that syncs write in a stable order.
func sortedNames[V any](m map[types.NamespacedName]V) []types.NamespacedName {
	names := make([]types.NamespacedName, 0, len(m))
	for nn := range m {
		names = append(names, nn)
	}
	slices.SortFunc(names, func(a, b types.NamespacedName) int {
		if c := strings.Compare(a.Namespace, b.Namespace); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return names
}
