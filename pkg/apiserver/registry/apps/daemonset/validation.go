package daemonset

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// SetDefaults gives a DaemonSet upstream's apps/v1 defaults: a rolling update of one
// unavailable node and no surge, ten revisions kept, and the template's pod spec defaults.
func SetDefaults(ds *appsv1.DaemonSet) {
	s := &ds.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptr.To(intstrOne)
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptr.To(intstrZero)
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = ptr.To[int32](10)
	}
	pod.SetTemplateDefaults(&ds.Spec.Template)
}

// ValidateDaemonSet validates a new DaemonSet.
func ValidateDaemonSet(ds *appsv1.DaemonSet) field.ErrorList {
	errs := validation.ValidateObjectMeta(&ds.ObjectMeta, true, validation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&ds.Spec, field.NewPath("spec"), false)...)
}

// ValidateDaemonSetUpdate validates an update of a DaemonSet: its selector unchanged (a stored
// selector with label values invalid by today's rules is tolerated, as upstream), and the spec
// as a new one's. The template generation rules upstream checks here hold by construction:
// the strategy sets the annotation.
func ValidateDaemonSetUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validation.ValidateImmutableField(ds.Spec.Selector, old.Spec.Selector, field.NewPath("spec", "selector"))...)
	return append(errs, validateSpec(&ds.Spec, field.NewPath("spec"), metavalidation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector))...)
}

func validateSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path, allowInvalidLabelValue bool) field.ErrorList {
	errs := metavalidation.ValidateLabelSelector(spec.Selector,
		metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}, fldPath.Child("selector"))
	// As upstream, no selector selects nothing: the template's labels do not match it.
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	errs = append(errs, pod.ValidatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	errs = append(errs, workload.ValidateRestart(&spec.Template, "DaemonSet", fldPath.Child("template"))...)
	errs = append(errs, validation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	errs = append(errs, validateUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	// Zero is a valid revisionHistoryLimit.
	return append(errs, workload.Nonnegative(spec.RevisionHistoryLimit, fldPath.Child("revisionHistoryLimit"))...)
}

func validateUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		return validateRollingUpdate(s.RollingUpdate, fldPath.Child("rollingUpdate"))
	default:
		return field.ErrorList{field.NotSupported(fldPath, s, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
	}
}

func validateRollingUpdate(ru *appsv1.RollingUpdateDaemonSet, fldPath *field.Path) field.ErrorList {
	unavailable, surge := workload.IntOrZero(ru.MaxUnavailable), workload.IntOrZero(ru.MaxSurge)
	unavailablePath, surgePath := fldPath.Child("maxUnavailable"), fldPath.Child("maxSurge")
	errs := workload.ValidatePositiveIntOrPercent(unavailable, unavailablePath)
	errs = append(errs, workload.ValidatePositiveIntOrPercent(surge, surgePath)...)
	errs = append(errs, workload.IsNotMoreThan100Percent(unavailable, unavailablePath)...)
	errs = append(errs, workload.IsNotMoreThan100Percent(surge, surgePath)...)
	// A node's old pod goes before its new one comes, or the new one comes first: not both.
	hasUnavailable, hasSurge := workload.IntOrPercentValue(unavailable) != 0, workload.IntOrPercentValue(surge) != 0
	switch {
	case hasUnavailable && hasSurge:
		errs = append(errs, field.Invalid(surgePath, surge, "may not be set when maxUnavailable is non-zero"))
	case !hasUnavailable && !hasSurge:
		errs = append(errs, field.Required(unavailablePath, "cannot be 0 when maxSurge is 0"))
	}
	return errs
}

// ValidateDaemonSetStatusUpdate validates a write to daemonsets/status.
func ValidateDaemonSetStatusUpdate(ds, old *appsv1.DaemonSet) field.ErrorList {
	errs := validation.ValidateObjectMetaUpdate(&ds.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	fldPath := field.NewPath("status")
	s := &ds.Status
	for _, c := range []struct {
		name  string
		value int64
	}{
		{"currentNumberScheduled", int64(s.CurrentNumberScheduled)}, {"numberMisscheduled", int64(s.NumberMisscheduled)},
		{"desiredNumberScheduled", int64(s.DesiredNumberScheduled)}, {"numberReady", int64(s.NumberReady)},
		{"observedGeneration", s.ObservedGeneration}, {"updatedNumberScheduled", int64(s.UpdatedNumberScheduled)},
		{"numberAvailable", int64(s.NumberAvailable)}, {"numberUnavailable", int64(s.NumberUnavailable)},
	} {
		errs = append(errs, validation.ValidateNonnegativeField(c.value, fldPath.Child(c.name))...)
	}
	errs = append(errs, workload.Nonnegative(s.CollisionCount, fldPath.Child("collisionCount"))...)
	if workload.IsDecremented(s.CollisionCount, old.Status.CollisionCount) {
		errs = append(errs, field.Invalid(fldPath.Child("collisionCount"), ptr.Deref(s.CollisionCount, 0), "cannot be decremented"))
	}
	return errs
}
