package poddisruptionbudget

import (
	"context"

	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// v1beta1EmptySelectorLabel is the key policy/v1beta1 used to tell "match none" from "match
// all" in an empty selector. A policy/v1 selector must not combine it with its own terms.
const v1beta1EmptySelectorLabel = "pdb.kubernetes.io/deprecated-v1beta1-empty-selector-match"

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of budgets. The main resource never
// writes status. An update must name the resourceVersion it read (as upstream): evictions
// spend the budget concurrently.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return true }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate clears status and starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pdb := obj.(*policyv1.PodDisruptionBudget)
	pdb.Status = policyv1.PodDisruptionBudgetStatus{}
	pdb.Generation = 1
	stripV1beta1Label(pdb.Spec.Selector, nil)
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed,
// so that evictions wait for the controller to observe it.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pdb, o := obj.(*policyv1.PodDisruptionBudget), old.(*policyv1.PodDisruptionBudget)
	pdb.Status = o.Status
	pdb.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(pdb.Spec, o.Spec) {
		pdb.Generation = o.Generation + 1
	}
	stripV1beta1Label(pdb.Spec.Selector, o.Spec.Selector)
}

// stripV1beta1Label removes the v1beta1 marker from a new or changed selector, unless the
// selector is exactly policy/v1's spelling of "match none" (the marker alone).
func stripV1beta1Label(selector, old *metav1.LabelSelector) {
	if selector == nil || (old != nil && apiequality.Semantic.DeepEqual(selector, old)) {
		return
	}
	matchNone := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: v1beta1EmptySelectorLabel, Operator: metav1.LabelSelectorOpExists},
	}}
	if apiequality.Semantic.DeepEqual(selector, matchNone) {
		return
	}
	kept := selector.MatchExpressions[:0]
	for _, e := range selector.MatchExpressions {
		if e.Key != v1beta1EmptySelectorLabel {
			kept = append(kept, e)
		}
	}
	selector.MatchExpressions = kept
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateSpec(&obj.(*policyv1.PodDisruptionBudget).Spec, false, field.NewPath("spec"))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateSpec(&obj.(*policyv1.PodDisruptionBudget).Spec, hasInvalidSelectorValue(old.(*policyv1.PodDisruptionBudget)), field.NewPath("spec"))
}

func hasInvalidSelectorValue(pdb *policyv1.PodDisruptionBudget) bool {
	return pdb.Spec.Selector != nil &&
		len(metavalidation.ValidateLabelSelector(pdb.Spec.Selector, metavalidation.LabelSelectorValidationOptions{}, nil)) > 0
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(policyv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of poddisruptionbudgets/status: only status
// changes, and only from the resourceVersion the writer read.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool                         { return true }
func (statusStrategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*policyv1.PodDisruptionBudget).Spec = old.(*policyv1.PodDisruptionBudget).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return ValidateStatus(&obj.(*policyv1.PodDisruptionBudget).Status, field.NewPath("status"))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(policyv1.SchemeGroupVersion, "spec")
}

// Fields are the fields budgets can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*policyv1.PodDisruptionBudget).ObjectMeta, true)
}
