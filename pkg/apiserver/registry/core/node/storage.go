package node

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of nodes.
type Storage struct {
	Node   *registry.Resource
	Status *registry.SubresourceREST
}

// NewStorage returns the nodes and nodes/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("nodes"),
		Singular:       "node",
		New:            func() runtime.Object { return &corev1.Node{} },
		NewList:        func() runtime.Object { return &corev1.NodeList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		Node:   &registry.Resource{Store: store, Short: []string{"no"}},
		Status: registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
