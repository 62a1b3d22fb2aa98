package clusterrolebinding

import (
	"context"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/rbacvalidation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of cluster role bindings.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding), nil)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateClusterRoleBinding(obj.(*rbacv1.ClusterRoleBinding), old.(*rbacv1.ClusterRoleBinding))
}

// SetDefaults fills in the rbac API group where the role reference or a user or group
// subject names none.
func SetDefaults(b *rbacv1.ClusterRoleBinding) {
	rbacvalidation.SetRoleRefDefaults(&b.RoleRef)
	rbacvalidation.SetSubjectDefaults(b.Subjects)
}

// ValidateClusterRoleBinding validates a cluster role binding on create (old nil) or update.
func ValidateClusterRoleBinding(b, old *rbacv1.ClusterRoleBinding) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	if old != nil {
		oldMeta = &old.ObjectMeta
	}
	errs := rbacvalidation.ValidateObjectMeta(&b.ObjectMeta, oldMeta, false)
	errs = append(errs, rbacvalidation.ValidateRoleRef(&b.RoleRef, "ClusterRole")...)
	errs = append(errs, rbacvalidation.ValidateSubjects(b.Subjects, false)...)
	if old != nil {
		errs = append(errs, rbacvalidation.ValidateRoleRefUpdate(&b.RoleRef, &old.RoleRef)...)
	}
	return errs
}

// Fields are the fields a cluster role binding can be selected by.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*rbacv1.ClusterRoleBinding).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get clusterrolebindings`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*rbacv1.ClusterRoleBinding] {
	return table.New(clk, rbacvalidation.BindingColumns("clusterRoleBinding"), func(b *rbacv1.ClusterRoleBinding, now time.Time) metav1.TableRow {
		role, users, groups, sas := rbacvalidation.BindingCells(b.RoleRef, b.Subjects)
		return metav1.TableRow{Cells: []any{b.Name, role, table.Age(b, now), users, groups, sas}}
	})
}
