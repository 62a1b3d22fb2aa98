package horizontalpodautoscaler

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of HorizontalPodAutoscalers, at either
// version (it sees the stored autoscaling/v2 form). The main resource never writes status.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate clears status, starts the generation at 1 (HPAGeneration, on in v1.37) and
// drops the conversion annotations, which a v2 object never keeps.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	h.Generation = 1
	h.Annotations = DropRoundTripAnnotations(h.Annotations)
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	h, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
	h.Status = o.Status
	h.Annotations = DropRoundTripAnnotations(h.Annotations)
	h.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(h.Spec, o.Spec) {
		h.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	h := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	return Validate(h, OptionsFor(h, nil))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	h, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
	return ValidateUpdate(h, o, OptionsFor(h, o))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

// resetFields is path at both versions.
func resetFields(path string) map[fieldpath.APIVersion]*fieldpath.Set {
	out := registry.ResetFields(autoscalingv2.SchemeGroupVersion, path)
	for v, set := range registry.ResetFields(autoscalingv1.SchemeGroupVersion, path) {
		out[v] = set
	}
	return out
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of horizontalpodautoscalers/status: only status
// changes, and its counts must not be negative.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return true }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	h, o := obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler)
	h.Spec = o.Spec
	h.Annotations = DropRoundTripAnnotations(h.Annotations)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateStatusUpdate(obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("spec")
}

// Fields are the fields autoscalers can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*autoscalingv2.HorizontalPodAutoscaler).ObjectMeta, true)
}
