package secret

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of secrets.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateSecret(obj.(*corev1.Secret))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateSecretUpdate(obj.(*corev1.Secret), old.(*corev1.Secret))
}

// Fields are the fields a secret can be selected by: its name, namespace and type.
func Fields(obj runtime.Object) fields.Set {
	s := obj.(*corev1.Secret)
	set := generic.ObjectMetaFieldsSet(&s.ObjectMeta, true)
	set["type"] = string(s.Type)
	return set
}
