// Package sharedetcd is where every resource's store meets etcd: one etcd client (one gRPC
// connection) for all of them, where k8s.io/apiserver's storage factory opens one per resource.
//
// Each client is a connection with its keep-alives, its gRPC transport's buffers and some
// twenty goroutines at both ends; with etcd embedded in `berth up`, both ends are in the same
// process. Upstream counts the cost (kubernetes/kubernetes#111476: "a significant memory
// cost"), and each API berth adds would pay it again. The stores built here are the factory's
// in all else: the same etcd3 store, compactor, latency tracking and transformer, behind the
// same watch cache (k8s.io/apiserver's cacher), built from the library's exported parts.
//
// Not shared: the health and readiness checks and the storage-size monitor, which the generic
// server makes from the storage configuration itself, keep their own clients.
package sharedetcd

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/kubernetes"
	"go.uber.org/zap"
	"google.golang.org/grpc/connectivity"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	genericfeatures "k8s.io/apiserver/pkg/features"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	cacherstorage "k8s.io/apiserver/pkg/storage/cacher"
	"k8s.io/apiserver/pkg/storage/etcd3"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/tools/cache"

	"github.com/berth-cluster/berth/pkg/util/etcdlog"
)

// The factory's connection settings (k8s.io/apiserver/pkg/storage/storagebackend/factory).
const (
	dialTimeout      = 20 * time.Second
	keepaliveTime    = 30 * time.Second
	keepaliveTimeout = 10 * time.Second
)

// Getter is a RESTOptionsGetter whose stores share one etcd client per etcd cluster (server
// list and credentials). It wraps the storage factory's getter, which still decides each
// resource's etcd prefix, codec and encoding; Getter builds the storage under them.
type Getter struct {
	inner generic.RESTOptionsGetter
	// uncached are the resources kept out of the watch cache (kube-apiserver's
	// --watch-cache-sizes entries of size 0); every other one is behind it.
	uncached map[schema.GroupResource]bool

	*pool
}

// pool is the clients the Getters made by one NewGetter (and its For) share.
type pool struct {
	mu      sync.Mutex
	clients map[string]*sharedClient
}

// NewGetter wraps inner; uncached names the resources served straight from etcd.
func NewGetter(inner generic.RESTOptionsGetter, uncached ...schema.GroupResource) *Getter {
	g := &Getter{inner: inner, uncached: map[schema.GroupResource]bool{}, pool: &pool{clients: map[string]*sharedClient{}}}
	for _, gr := range uncached {
		g.uncached[gr] = true
	}
	return g
}

// For wraps another server's getter (the CRD and aggregator servers of the chain, and the
// custom resources' stores) on g's clients, all its resources behind the watch cache.
func (g *Getter) For(inner generic.RESTOptionsGetter) *Getter {
	return &Getter{inner: inner, uncached: map[schema.GroupResource]bool{}, pool: g.pool}
}

// GetRESTOptions is inner's options with the storage built on the shared client.
func (g *Getter) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.inner.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	if g.uncached[resource] {
		opts.Decorator = g.rawStorage
	} else {
		opts.Decorator = g.cachedStorage
	}
	return opts, nil
}

// cachedStorage is genericregistry.StorageWithCacher over the shared client.
func (g *Getter) cachedStorage(cfg *storagebackend.ConfigForResource, resourcePrefix string,
	keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
	getAttrs storage.AttrFunc, triggers storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	s, destroyRaw, err := g.rawStorage(cfg, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrs, triggers, indexers)
	if err != nil {
		return nil, nil, err
	}
	cacher, err := cacherstorage.NewCacherFromConfig(cacherstorage.Config{
		Storage:             s,
		Versioner:           storage.APIObjectVersioner{},
		GroupResource:       cfg.GroupResource,
		EventsHistoryWindow: cfg.EventsHistoryWindow,
		ResourcePrefix:      resourcePrefix,
		KeyFunc:             keyFunc,
		NewFunc:             newFunc,
		NewListFunc:         newListFunc,
		GetAttrsFunc:        getAttrs,
		IndexerFuncs:        triggers,
		Indexers:            indexers,
		Codec:               cfg.Codec,
	})
	if err != nil {
		destroyRaw()
		return nil, nil, fmt.Errorf("watch cache of %s: %w", cfg.GroupResource, err)
	}
	delegator := cacherstorage.NewCacheDelegator(cacher, s)
	var once sync.Once
	return delegator, func() {
		// Stores call their destroy func once per subresource sharing them.
		once.Do(func() {
			delegator.Stop()
			cacher.Stop()
			destroyRaw()
		})
	}, nil
}

// rawStorage is the factory's etcd3 storage for one resource, on the shared client.
func (g *Getter) rawStorage(cfg *storagebackend.ConfigForResource, resourcePrefix string,
	_ func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
	_ storage.AttrFunc, _ storage.IndexerFuncs, _ *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
	client, err := g.acquire(cfg.Transport, cfg.CompactionInterval)
	if err != nil {
		return nil, nil, err
	}
	transformer := cfg.Transformer
	if transformer == nil {
		transformer = identity.NewEncryptCheckTransformer()
	}
	versioner := storage.APIObjectVersioner{}
	decoder := etcd3.NewDefaultDecoder(cfg.Codec, versioner)
	unsafeDeletion := utilfeature.DefaultFeatureGate.Enabled(genericfeatures.AllowUnsafeMalformedObjectDeletion)
	if unsafeDeletion {
		transformer = etcd3.WithCorruptObjErrorHandlingTransformer(transformer)
		decoder = etcd3.WithCorruptObjErrorHandlingDecoder(decoder)
	}
	store, err := etcd3.New(client.client, client.compactor, cfg.Codec, newFunc, newListFunc, cfg.Prefix, resourcePrefix,
		cfg.GroupResource, transformer, cfg.LeaseManagerConfig, decoder, versioner)
	if err != nil {
		g.release(client)
		return nil, nil, fmt.Errorf("etcd storage of %s: %w", cfg.GroupResource, err)
	}
	var once sync.Once
	destroy := func() {
		once.Do(func() {
			store.Close()
			g.release(client)
		})
	}
	var s storage.Interface = store
	if unsafeDeletion {
		s = etcd3.NewStoreWithUnsafeCorruptObjectDeletion(s, cfg.GroupResource)
	}
	return s, destroy, nil
}

// sharedClient is one etcd cluster's client, its compactor, and how many stores use them.
type sharedClient struct {
	key       string
	client    *kubernetes.Client
	compactor etcd3.Compactor
	stop      func()
	refs      int
}

// acquire returns the client of t's cluster, connecting at first use, with its compactor
// running at the first store's interval (0: none). berth's stores share one storage
// configuration, so they all ask for the same.
func (g *pool) acquire(t storagebackend.TransportConfig, compaction time.Duration) (*sharedClient, error) {
	key := fmt.Sprintf("%v|%s|%s|%s", t.ServerList, t.KeyFile, t.CertFile, t.TrustedCAFile)
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.clients[key]; ok {
		c.refs++
		return c, nil
	}
	client, err := connect(t)
	if err != nil {
		return nil, err
	}
	// As the factory's stores, requests count in etcd_request_duration_seconds.
	client.KV = etcd3.NewETCDLatencyTracker(client.KV)
	c := &sharedClient{key: key, client: client, refs: 1, stop: func() {}}
	if compaction != 0 {
		compactor := etcd3.StartCompactorPerEndpoint(client.Client, compaction)
		c.compactor, c.stop = compactor, compactor.Stop
	}
	g.clients[key] = c
	return c, nil
}

// release closes the client once no store uses it.
func (g *pool) release(c *sharedClient) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.refs--; c.refs > 0 {
		return
	}
	c.stop()
	_ = c.client.Close()
	delete(g.clients, c.key)
}

var logger = sync.OnceValue(func() *zap.Logger { return etcdlog.New("etcd-client") })

// connect opens a client as the factory does, waiting until its connection is ready.
func connect(t storagebackend.TransportConfig) (*kubernetes.Client, error) {
	tlsInfo := transport.TLSInfo{CertFile: t.CertFile, KeyFile: t.KeyFile, TrustedCAFile: t.TrustedCAFile}
	tlsConfig, err := tlsInfo.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd client TLS: %w", err)
	}
	if t.CertFile == "" && t.KeyFile == "" && t.TrustedCAFile == "" {
		tlsConfig = nil // the client dials plain gRPC only without a TLS config
	}
	client, err := kubernetes.New(clientv3.Config{
		Endpoints:            t.ServerList,
		TLS:                  tlsConfig,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepaliveTime,
		DialKeepAliveTimeout: keepaliveTimeout,
		Logger:               logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", t.ServerList, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout)
	defer cancel()
	conn := client.ActiveConnection()
	if conn == nil {
		_ = client.Close()
		return nil, fmt.Errorf("etcd client for %v: no gRPC connection", t.ServerList)
	}
	for {
		state := conn.GetState()
		if state == connectivity.Ready {
			return client, nil
		}
		if state == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, state) {
			_ = client.Close()
			return nil, fmt.Errorf("etcd at %v not ready: %w", t.ServerList, ctx.Err())
		}
	}
}
