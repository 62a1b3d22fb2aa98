package endpoints

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the endpoints endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("endpoints"),
		Singular:       "endpoints", // the kind is plural already
		New:            func() runtime.Object { return &corev1.Endpoints{} },
		NewList:        func() runtime.Object { return &corev1.EndpointsList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"ep"}}, nil
}
