package horizontalpodautoscaler

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of HorizontalPodAutoscalers. Both versions serve the same two
// endpoints: one store, whose objects are autoscaling/v2 in memory and in etcd.
type Storage struct {
	HorizontalPodAutoscaler *registry.Resource
	Status                  *registry.SubresourceREST
}

// NewStorage returns the horizontalpodautoscalers and horizontalpodautoscalers/status
// endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       autoscalingv2.Resource("horizontalpodautoscalers"),
		Singular:       "horizontalpodautoscaler",
		New:            func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
		NewList:        func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscalerList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		HorizontalPodAutoscaler: &registry.Resource{Store: store, Short: []string{"hpa"}, InCategories: []string{"all"}},
		Status:                  registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}
