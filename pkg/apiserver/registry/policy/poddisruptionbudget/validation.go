package poddisruptionbudget

import (
	"strconv"

	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

var unhealthyPodEvictionPolicies = sets.New(string(policyv1.IfHealthyBudget), string(policyv1.AlwaysAllow))

// ValidateSpec validates a budget's spec, as upstream's ValidatePodDisruptionBudgetSpec. The
// metadata is checked by the generic store (names are path segments, as upstream).
// allowInvalidSelectorValues keeps a budget stored before its selector's values were checked
// updatable.
func ValidateSpec(spec *policyv1.PodDisruptionBudgetSpec, allowInvalidSelectorValues bool, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.MinAvailable != nil && spec.MaxUnavailable != nil {
		errs = append(errs, field.Invalid(p, spec, "minAvailable and maxUnavailable cannot be both set"))
	}
	if spec.MinAvailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MinAvailable, p.Child("minAvailable"))...)
	}
	if spec.MaxUnavailable != nil {
		errs = append(errs, validateIntOrPercent(*spec.MaxUnavailable, p.Child("maxUnavailable"))...)
	}
	errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector,
		metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidSelectorValues},
		p.Child("selector"))...)
	if policy := spec.UnhealthyPodEvictionPolicy; policy != nil && !unhealthyPodEvictionPolicies.Has(string(*policy)) {
		errs = append(errs, field.NotSupported(p.Child("unhealthyPodEvictionPolicy"), *policy, sets.List(unhealthyPodEvictionPolicies)))
	}
	return errs
}

// validateIntOrPercent: a non-negative count, or a percentage of at most 100%, as upstream's
// ValidatePositiveIntOrPercent and IsNotMoreThan100Percent.
func validateIntOrPercent(v intstr.IntOrString, p *field.Path) field.ErrorList {
	switch v.Type {
	case intstr.Int:
		return apivalidation.ValidateNonnegativeField(int64(v.IntValue()), p)
	case intstr.String:
		var errs field.ErrorList
		for _, msg := range utilvalidation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(p, v, msg))
		}
		if len(errs) == 0 {
			if n, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1]); n > 100 {
				errs = append(errs, field.Invalid(p, v, "must not be greater than 100%"))
			}
		}
		return errs
	}
	return field.ErrorList{field.Invalid(p, v, "must be an integer or percentage (e.g '5%%')")}
}

// ValidateStatus validates a budget's status, as upstream does for policy/v1: valid
// conditions and non-negative counts.
func ValidateStatus(s *policyv1.PodDisruptionBudgetStatus, p *field.Path) field.ErrorList {
	errs := metavalidation.ValidateConditions(s.Conditions, p.Child("conditions"))
	for _, f := range []struct {
		name  string
		value int32
	}{
		{"disruptionsAllowed", s.DisruptionsAllowed},
		{"currentHealthy", s.CurrentHealthy},
		{"desiredHealthy", s.DesiredHealthy},
		{"expectedPods", s.ExpectedPods},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(f.value), p.Child(f.name))...)
	}
	return errs
}
