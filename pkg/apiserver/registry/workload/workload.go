// Package workload holds the validation rules the workload registries share (Deployments,
// ReplicaSets, StatefulSets, DaemonSets, ReplicationControllers): a selector that selects
// something, a pod template its selector matches and whose pods restart, and the
// integer-or-percentage fields of the rolling updates; and the warnings of their writes. The
// template's own rules and warnings are the pod registry's (pod.ValidatePodTemplateSpec,
// pod.TemplateWarnings), shared with pods, PodTemplates and Jobs.
//
// In the API server's flow (decode → default → validate → admit → store) these are part of each
// workload's validate step; the warnings are computed after it, on valid objects only.
package workload

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// ValidateSelector checks a workload's label selector strictly (it must also parse) and that it
// selects something; noun is the word upstream's message uses ("empty selector is invalid for
// deployment": ReplicaSets say "deployment" too). It returns the parsed selector (none selects
// nothing, so that the template is also reported as unselected, as upstream), or nil when it
// does not parse: upstream then checks no template.
func ValidateSelector(sel *metav1.LabelSelector, noun string, fldPath *field.Path) (labels.Selector, field.ErrorList) {
	var errs field.ErrorList
	if sel == nil {
		return labels.Nothing(), field.ErrorList{field.Required(fldPath, "")}
	}
	errs = append(errs, metavalidation.ValidateLabelSelector(sel, metavalidation.LabelSelectorValidationOptions{}, fldPath)...)
	if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fldPath, sel, "empty selector is invalid for "+noun))
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return nil, append(errs, field.Invalid(fldPath, sel, "invalid label selector"))
	}
	return selector, errs
}

// ValidateTemplate checks the pod template of a workload of kind (as upstream names it in
// messages, "ReplicaSet") at fldPath: selected by selector (nil skips that), valid as every
// pod template, and of pods that restart and run for as long as the workload wants them.
func ValidateTemplate(t *corev1.PodTemplateSpec, selector labels.Selector, kind string, fldPath *field.Path) field.ErrorList {
	if t == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	errs = append(errs, ValidateSelected(t, selector, fldPath)...)
	errs = append(errs, pod.ValidatePodTemplateSpec(t, fldPath)...)
	errs = append(errs, ValidateRestart(t, kind, fldPath)...)
	return errs
}

// ValidateSelected checks that selector, unless nil or empty, matches the template's labels.
func ValidateSelected(t *corev1.PodTemplateSpec, selector labels.Selector, fldPath *field.Path) field.ErrorList {
	if selector == nil || selector.Empty() || selector.Matches(labels.Set(t.Labels)) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("metadata", "labels"), t.Labels, "`selector` does not match template `labels`")}
}

// ValidateRestart checks the rules of a template whose pods a controller keeps running: they
// restart always and have no deadline.
func ValidateRestart(t *corev1.PodTemplateSpec, kind string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fldPath.Child("spec", "restartPolicy"), t.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	if t.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("spec", "activeDeadlineSeconds"), fmt.Sprintf("activeDeadlineSeconds in %s is not Supported", kind)))
	}
	return errs
}

// Nonnegative checks an optional count; nil is 0, as in upstream's internal types.
func Nonnegative(v *int32, fldPath *field.Path) field.ErrorList {
	if v == nil {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(*v), fldPath)
}

// IntOrZero is an optional integer-or-percentage as upstream's internal types hold it: nil is
// the integer 0.
func IntOrZero(v *intstr.IntOrString) intstr.IntOrString {
	if v == nil {
		return intstr.FromInt32(0)
	}
	return *v
}

// ValidatePositiveIntOrPercent checks a non-negative integer or a percentage ("25%").
func ValidatePositiveIntOrPercent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch v.Type {
	case intstr.String:
		for _, msg := range validation.IsValidPercent(v.StrVal) {
			errs = append(errs, field.Invalid(fldPath, v, msg))
		}
	case intstr.Int:
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(v.IntValue()), fldPath)...)
	default:
		errs = append(errs, field.Invalid(fldPath, v, "must be an integer or percentage (e.g '5%%')"))
	}
	return errs
}

// IsNotMoreThan100Percent checks that a percentage is at most 100%.
func IsNotMoreThan100Percent(v intstr.IntOrString, fldPath *field.Path) field.ErrorList {
	value, isPercent := percent(v)
	if !isPercent || value <= 100 {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, v, "must not be greater than 100%")}
}

// IntOrPercentValue is the number of an integer or a percentage, for the "not both zero"
// rules.
func IntOrPercentValue(v intstr.IntOrString) int {
	if value, isPercent := percent(v); isPercent {
		return value
	}
	return v.IntValue()
}

func percent(v intstr.IntOrString) (int, bool) {
	if v.Type != intstr.String || len(validation.IsValidPercent(v.StrVal)) != 0 {
		return 0, false
	}
	value, _ := strconv.Atoi(v.StrVal[:len(v.StrVal)-1])
	return value, true
}

// NameWarnings is upstream's warning for a workload whose name is not a DNS label: its pods'
// names and hostnames come from it.
func NameWarnings(name string) []string {
	if msgs := validation.IsDNS1123Label(name); len(msgs) != 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs)}
	}
	return nil
}

// templatePath is where the pod template of a Deployment, ReplicaSet, StatefulSet, DaemonSet
// or ReplicationController sits.
var templatePath = field.NewPath("spec", "template")

// CreateWarnings are the warnings of creating a workload whose pods are named after it
// (Deployments, ReplicaSets, ReplicationControllers), in upstream's order: its name's, then
// its template's.
func CreateWarnings(name string, t *corev1.PodTemplateSpec) []string {
	return append(NameWarnings(name), TemplateWarnings(t, nil)...)
}

// TemplateWarnings are the pod registry's warnings of the template at spec.template; old is
// the stored one on an update, nil on a create.
func TemplateWarnings(t, old *corev1.PodTemplateSpec) []string {
	return pod.TemplateWarnings(templatePath, t, old)
}

// UpdateWarnings are the template's warnings on an update, given only when changed: as
// upstream, when the update moved metadata.generation (a DaemonSet: its template
// generation), so that a write of labels or status, or a controller's, warns of nothing.
func UpdateWarnings(changed bool, t, old *corev1.PodTemplateSpec) []string {
	if !changed {
		return nil
	}
	return TemplateWarnings(t, old)
}

// ContainerCells are the CONTAINERS and IMAGES cells of a workload's table row.
func ContainerCells(containers []corev1.Container) (names, images string) {
	for i, c := range containers {
		if i > 0 {
			names, images = names+",", images+","
		}
		names, images = names+c.Name, images+c.Image
	}
	return names, images
}

// IsDecremented is upstream's test of a status count that may only grow (collisionCount): it
// went down, or away.
func IsDecremented(update, old *int32) bool {
	if update == nil && old != nil {
		return true
	}
	if update == nil || old == nil {
		return false
	}
	return *update < *old
}
