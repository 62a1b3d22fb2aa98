package role

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/rbacvalidation"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of roles.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateRole(obj.(*rbacv1.Role), nil)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateRole(obj.(*rbacv1.Role), old.(*rbacv1.Role))
}

// ValidateRole validates a role on create (old nil) or update.
func ValidateRole(role, old *rbacv1.Role) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	if old != nil {
		oldMeta = &old.ObjectMeta
	}
	errs := rbacvalidation.ValidateObjectMeta(&role.ObjectMeta, oldMeta, true)
	return append(errs, rbacvalidation.ValidateRules(role.Rules, true)...)
}

// Fields are the fields a role can be selected by.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*rbacv1.Role).ObjectMeta, true)
}
