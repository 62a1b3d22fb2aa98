package sharedetcd

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/berth-cluster/berth/pkg/apiserver/scheme"
	"github.com/berth-cluster/berth/pkg/cluster/etcd"
)

// inner is the storage factory's part: where each resource lives in etcd.
type inner struct{ endpoint string }

func (i inner) GetRESTOptions(gr schema.GroupResource, _ runtime.Object) (generic.RESTOptions, error) {
	cfg := storagebackend.NewDefaultConfig("/registry", scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion))
	cfg.Transport.ServerList = []string{i.endpoint}
	cfg.CompactionInterval = time.Minute
	return generic.RESTOptions{StorageConfig: cfg.ForResource(gr), ResourcePrefix: "/" + gr.Resource}, nil
}

func newStorage(t *testing.T, g *Getter, gr schema.GroupResource) (storage.Interface, func()) {
	t.Helper()
	opts, err := g.GetRESTOptions(gr, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, destroy, err := opts.Decorator(opts.StorageConfig, opts.ResourcePrefix,
		func(obj runtime.Object) (string, error) {
			return storage.NamespaceKeyFunc(opts.ResourcePrefix+"/", obj)
		},
		func() runtime.Object { return &corev1.ConfigMap{} }, func() runtime.Object { return &corev1.ConfigMapList{} },
		storage.DefaultNamespaceScopedAttr, nil, nil)
	if err != nil {
		t.Fatalf("storage of %s: %v", gr, err)
	}
	return s, destroy
}

// TestStoresShareOneClient builds a cached and an uncached store on a real etcd: both work,
// through one client, and the client goes with the last store.
func TestStoresShareOneClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	member, err := etcd.Start(ctx, etcd.Config{DataDir: t.TempDir(), StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer member.Stop()

	configmaps, events := corev1.Resource("configmaps"), corev1.Resource("events")
	g := NewGetter(inner{member.Endpoint}, events)
	cached, destroyCached := newStorage(t, g, configmaps)
	raw, destroyRaw := newStorage(t, g, events)
	if _, ok := raw.(interface{ Stop() }); ok {
		t.Errorf("the uncached resource got a watch cache (%T)", raw)
	}
	if n := len(g.clients); n != 1 {
		t.Fatalf("%d clients for two stores on one etcd, want 1", n)
	}
	for _, c := range g.clients {
		if c.refs != 2 {
			t.Errorf("client used by %d stores, want 2", c.refs)
		}
	}

	for _, s := range []struct {
		storage.Interface
		prefix string
	}{{cached, "/configmaps"}, {raw, "/events"}} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
		key := s.prefix + "/ns/a"
		if err := s.Create(ctx, key, obj, &corev1.ConfigMap{}, 0); err != nil {
			t.Fatalf("create %s: %v", key, err)
		}
		got := &corev1.ConfigMap{}
		if err := s.Get(ctx, key, storage.GetOptions{}, got); err != nil || got.Data["k"] != "v" {
			t.Fatalf("get %s = %v, %v", key, got.Data, err)
		}
	}
	// The watch cache follows etcd through the shared client's watch.
	deadline := time.Now().Add(30 * time.Second)
	for {
		list := &corev1.ConfigMapList{}
		err := cached.GetList(ctx, "/configmaps", storage.ListOptions{ResourceVersion: "0", Predicate: storage.Everything, Recursive: true}, list)
		if err == nil && len(list.Items) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watch cache never listed the config map: %v, %d items", err, len(list.Items))
		}
		time.Sleep(100 * time.Millisecond)
	}

	destroyCached()
	destroyCached() // subresources destroy their shared store again
	if len(g.clients) != 1 {
		t.Fatal("the client went while a store still used it")
	}
	destroyRaw()
	if len(g.clients) != 0 {
		t.Fatal("the client outlived its last store")
	}
}
