package pod

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates what the scheduler reads: affinity, tolerations and
// topology spread constraints.

var strictSelector = metavalidation.LabelSelectorValidationOptions{}

func validateAffinity(a *corev1.Affinity, fldPath *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	if na := a.NodeAffinity; na != nil {
		p := fldPath.Child("nodeAffinity")
		if na.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			errs = append(errs, validateNodeSelector(na.RequiredDuringSchedulingIgnoredDuringExecution, p.Child("requiredDuringSchedulingIgnoredDuringExecution"))...)
		}
		for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
			tp := p.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
			errs = append(errs, validateWeight(term.Weight, tp.Child("weight"))...)
			// Invalid label values are tolerated in preferences: a
			// preference that can never match is harmless.
			errs = append(errs, validateNodeSelectorTerm(term.Preference, false, tp.Child("preference"))...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validatePodAffinityTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAffinity"))...)
	}
	if paa := a.PodAntiAffinity; paa != nil {
		errs = append(errs, validatePodAffinityTerms(paa.RequiredDuringSchedulingIgnoredDuringExecution, paa.PreferredDuringSchedulingIgnoredDuringExecution, fldPath.Child("podAntiAffinity"))...)
	}
	return errs
}

func validateWeight(w int32, fldPath *field.Path) field.ErrorList {
	if w <= 0 || w > 100 {
		return field.ErrorList{field.Invalid(fldPath, w, "must be in the range 1-100")}
	}
	return nil
}

func validateNodeSelector(sel *corev1.NodeSelector, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(sel.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range sel.NodeSelectorTerms {
		errs = append(errs, validateNodeSelectorTerm(term, true, termsPath.Index(i))...)
	}
	return errs
}

func validateNodeSelectorTerm(term corev1.NodeSelectorTerm, checkValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, req := range term.MatchExpressions {
		errs = append(errs, validateNodeSelectorRequirement(req, checkValues, fldPath.Child("matchExpressions").Index(i))...)
	}
	for i, req := range term.MatchFields {
		errs = append(errs, validateNodeFieldSelectorRequirement(req, fldPath.Child("matchFields").Index(i))...)
	}
	return errs
}

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, checkValues bool, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	valuesPath := fldPath.Child("values")
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) == 0 {
			errs = append(errs, field.Required(valuesPath, "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(req.Values) > 0 {
			errs = append(errs, field.Forbidden(valuesPath, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(valuesPath, "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	errs = append(errs, metavalidation.ValidateLabelName(req.Key, fldPath.Child("key"))...)
	if checkValues {
		for i, v := range req.Values {
			errs = append(errs, invalidAll(valuesPath.Index(i), v, validation.IsValidLabelValue(v))...)
		}
	}
	return errs
}

// validateNodeFieldSelectorRequirement: metadata.name is the only node field
// a pod may select on, with a single value.
func validateNodeFieldSelectorRequirement(req corev1.NodeSelectorRequirement, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch req.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(req.Values) != 1 {
			errs = append(errs, field.Required(fldPath.Child("values"), "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
		}
	default:
		errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
	}
	if req.Key != metav1.ObjectNameField {
		return append(errs, field.Invalid(fldPath.Child("key"), req.Key, "not a valid field selector key"))
	}
	for i, v := range req.Values {
		errs = append(errs, invalidAll(fldPath.Child("values").Index(i), v, apivalidation.NameIsDNSSubdomain(v, false))...)
	}
	return errs
}

func validatePodAffinityTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, term := range required {
		errs = append(errs, validatePodAffinityTerm(term, fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))...)
	}
	for i, term := range preferred {
		p := fldPath.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		errs = append(errs, validateWeight(term.Weight, p.Child("weight"))...)
		errs = append(errs, validatePodAffinityTerm(term.PodAffinityTerm, p.Child("podAffinityTerm"))...)
	}
	return errs
}

func validatePodAffinityTerm(term corev1.PodAffinityTerm, fldPath *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabelSelector(term.LabelSelector, strictSelector, fldPath.Child("labelSelector"))
	errs = append(errs, metavalidation.ValidateLabelSelector(term.NamespaceSelector, strictSelector, fldPath.Child("namespaceSelector"))...)
	for _, ns := range term.Namespaces {
		// Upstream reports these under the singular "namespace".
		errs = append(errs, invalidAll(fldPath.Child("namespace"), ns, apivalidation.ValidateNamespaceName(ns, false))...)
	}
	errs = append(errs, validateMatchLabelKeys(fldPath, term.MatchLabelKeys, term.MismatchLabelKeys, term.LabelSelector)...)
	if term.TopologyKey == "" {
		errs = append(errs, field.Required(fldPath.Child("topologyKey"), "can not be empty"))
	}
	return append(errs, metavalidation.ValidateLabelName(term.TopologyKey, fldPath.Child("topologyKey"))...)
}

// validateMatchLabelKeys checks matchLabelKeys and mismatchLabelKeys: label
// names, only with a labelSelector, and neither repeated in the selector
// (beyond the requirement the strategy merges in for each key) nor in each
// other.
func validateMatchLabelKeys(fldPath *field.Path, matchKeys, mismatchKeys []string, selector *metav1.LabelSelector) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		name string
		keys []string
	}{{"matchLabelKeys", matchKeys}, {"mismatchLabelKeys", mismatchKeys}} {
		if len(list.keys) == 0 {
			continue
		}
		p := fldPath.Child(list.name)
		if selector == nil {
			errs = append(errs, field.Forbidden(p, "must not be specified when labelSelector is not set"))
			continue
		}
		for i, key := range list.keys {
			errs = append(errs, metavalidation.ValidateLabelName(key, p.Index(i))...)
		}
	}
	if selector != nil {
		index := map[string]int{}
		for i, key := range matchKeys {
			index[key] = i
		}
		seen := sets.New[string]()
		for key := range selector.MatchLabels {
			seen.Insert(key)
		}
		// The merged requirement for a key is its first appearance among the
		// expressions; any earlier or later one duplicates it.
		for _, expr := range selector.MatchExpressions {
			if i, ok := index[expr.Key]; ok && seen.Has(expr.Key) {
				errs = append(errs, field.Invalid(fldPath.Index(i), expr.Key, "exists in both matchLabelKeys and labelSelector"))
			}
			seen.Insert(expr.Key)
		}
	}
	mismatch := sets.New(mismatchKeys...)
	for i, key := range matchKeys {
		if mismatch.Has(key) {
			errs = append(errs, field.Invalid(fldPath.Child("matchLabelKeys").Index(i), key, "exists in both matchLabelKeys and mismatchLabelKeys"))
		}
	}
	return errs
}

func validateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metavalidation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator,
				"operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "": // empty means Equal
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		case corev1.TolerationOpLt, corev1.TolerationOpGt:
			// Numeric comparison is behind an alpha gate, off in v1.37.
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{
				corev1.TolerationOpEqual, corev1.TolerationOpExists, corev1.TolerationOpLt, corev1.TolerationOpGt}))
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{
				corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateEnum(t.Effect, p.Child("effect"),
				corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute)...)
		}
	}
	return errs
}

func validateTopologySpreadConstraints(constraints []corev1.TopologySpreadConstraint, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range constraints {
		p := fldPath.Index(i)
		errs = append(errs, positive(int64(c.MaxSkew), p.Child("maxSkew"))...)
		if c.TopologyKey == "" {
			errs = append(errs, field.Required(p.Child("topologyKey"), "can not be empty"))
		}
		if c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway {
			errs = append(errs, field.NotSupported(p.Child("whenUnsatisfiable"), c.WhenUnsatisfiable,
				[]corev1.UnsatisfiableConstraintAction{corev1.DoNotSchedule, corev1.ScheduleAnyway}))
		}
		// {topologyKey, whenUnsatisfiable} identifies a constraint.
		for _, later := range constraints[i+1:] {
			if later.TopologyKey == c.TopologyKey && later.WhenUnsatisfiable == c.WhenUnsatisfiable {
				errs = append(errs, field.Duplicate(p.Child("{topologyKey, whenUnsatisfiable}"), fmt.Sprintf("{%v, %v}", c.TopologyKey, c.WhenUnsatisfiable)))
				break
			}
		}
		if c.MinDomains != nil {
			errs = append(errs, positive(int64(*c.MinDomains), p.Child("minDomains"))...)
			if c.WhenUnsatisfiable != corev1.DoNotSchedule {
				errs = append(errs, field.Invalid(p.Child("minDomains"), c.MinDomains,
					fmt.Sprintf("can only use minDomains if whenUnsatisfiable=%s, not %s", corev1.DoNotSchedule, c.WhenUnsatisfiable)))
			}
		}
		errs = append(errs, validateNodeInclusionPolicy(c.NodeAffinityPolicy, p.Child("nodeAffinityPolicy"))...)
		errs = append(errs, validateNodeInclusionPolicy(c.NodeTaintsPolicy, p.Child("nodeTaintsPolicy"))...)
		errs = append(errs, validateMatchLabelKeys(p, c.MatchLabelKeys, nil, c.LabelSelector)...)
		errs = append(errs, metavalidation.ValidateLabelSelector(c.LabelSelector, strictSelector, p.Child("labelSelector"))...)
	}
	return errs
}

func validateNodeInclusionPolicy(policy *corev1.NodeInclusionPolicy, fldPath *field.Path) field.ErrorList {
	if policy == nil || *policy == corev1.NodeInclusionPolicyHonor || *policy == corev1.NodeInclusionPolicyIgnore {
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, *policy, []corev1.NodeInclusionPolicy{corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore})}
}
