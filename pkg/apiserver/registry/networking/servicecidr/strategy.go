package servicecidr

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of service CIDRs. The main resource
// never writes status: a new range starts with none, and an update keeps the stored one.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*networkingv1.ServiceCIDR).Status = networkingv1.ServiceCIDRStatus{}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*networkingv1.ServiceCIDR).Status = old.(*networkingv1.ServiceCIDR).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateServiceCIDR(obj.(*networkingv1.ServiceCIDR))
}

// ValidateUpdate runs the update rules alone, as upstream does: they check the spec's
// prefixes only where they changed.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateServiceCIDRUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(networkingv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of servicecidrs/status: only status changes, and
// the metadata a status writer has no business with (labels, annotations, finalizers,
// owners) stays as stored.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return false }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	sc, oldSC := obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR)
	sc.Spec = oldSC.Spec
	metav1.ResetObjectMetaForStatus(&sc.ObjectMeta, &oldSC.ObjectMeta)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateServiceCIDRStatusUpdate(obj.(*networkingv1.ServiceCIDR), old.(*networkingv1.ServiceCIDR))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(networkingv1.SchemeGroupVersion, "metadata", "spec")
}

// Fields are the fields a service CIDR can be selected by: its name.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*networkingv1.ServiceCIDR).ObjectMeta, false)
}
