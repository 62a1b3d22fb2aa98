package node

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of nodes. A node may be created with its
// status (a node agent registers itself that way); later the main resource leaves status alone.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object) {}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Node).Status = old.(*corev1.Node).Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateNode(obj.(*corev1.Node))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	n := obj.(*corev1.Node)
	return append(ValidateNode(n), ValidateNodeUpdate(n, old.(*corev1.Node))...)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of nodes/status: only status changes.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return false }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.Node).Spec = old.(*corev1.Node).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateNodeUpdate(obj.(*corev1.Node), old.(*corev1.Node))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

// Fields are the fields a node can be selected by: its name and whether it is unschedulable.
func Fields(obj runtime.Object) fields.Set {
	n := obj.(*corev1.Node)
	set := generic.ObjectMetaFieldsSet(&n.ObjectMeta, false)
	set["spec.unschedulable"] = strconv.FormatBool(n.Spec.Unschedulable)
	return set
}
