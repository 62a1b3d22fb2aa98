package pod

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of pods. pods/eviction, which needs the budgets' store too, is
// NewEvictionREST.
type Storage struct {
	Pod     *registry.Resource
	Status  *registry.SubresourceREST
	Binding *BindingREST
	// LegacyBinding is the old /bindings resource.
	LegacyBinding *LegacyBindingREST
}

// NewStorage returns the pods endpoint and its subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("pods"),
		Singular:       "pod",
		New:            func() runtime.Object { return &corev1.Pod{} },
		NewList:        func() runtime.Object { return &corev1.PodList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
		Indexed:        map[string]func(runtime.Object) string{"spec.nodeName": NodeName},
	})
	if err != nil {
		return nil, err
	}
	binding := &BindingREST{store: store}
	return &Storage{
		Pod:           &registry.Resource{Store: store, Short: []string{"po"}, InCategories: []string{"all"}},
		Status:        registry.NewSubresourceREST(store, StatusStrategy),
		Binding:       binding,
		LegacyBinding: &LegacyBindingREST{binding: binding},
	}, nil
}
