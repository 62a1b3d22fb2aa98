package persistentvolumeclaim

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of claims.
type Storage struct {
	PersistentVolumeClaim *registry.Resource
	Status                *registry.SubresourceREST
}

// NewStorage returns the persistentvolumeclaims endpoint and its status subresource.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("persistentvolumeclaims"),
		Singular:       "persistentvolumeclaim",
		New:            func() runtime.Object { return &corev1.PersistentVolumeClaim{} },
		NewList:        func() runtime.Object { return &corev1.PersistentVolumeClaimList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	store.Decorator = defaultOnRead
	// As upstream's: a delete answers with the claim (Terminating while its finalizer holds
	// it), not a Status.
	store.ReturnDeletedObject = true
	return &Storage{
		PersistentVolumeClaim: &registry.Resource{Store: store, Short: []string{"pvc"}},
		Status:                registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
