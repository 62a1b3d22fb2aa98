package lease

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the leases endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       coordinationv1.Resource("leases"),
		Singular:       "lease",
		New:            func() runtime.Object { return &coordinationv1.Lease{} },
		NewList:        func() runtime.Object { return &coordinationv1.LeaseList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}
