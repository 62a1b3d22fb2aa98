package namespace

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create and update strategy of namespaces. A new namespace is Active and
// carries the "kubernetes" finalizer, which the namespace controller removes once it has
// deleted everything inside; the finalizers then change only through namespaces/finalize.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
	}
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ns, oldNs := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = oldNs.Spec.Finalizers
	ns.Status = oldNs.Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateNamespace(obj.(*corev1.Namespace))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	return append(ValidateNamespace(ns), ValidateNamespaceUpdate(ns, old.(*corev1.Namespace))...)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of namespaces/status.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return false }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Namespace).Spec = old.(*corev1.Namespace).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateNamespaceStatusUpdate(obj.(*corev1.Namespace), old.(*corev1.Namespace))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

type finalizeStrategy struct{ registry.Strategy }

// FinalizeStrategy is the update strategy of namespaces/finalize: only spec.finalizers change.
var FinalizeStrategy = finalizeStrategy{registry.Base}

func (finalizeStrategy) NamespaceScoped() bool { return false }

func (finalizeStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Namespace).Status = old.(*corev1.Namespace).Status
}

func (finalizeStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateNamespaceFinalizeUpdate(obj.(*corev1.Namespace), old.(*corev1.Namespace))
}

func (finalizeStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

// Fields are the fields a namespace can be selected by: its name and phase.
func Fields(obj runtime.Object) fields.Set {
	ns := obj.(*corev1.Namespace)
	set := generic.ObjectMetaFieldsSet(&ns.ObjectMeta, false)
	set["status.phase"] = string(ns.Status.Phase)
	return set
}
