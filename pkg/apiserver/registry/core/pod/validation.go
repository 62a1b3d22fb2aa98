package pod

import (
	"fmt"
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds pod create and update validation. The rest is split by
// subject: validation_meta.go (metadata), validation_spec.go (pod-wide spec
// fields), validation_containers.go, validation_resources.go,
// validation_volumes.go, validation_scheduling.go (affinity, tolerations,
// spreading) and validation_status.go (pods/status and pods/binding).
//
// The rules are those of Kubernetes v1.37's pkg/apis/core/validation with the
// feature gates that are on by default in v1.37, for an object that is a Pod
// (not a PodSpec in a template). Upstream's "ratcheting" options, which let an
// update keep a value that older versions accepted, are not needed: every pod
// berth stores was validated by these same rules.

// ValidatePod validates a pod on create: its metadata and its whole spec.
func ValidatePod(pod *corev1.Pod) field.ErrorList {
	errs := validatePodMetadataAndSpec(pod)
	specPath := field.NewPath("spec")
	// Ephemeral containers are only added through pods/ephemeralcontainers.
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return append(errs, validateProfileAnnotationsMatchFields(pod, specPath)...)
}

// validatePodMetadataAndSpec holds the rules shared by create and update.
func validatePodMetadataAndSpec(pod *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := apivalidation.ValidateObjectMeta(&pod.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	for i, f := range pod.Finalizers {
		errs = append(errs, validateKubeFinalizerName(f, metaPath.Child("finalizers").Index(i))...)
	}
	errs = append(errs, validatePodAnnotations(pod.Annotations, &pod.Spec, metaPath.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&pod.Spec, &pod.ObjectMeta, specPath)...)

	// The rules below hold for pods but not for pod templates, whose specs
	// upstream validates with the same code.
	if pod.Spec.ServiceAccountName == "" {
		for vi, vol := range pod.Spec.Volumes {
			if vol.Projected == nil {
				continue
			}
			for si, src := range vol.Projected.Sources {
				if src.ServiceAccountToken != nil {
					p := specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken")
					errs = append(errs, field.Forbidden(p, "must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*g, specPath.Child("terminationGracePeriodSeconds"))...)
	}
	errs = append(errs, validateImageWhitespace(pod.Spec.Containers, specPath.Child("containers"))...)
	errs = append(errs, validateImageWhitespace(pod.Spec.InitContainers, specPath.Child("initContainers"))...)
	return errs
}

func validateImageWhitespace(containers []corev1.Container, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range containers {
		if strings.TrimSpace(c.Image) != c.Image {
			errs = append(errs, field.Invalid(fldPath.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs
}

// updatablePodSpecFields is the list upstream's update error names.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

// ValidatePodUpdate validates an update of a pod's metadata and spec. The
// spec is immutable except for container images, activeDeadlineSeconds (set,
// or lowered), added tolerations (and changed tolerationSeconds), removed
// scheduling gates, terminationGracePeriodSeconds from negative to 1 and, while
// the pod is still gated, added node selectors and node affinity requirements.
func ValidatePodUpdate(newPod, oldPod *corev1.Pod) field.ErrorList {
	metaPath, specPath := field.NewPath("metadata"), field.NewPath("spec")
	errs := validateMetaUpdate(newPod, oldPod, metaPath)
	errs = append(errs, validatePodMetadataAndSpec(newPod)...)
	// Upstream checks finalizers, annotations and image whitespace twice on
	// update (once for the update, once for the new pod); so do we, so that
	// users see the same list of errors.
	errs = append(errs, validatePodAnnotations(newPod.Annotations, &newPod.Spec, metaPath.Child("annotations"))...)

	for _, list := range []struct {
		name          string
		newCtrs, olds []corev1.Container
	}{
		{"containers", newPod.Spec.Containers, oldPod.Spec.Containers},
		{"initContainers", newPod.Spec.InitContainers, oldPod.Spec.InitContainers},
	} {
		if len(list.newCtrs) != len(list.olds) {
			// Nothing below can be compared index by index any more.
			return append(errs, field.Forbidden(specPath.Child(list.name), "pod updates may not add or remove containers"))
		}
		for i, c := range list.newCtrs {
			if c.Image == "" {
				errs = append(errs, field.Required(specPath.Child(list.name).Index(i).Child("image"), ""))
			}
		}
		errs = append(errs, validateImageWhitespace(list.newCtrs, specPath.Child(list.name))...)
	}

	deadlinePath := specPath.Child("activeDeadlineSeconds")
	switch newDeadline, oldDeadline := newPod.Spec.ActiveDeadlineSeconds, oldPod.Spec.ActiveDeadlineSeconds; {
	case newDeadline != nil && (*newDeadline < 0 || *newDeadline > math.MaxInt32):
		return append(errs, field.Invalid(deadlinePath, *newDeadline, validation.InclusiveRangeError(0, math.MaxInt32)))
	case newDeadline != nil && oldDeadline != nil && *oldDeadline < *newDeadline:
		return append(errs, field.Invalid(deadlinePath, *newDeadline, "must be less than or equal to previous value"))
	case newDeadline == nil && oldDeadline != nil:
		errs = append(errs, field.Invalid(deadlinePath, newDeadline, "must not update from a positive integer to nil value"))
	}

	errs = append(errs, validateOnlyAddedTolerations(newPod.Spec.Tolerations, oldPod.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(newPod.Spec.SchedulingGates, oldPod.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)

	if apiequality.Semantic.DeepEqual(newPod.Spec, oldPod.Spec) {
		return errs
	}
	// Copy the old values of the mutable fields into the new spec; whatever
	// still differs is a forbidden change.
	munged := newPod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = oldPod.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = oldPod.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = oldPod.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = oldPod.Spec.SchedulingGates
	munged.Tolerations = oldPod.Spec.Tolerations
	if old := oldPod.Spec.TerminationGracePeriodSeconds; old != nil && *old < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old
	}
	if len(oldPod.Spec.SchedulingGates) > 0 {
		errs = append(errs, mungeGatedPodScheduling(munged, &oldPod.Spec, specPath)...)
	}

	if !apiequality.Semantic.DeepEqual(*munged, oldPod.Spec) {
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v",
			strings.Join(updatablePodSpecFields, ","), diff.Diff(oldPod.Spec, *munged))))
	}
	return errs
}

// mungeGatedPodScheduling lets a pod that is still waiting on scheduling gates
// gain node selectors and node affinity requirements (but not lose or change
// them), and then copies the old values into munged.
func mungeGatedPodScheduling(munged, old *corev1.PodSpec, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !apiequality.Semantic.DeepEqual(munged.NodeSelector, old.NodeSelector) {
		for k, v := range old.NodeSelector {
			if nv, ok := munged.NodeSelector[k]; !ok || nv != v {
				errs = append(errs, field.Invalid(specPath.Child("nodeSelector"), munged.NodeSelector,
					"only additions to spec.nodeSelector are allowed (no mutations or deletions)"))
				break
			}
		}
		munged.NodeSelector = old.NodeSelector
	}

	var oldNA, newNA *corev1.NodeAffinity
	if old.Affinity != nil {
		oldNA = old.Affinity.NodeAffinity
	}
	if munged.Affinity != nil {
		newNA = munged.Affinity.NodeAffinity
	}
	if apiequality.Semantic.DeepEqual(oldNA, newNA) {
		return errs
	}
	errs = append(errs, validateNodeAffinityAdditions(specPath.Child("affinity", "nodeAffinity"), newNA, oldNA)...)
	switch {
	case munged.Affinity == nil && oldNA == nil:
	case munged.Affinity == nil:
		munged.Affinity = &corev1.Affinity{NodeAffinity: oldNA}
	case old.Affinity == nil && munged.Affinity.PodAffinity == nil && munged.Affinity.PodAntiAffinity == nil:
		munged.Affinity = nil
	default:
		munged.Affinity.NodeAffinity = oldNA
	}
	return errs
}

// validateNodeAffinityAdditions allows, in an existing required node
// selector, only new requirements appended to each term.
func validateNodeAffinityAdditions(fldPath *field.Path, newNA, oldNA *corev1.NodeAffinity) field.ErrorList {
	if oldNA == nil || oldNA.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	termsPath := fldPath.Child("requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
	oldTerms := oldNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	var newTerms []corev1.NodeSelectorTerm
	if newNA != nil && newNA.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		newTerms = newNA.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	}
	if len(oldTerms) > 0 && len(oldTerms) != len(newTerms) {
		return field.ErrorList{field.Invalid(termsPath, newTerms, "no additions/deletions to non-empty NodeSelectorTerms list are allowed")}
	}
	var errs field.ErrorList
	for i := range oldTerms {
		if !onlyAppended(newTerms[i], oldTerms[i]) {
			errs = append(errs, field.Invalid(termsPath.Index(i), newTerms[i], "only additions are allowed (no mutations or deletions)"))
		}
	}
	return errs
}

func onlyAppended(newTerm, oldTerm corev1.NodeSelectorTerm) bool {
	if len(oldTerm.MatchExpressions) == 0 && len(oldTerm.MatchFields) == 0 {
		// An empty term matches nothing; narrowing it would widen the pod's reach.
		return len(newTerm.MatchExpressions) == 0 && len(newTerm.MatchFields) == 0
	}
	prefix := func(newReqs, oldReqs []corev1.NodeSelectorRequirement) bool {
		return len(oldReqs) == 0 || (len(newReqs) >= len(oldReqs) && apiequality.Semantic.DeepEqual(newReqs[:len(oldReqs)], oldReqs))
	}
	return prefix(newTerm.MatchExpressions, oldTerm.MatchExpressions) && prefix(newTerm.MatchFields, oldTerm.MatchFields)
}

// validateOnlyAddedTolerations allows new tolerations and new
// tolerationSeconds on existing ones, nothing else.
func validateOnlyAddedTolerations(newTols, oldTols []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	for _, old := range oldTols {
		found := false
		for _, t := range newTols {
			old.TolerationSeconds = t.TolerationSeconds
			if apiequality.Semantic.DeepEqual(old, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fldPath, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(newTols, fldPath)
}

func validateOnlyDeletedSchedulingGates(newGates, oldGates []corev1.PodSchedulingGate, fldPath *field.Path) field.ErrorList {
	old := sets.New[string]()
	for _, g := range oldGates {
		old.Insert(g.Name)
	}
	var errs field.ErrorList
	for i, g := range newGates {
		if !old.Has(g.Name) {
			errs = append(errs, field.Forbidden(fldPath.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// invalidAll turns validation messages about one value into Invalid errors.
func invalidAll(fldPath *field.Path, value interface{}, msgs []string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range msgs {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

func dns1123Label(value string, fldPath *field.Path) field.ErrorList {
	return invalidAll(fldPath, value, validation.IsDNS1123Label(value))
}

func dns1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	return invalidAll(fldPath, value, validation.IsDNS1123Subdomain(value))
}

func qualifiedName(value string, fldPath *field.Path) field.ErrorList {
	return invalidAll(fldPath, value, validation.IsQualifiedName(value))
}

func positive(value int64, fldPath *field.Path) field.ErrorList {
	if value <= 0 {
		return field.ErrorList{field.Invalid(fldPath, value, "must be greater than zero")}
	}
	return nil
}
