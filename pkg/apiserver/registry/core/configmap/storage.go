package configmap

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// NewREST returns the configmaps endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("configmaps"),
		Singular:       "configmap",
		New:            func() runtime.Object { return &corev1.ConfigMap{} },
		NewList:        func() runtime.Object { return &corev1.ConfigMapList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"cm"}}, nil
}
