// Package objectcache gives the volume manager the ConfigMaps and Secrets its pods' volumes
// refer to from a watch of each object, as the kubelet's watch-based configMapManager and
// secretManager do (its default change-detection strategy, Watch), instead of a GET of each
// object on every resync: the resync asks for every running pod's objects each period, and
// on a node with many pods (or berth sim's thousands of nodes) those GETs were most of the
// API server's read load.
//
// A watch starts at the first Get of its object, is a list and watch with
// fieldSelector=metadata.name=<name> (what the node authorizer grants a node for an object its
// pods refer to) and stops when no Get has asked for the object for IdleTimeout; an immutable
// object is not watched once read, as in the kubelet.
package objectcache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// IdleTimeout is how long an object nobody asks for stays watched. The volume resync asks for
// each running pod's objects every 20 s, so an object its pods still use is never idle this long.
const IdleTimeout = 2 * time.Minute

// syncTimeout is how long a Get waits for a new watch's first list before it reads the object
// from the API server instead (the kubelet gives up with an error after 1 s; a live read keeps
// a pod's volume from failing on a slow first list).
const syncTimeout = 5 * time.Second

// kind is one of the two resources the cache serves.
type kind struct {
	resource string // "configmaps" or "secrets", in NotFound's words "configmap", "secret"
	newObj   func() runtime.Object
}

var (
	configMaps = kind{resource: "configmap", newObj: func() runtime.Object { return &v1.ConfigMap{} }}
	secrets    = kind{resource: "secret", newObj: func() runtime.Object { return &v1.Secret{} }}
)

type key struct {
	resource, namespace, name string
}

// item is one watched object: its reflector's store and when it was last asked for.
type item struct {
	store    *syncedStore
	cancel   context.CancelFunc
	lastUsed time.Time
	// stopped is set once the watch has been stopped for an immutable object.
	stopped bool
}

// Cache serves Gets of single ConfigMaps and Secrets from per-object watches. Run owns the
// watches: before Run and after it returns, Gets read from the API server.
type Cache struct {
	client kubernetes.Interface
	clock  clock.WithTicker

	mu    sync.Mutex
	ctx   context.Context // Run's; nil when Run is not running
	items map[key]*item
	wg    sync.WaitGroup
}

// New returns a Cache reading through client.
func New(client kubernetes.Interface, clk clock.WithTicker) *Cache {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Cache{client: client, clock: clk, items: map[key]*item{}}
}

// Run runs the watches and stops the idle ones until ctx is done, then stops them all and
// waits for them.
func (c *Cache) Run(ctx context.Context) {
	c.mu.Lock()
	c.ctx = ctx
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.ctx = nil
		for k, it := range c.items {
			it.cancel()
			delete(c.items, k)
		}
		c.mu.Unlock()
		c.wg.Wait()
	}()
	t := c.clock.NewTicker(IdleTimeout / 2)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			c.stopIdle()
		}
	}
}

// stopIdle stops the watches of objects nobody asked for in IdleTimeout.
func (c *Cache) stopIdle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, it := range c.items {
		if c.clock.Since(it.lastUsed) >= IdleTimeout {
			it.cancel()
			delete(c.items, k)
		}
	}
}

// Watched is how many objects have a running watch.
func (c *Cache) Watched() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, it := range c.items {
		if !it.stopped {
			n++
		}
	}
	return n
}

// GetConfigMap returns the ConfigMap; a missing one is `configmap "name" not found`, in the
// kubelet's words.
func (c *Cache) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := c.get(ctx, configMaps, namespace, name)
	if err != nil {
		return nil, err
	}
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("the cache of configmap %s/%s holds a %T", namespace, name, obj)
	}
	if cm.Immutable != nil && *cm.Immutable {
		c.stopImmutable(key{configMaps.resource, namespace, name})
	}
	return cm.DeepCopy(), nil
}

// GetSecret returns the Secret; a missing one is `secret "name" not found`.
func (c *Cache) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := c.get(ctx, secrets, namespace, name)
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*v1.Secret)
	if !ok {
		return nil, fmt.Errorf("the cache of secret %s/%s holds a %T", namespace, name, obj)
	}
	if s.Immutable != nil && *s.Immutable {
		c.stopImmutable(key{secrets.resource, namespace, name})
	}
	return s.DeepCopy(), nil
}

// get answers from the object's watch, starting it if needed; from the API server when Run is
// not running or the watch has not listed within syncTimeout.
func (c *Cache) get(ctx context.Context, k kind, namespace, name string) (runtime.Object, error) {
	it := c.item(k, namespace, name)
	if it == nil || !it.store.waitSynced(ctx, syncTimeout) {
		return c.live(ctx, k, namespace, name)
	}
	obj, exists, err := it.store.GetByKey(namespace + "/" + name)
	if err != nil {
		return nil, fmt.Errorf("reading %s %s/%s from its watch: %w", k.resource, namespace, name, err)
	}
	if !exists {
		return nil, apierrors.NewNotFound(v1.Resource(k.resource), name)
	}
	return obj.(runtime.Object), nil
}

// item is the object's entry, its watch started if it is new; nil when Run is not running.
func (c *Cache) item(k kind, namespace, name string) *item {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx == nil {
		return nil
	}
	id := key{k.resource, namespace, name}
	it, ok := c.items[id]
	if !ok {
		it = c.start(c.ctx, k, namespace, name)
		c.items[id] = it
	}
	it.lastUsed = c.clock.Now()
	return it
}

// start runs a reflector of the one object.
func (c *Cache) start(ctx context.Context, k kind, namespace, name string) *item {
	selector := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = selector
			if k.resource == secrets.resource {
				return c.client.CoreV1().Secrets(namespace).List(ctx, opts)
			}
			return c.client.CoreV1().ConfigMaps(namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			if k.resource == secrets.resource {
				return c.client.CoreV1().Secrets(namespace).Watch(ctx, opts)
			}
			return c.client.CoreV1().ConfigMaps(namespace).Watch(ctx, opts)
		},
	}
	store := &syncedStore{Store: cache.NewStore(cache.MetaNamespaceKeyFunc), synced: make(chan struct{})}
	logger := klog.LoggerWithValues(klog.FromContext(ctx), k.resource, klog.KRef(namespace, name))
	// The client says whether it can stream the first list (a fake clientset cannot).
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c.client), k.newObj(), store, cache.ReflectorOptions{
		Name:   fmt.Sprintf("object-%s %s/%s", k.resource, namespace, name),
		Logger: &logger,
	})
	ctx, cancel := context.WithCancel(ctx)
	c.wg.Go(func() { r.RunWithContext(ctx) })
	return &item{store: store, cancel: cancel}
}

// stopImmutable stops the watch of an immutable object: it cannot change, and its last state
// stays in the store (the kubelet does the same; a deleted immutable object is still served).
func (c *Cache) stopImmutable(id key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if it, ok := c.items[id]; ok && !it.stopped {
		it.cancel()
		it.stopped = true
	}
}

// live reads the object from the API server.
func (c *Cache) live(ctx context.Context, k kind, namespace, name string) (runtime.Object, error) {
	var obj runtime.Object
	var err error
	if k.resource == secrets.resource {
		obj, err = c.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	} else {
		obj, err = c.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(v1.Resource(k.resource), name)
	}
	return obj, err
}

// syncedStore is a reflector's store that says when the first list has been stored.
type syncedStore struct {
	cache.Store
	once   sync.Once
	synced chan struct{}
	ready  atomic.Bool
}

func (s *syncedStore) Replace(list []any, resourceVersion string) error {
	err := s.Store.Replace(list, resourceVersion)
	if err == nil {
		s.once.Do(func() { s.ready.Store(true); close(s.synced) })
	}
	return err
}

// waitSynced waits up to timeout for the first list.
func (s *syncedStore) waitSynced(ctx context.Context, timeout time.Duration) bool {
	if s.ready.Load() {
		return true
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.synced:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}
