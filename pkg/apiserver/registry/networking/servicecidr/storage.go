package servicecidr

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of service CIDRs.
type Storage struct {
	ServiceCIDR *registry.Resource
	Status      *registry.SubresourceREST
}

// NewREST returns the servicecidrs and servicecidrs/status endpoints.
func NewREST(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       networkingv1.Resource("servicecidrs"),
		Singular:       "servicecidr",
		New:            func() runtime.Object { return &networkingv1.ServiceCIDR{} },
		NewList:        func() runtime.Object { return &networkingv1.ServiceCIDRList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		ServiceCIDR: &registry.Resource{Store: store},
		Status:      registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
