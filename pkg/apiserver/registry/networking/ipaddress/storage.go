package ipaddress

import (
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the ipaddresses endpoint. Its Store is also the one the ClusterIP
// allocator writes through in process, so the allocator's objects pass the same
// validation as a client's.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       networkingv1.Resource("ipaddresses"),
		Singular:       "ipaddress",
		New:            func() runtime.Object { return &networkingv1.IPAddress{} },
		NewList:        func() runtime.Object { return &networkingv1.IPAddressList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"ip"}}, nil
}
