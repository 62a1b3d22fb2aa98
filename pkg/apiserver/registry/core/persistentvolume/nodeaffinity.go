package persistentvolume

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates a volume's node affinity: the nodes a volume can be reached from, which
// the scheduler matches pods' nodes against. The rules are those of a pod's required node
// affinity, as upstream shares them.

// validateNodeAffinity validates the affinity, which must hold a required selector.
func validateNodeAffinity(a *corev1.VolumeNodeAffinity, allowInvalidLabelValues bool, fldPath *field.Path) field.ErrorList {
	if a.Required == nil {
		return field.ErrorList{field.Required(fldPath.Child("required"), "must specify required node constraints")}
	}
	return validateNodeSelector(a.Required, allowInvalidLabelValues, fldPath.Child("required"))
}

func validateNodeSelector(sel *corev1.NodeSelector, allowInvalidLabelValues bool, fldPath *field.Path) field.ErrorList {
	termsPath := fldPath.Child("nodeSelectorTerms")
	if len(sel.NodeSelectorTerms) == 0 {
		return field.ErrorList{field.Required(termsPath, "must have at least one node selector term")}
	}
	var errs field.ErrorList
	for i, term := range sel.NodeSelectorTerms {
		termPath := termsPath.Index(i)
		for j, req := range term.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(req, allowInvalidLabelValues, termPath.Child("matchExpressions").Index(j))...)
		}
		for j, req := range term.MatchFields {
			errs = append(errs, validateNodeFieldSelectorRequirement(req, termPath.Child("matchFields").Index(j))...)
		}
	}
	return errs
}

func validateNodeSelectorRequirement(req corev1.NodeSelectorRequirement, allowInvalidLabelValues bool, fldPath *field.Path) field.ErrorList {
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
	if !allowInvalidLabelValues {
		for i, v := range req.Values {
			for _, msg := range validation.IsValidLabelValue(v) {
				errs = append(errs, field.Invalid(valuesPath.Index(i), v, msg))
			}
		}
	}
	return errs
}

// validateNodeFieldSelectorRequirement: a node's name is the only field a volume may select
// nodes by, one value at a time.
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
		for _, msg := range apivalidation.NameIsDNSSubdomain(v, false) {
			errs = append(errs, field.Invalid(fldPath.Child("values").Index(i), v, msg))
		}
	}
	return errs
}

// hasInvalidLabelValue reports whether a stored affinity holds a label value today's rules
// refuse; its updates are then not held to them.
func hasInvalidLabelValue(a *corev1.VolumeNodeAffinity) bool {
	if a == nil || a.Required == nil {
		return false
	}
	for _, term := range a.Required.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			for _, v := range req.Values {
				if len(validation.IsValidLabelValue(v)) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// betaToGALabel are the node labels whose GA name may replace the beta one in a volume's
// otherwise immutable node affinity.
var betaToGALabel = map[string]string{
	corev1.LabelFailureDomainBetaZone:   corev1.LabelTopologyZone,
	corev1.LabelFailureDomainBetaRegion: corev1.LabelTopologyRegion,
	"beta.kubernetes.io/os":             corev1.LabelOSStable,
	"beta.kubernetes.io/arch":           corev1.LabelArchStable,
	corev1.LabelInstanceType:            corev1.LabelInstanceTypeStable,
}

// betaToGAEqualities is semantic equality but for a requirement's key moved from a beta
// label to its GA name.
var betaToGAEqualities = func() conversion.Equalities {
	eqs := apiequality.Semantic.Copy()
	if err := eqs.AddFunc(func(newReq, oldReq corev1.NodeSelectorRequirement) bool {
		if oldReq.Key != newReq.Key && betaToGALabel[oldReq.Key] == newReq.Key {
			oldReq.Key = newReq.Key
		}
		return apiequality.Semantic.DeepEqual(newReq, oldReq)
	}); err != nil {
		panic(fmt.Sprintf("persistentvolume: node affinity equalities: %v", err))
	}
	return eqs
}()

// validateNodeAffinityUpdate: a set node affinity does not change (the MutablePVNodeAffinity
// gate is off in 1.37), but for beta labels renamed to GA ones.
func validateNodeAffinityUpdate(a, old *corev1.VolumeNodeAffinity, fldPath *field.Path) field.ErrorList {
	if !betaToGAEqualities.DeepEqual(a, old) {
		return field.ErrorList{field.Invalid(fldPath, a, apivalidation.FieldImmutableErrorMsg+", except for updating from beta label to GA")}
	}
	return nil
}
