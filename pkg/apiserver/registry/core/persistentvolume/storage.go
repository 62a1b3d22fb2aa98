package persistentvolume

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of volumes.
type Storage struct {
	PersistentVolume *registry.Resource
	Status           *registry.SubresourceREST
}

// NewStorage returns the persistentvolumes endpoint and its status subresource.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("persistentvolumes"),
		Singular:       "persistentvolume",
		New:            func() runtime.Object { return &corev1.PersistentVolume{} },
		NewList:        func() runtime.Object { return &corev1.PersistentVolumeList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	// As upstream's: a delete answers with the volume (Terminating while its finalizer holds
	// it), not a Status.
	store.ReturnDeletedObject = true
	return &Storage{
		PersistentVolume: &registry.Resource{Store: store, Short: []string{"pv"}},
		Status:           registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
