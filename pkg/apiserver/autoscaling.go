package apiserver

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/autoscaling/horizontalpodautoscaler"
)

// addAutoscalingDefaults registers the defaults of both autoscaling versions and the
// conversions between their HorizontalPodAutoscalers. Autoscalers are selected by metadata
// only, which the scheme allows without a function.
func addAutoscalingDefaults(s *runtime.Scheme) error {
	addDefaults(s, horizontalpodautoscaler.SetDefaultsV1, func(l *autoscalingv1.HorizontalPodAutoscalerList) []autoscalingv1.HorizontalPodAutoscaler {
		return l.Items
	})
	addDefaults(s, horizontalpodautoscaler.SetDefaults, func(l *autoscalingv2.HorizontalPodAutoscalerList) []autoscalingv2.HorizontalPodAutoscaler {
		return l.Items
	})
	return horizontalpodautoscaler.RegisterConversions(s)
}

// autoscalingStorage builds the autoscaling endpoints: HorizontalPodAutoscalers and their
// status, one store served at autoscaling/v2 and autoscaling/v1, as kube-apiserver serves them.
func autoscalingStorage(getter generic.RESTOptionsGetter) (v2, v1 map[string]rest.Storage, err error) {
	hpas, err := horizontalpodautoscaler.NewStorage(getter)
	if err != nil {
		return nil, nil, err
	}
	endpoints := func() map[string]rest.Storage {
		return map[string]rest.Storage{
			"horizontalpodautoscalers":        hpas.HorizontalPodAutoscaler,
			"horizontalpodautoscalers/status": hpas.Status,
		}
	}
	return endpoints(), endpoints(), nil
}
