package clusterrole

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/rbac/rbacvalidation"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of cluster roles.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateClusterRole(obj.(*rbacv1.ClusterRole), nil)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateClusterRole(obj.(*rbacv1.ClusterRole), old.(*rbacv1.ClusterRole))
}

// ValidateClusterRole validates a cluster role on create (old nil) or update. An update
// keeps accepting label values in selectors that an older server let in, as upstream does.
func ValidateClusterRole(role, old *rbacv1.ClusterRole) field.ErrorList {
	var oldMeta *metav1.ObjectMeta
	opts := metav1validation.LabelSelectorValidationOptions{}
	if old != nil {
		oldMeta = &old.ObjectMeta
		opts.AllowInvalidLabelValueInSelector = hasInvalidLabelValue(old)
	}
	errs := rbacvalidation.ValidateObjectMeta(&role.ObjectMeta, oldMeta, false)
	errs = append(errs, rbacvalidation.ValidateRules(role.Rules, false)...)
	if role.AggregationRule == nil {
		return errs
	}
	path := field.NewPath("aggregationRule", "clusterRoleSelectors")
	if len(role.AggregationRule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		selector := &role.AggregationRule.ClusterRoleSelectors[i]
		errs = append(errs, metav1validation.ValidateLabelSelector(selector, opts, path.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(selector); err != nil {
			errs = append(errs, field.Invalid(path.Index(i), selector, "invalid label selector."))
		}
	}
	return errs
}

func hasInvalidLabelValue(role *rbacv1.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	for i := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&role.AggregationRule.ClusterRoleSelectors[i],
			metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

// Fields are the fields a cluster role can be selected by.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*rbacv1.ClusterRole).ObjectMeta, false)
}
