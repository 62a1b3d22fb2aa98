package service

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage is the services endpoint and its status.
type Storage struct {
	Service *registry.Resource
	Status  *registry.SubresourceREST
}

// NewStorage returns the services endpoints, whose creates, updates and deletes take and
// give back cluster IPs from ips and node ports from ports.
func NewStorage(getter generic.RESTOptionsGetter, ips IPAllocator, ports PortAllocator) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("services"),
		Singular:       "service",
		New:            func() runtime.Object { return &corev1.Service{} },
		NewList:        func() runtime.Object { return &corev1.ServiceList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	store.Decorator = defaultOnRead
	// The status endpoint is a copy made before the allocation hooks: a status write never
	// allocates (its spec is the stored one).
	status := registry.NewSubresourceREST(store, StatusStrategy)
	a := &allocators{ips: ips, ports: ports}
	// The deleted Service is what AfterDelete releases from.
	store.ReturnDeletedObject = true
	store.BeginCreate = func(ctx context.Context, obj runtime.Object, options *metav1.CreateOptions) (genericregistry.FinishFunc, error) {
		svc := obj.(*corev1.Service)
		normalizeClusterIPs(svc, nil)
		t, err := a.allocateCreate(ctx, svc, len(options.DryRun) > 0)
		if err != nil {
			return nil, err
		}
		return t.finish, nil
	}
	store.BeginUpdate = func(ctx context.Context, obj, old runtime.Object, options *metav1.UpdateOptions) (genericregistry.FinishFunc, error) {
		svc, oldSvc := obj.(*corev1.Service), old.(*corev1.Service)
		patchAllocatedValues(svc, oldSvc)
		normalizeClusterIPs(svc, oldSvc)
		t, err := a.allocateUpdate(ctx, svc, oldSvc, len(options.DryRun) > 0)
		if err != nil {
			return nil, err
		}
		return t.finish, nil
	}
	store.AfterDelete = func(obj runtime.Object, options *metav1.DeleteOptions) {
		if len(options.DryRun) == 0 {
			a.releaseAll(context.Background(), obj.(*corev1.Service))
		}
	}
	return &Storage{
		Service: &registry.Resource{Store: store, Short: []string{"svc"}, InCategories: []string{"all"}},
		Status:  status,
	}, nil
}
