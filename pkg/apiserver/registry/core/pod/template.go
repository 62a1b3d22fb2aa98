package pod

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the rules a pod template shares with a pod: every object that embeds a
// PodTemplateSpec (PodTemplates now; ReplicaSets, Deployments, Jobs... later) calls these, so
// that a template is defaulted and checked as once, here.

// SetTemplateDefaults gives a template's spec the defaults every PodSpec gets (upstream's
// SetDefaults_PodSpec and the containers', volumes' and probes' defaults), but not the
// pod-only ones (requests from limits, enableServiceLinks, ...): a template's pods get those
// when they are created.
func SetTemplateDefaults(t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	defaultPodSpec(spec)
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	roundUpToMilli(spec.Overhead)
	if spec.Resources != nil {
		roundUpToMilli(spec.Resources.Limits)
		roundUpToMilli(spec.Resources.Requests)
	}
}

// ValidatePodTemplateSpec validates a template at fldPath ("template", "spec.template"):
// its labels and annotations, its spec as a pod's, and no ephemeral containers, in
// upstream's words.
func ValidatePodTemplateSpec(t *corev1.PodTemplateSpec, fldPath *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabels(t.Labels, fldPath.Child("labels"))
	errs = append(errs, apivalidation.ValidateAnnotations(t.Annotations, fldPath.Child("annotations"))...)
	errs = append(errs, validatePodAnnotations(t.Annotations, &t.Spec, fldPath.Child("annotations"))...)
	specPath := fldPath.Child("spec")
	// A template names no pod yet: generated claim and PVC names are not checked.
	errs = append(errs, validatePodSpec(&t.Spec, &metav1.ObjectMeta{}, specPath)...)
	errs = append(errs, validateProfileAnnotationsMatchFields(&corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}, specPath)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// ValidateTolerations validates tolerations at fldPath as a pod's (RuntimeClasses'
// scheduling tolerations share the rules).
func ValidateTolerations(tolerations []corev1.Toleration, fldPath *field.Path) field.ErrorList {
	return validateTolerations(tolerations, fldPath)
}

// ValidateContainerResourceRequirements validates resource requirements at fldPath as a
// container's (names, quantities, requests within limits), without resource claims.
func ValidateContainerResourceRequirements(r *corev1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	return validateResourceRequirements(r, containerResourceName, nil, fldPath)
}

// ValidateContainerResourceName validates a resource name a container may ask for.
func ValidateContainerResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	return containerResourceName(name, fldPath)
}

// IsOvercommitAllowed reports whether requests of name may be lower than its limits (not
// for hugepages and extended resources).
func IsOvercommitAllowed(name corev1.ResourceName) bool { return isOvercommitAllowed(name) }
