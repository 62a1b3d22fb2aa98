package endpointslice

import (
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the endpointslices endpoint. It has no short name, as upstream.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       discoveryv1.Resource("endpointslices"),
		Singular:       "endpointslice",
		New:            func() runtime.Object { return &discoveryv1.EndpointSlice{} },
		NewList:        func() runtime.Object { return &discoveryv1.EndpointSliceList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}
