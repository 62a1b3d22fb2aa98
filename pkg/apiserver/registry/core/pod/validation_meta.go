package pod

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates pod metadata: finalizers and the annotations that
// carry pod behaviour.

// validateProfileAnnotationsMatchFields: a pod that still carries the old
// seccomp or AppArmor annotations must not contradict its profile fields.
func validateProfileAnnotationsMatchFields(pod *corev1.Pod, specPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if sc := pod.Spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if v, ok := pod.Annotations[corev1.SeccompPodAnnotationKey]; ok {
			errs = append(errs, seccompMismatch(v, sc.SeccompProfile, specPath.Child("securityContext", "seccompProfile"))...)
		}
	}
	var podAppArmor *corev1.AppArmorProfile
	if pod.Spec.SecurityContext != nil {
		podAppArmor = pod.Spec.SecurityContext.AppArmorProfile
	}
	windows := pod.Spec.OS != nil && pod.Spec.OS.Name == corev1.Windows
	visitContainersWithPath(&pod.Spec, specPath, func(c *corev1.Container, p *field.Path) {
		if c.SecurityContext != nil && c.SecurityContext.SeccompProfile != nil {
			if v, ok := pod.Annotations[corev1.SeccompContainerAnnotationKeyPrefix+c.Name]; ok {
				errs = append(errs, seccompMismatch(v, c.SecurityContext.SeccompProfile, p.Child("securityContext", "seccompProfile"))...)
			}
		}
		profile := podAppArmor
		if c.SecurityContext != nil && c.SecurityContext.AppArmorProfile != nil {
			profile = c.SecurityContext.AppArmorProfile
		}
		if v, ok := pod.Annotations[corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix+c.Name]; ok && profile != nil && !windows {
			errs = append(errs, appArmorMismatch(v, profile, p.Child("securityContext", "appArmorProfile"))...)
		}
	})
	return errs
}

func seccompMismatch(annotation string, p *corev1.SeccompProfile, fldPath *field.Path) field.ErrorList {
	const typeMsg = "seccomp type in annotation and field must match"
	switch p.Type {
	case corev1.SeccompProfileTypeUnconfined:
		if annotation != corev1.SeccompProfileNameUnconfined {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
	case corev1.SeccompProfileTypeRuntimeDefault:
		if annotation != corev1.SeccompProfileRuntimeDefault && annotation != corev1.DeprecatedSeccompProfileDockerDefault {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
	case corev1.SeccompProfileTypeLocalhost:
		if !strings.HasPrefix(annotation, corev1.SeccompLocalhostProfileNamePrefix) {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
		if p.LocalhostProfile == nil || strings.TrimPrefix(annotation, corev1.SeccompLocalhostProfileNamePrefix) != *p.LocalhostProfile {
			return field.ErrorList{field.Forbidden(fldPath.Child("localhostProfile"), "seccomp profile in annotation and field must match")}
		}
	}
	return nil
}

func appArmorMismatch(annotation string, p *corev1.AppArmorProfile, fldPath *field.Path) field.ErrorList {
	const typeMsg = "apparmor type in annotation and field must match"
	switch p.Type {
	case corev1.AppArmorProfileTypeUnconfined:
		if annotation != corev1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
	case corev1.AppArmorProfileTypeRuntimeDefault:
		if annotation != corev1.DeprecatedAppArmorBetaProfileRuntimeDefault {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
	case corev1.AppArmorProfileTypeLocalhost:
		if !strings.HasPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			return field.ErrorList{field.Forbidden(fldPath.Child("type"), typeMsg)}
		}
		if p.LocalhostProfile == nil || strings.TrimPrefix(annotation, corev1.DeprecatedAppArmorBetaProfileNamePrefix) != *p.LocalhostProfile {
			return field.ErrorList{field.Forbidden(fldPath.Child("localhostProfile"), "apparmor profile in annotation and field must match")}
		}
	}
	return nil
}

// standardFinalizers are the finalizer names that need no domain prefix.
var standardFinalizers = sets.New("kubernetes", "orphan", "foregroundDeletion")

func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

// validatePodAnnotations checks the annotations that carry pod behaviour.
func validatePodAnnotations(annotations map[string]string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if v, mirror := annotations[corev1.MirrorPodAnnotationKey]; mirror && spec.NodeName == "" {
		errs = append(errs, field.Invalid(fldPath.Key(corev1.MirrorPodAnnotationKey), v, "must set spec.nodeName if mirror pod annotation is set"))
	}
	if v, ok := annotations[corev1.PodDeletionCost]; ok && !isInt32Annotation(v) {
		errs = append(errs, field.Invalid(fldPath.Key(corev1.PodDeletionCost), v, "must be a 32bit integer"))
	}
	for k, v := range annotations {
		switch {
		case k == corev1.SeccompPodAnnotationKey || strings.HasPrefix(k, corev1.SeccompContainerAnnotationKeyPrefix):
			errs = append(errs, validateSeccompAnnotation(v, fldPath.Child(k))...)
		case strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix):
			errs = append(errs, validateAppArmorAnnotation(k, v, spec, fldPath.Key(k))...)
		}
	}
	return errs
}

// isInt32Annotation is the pod-deletion-cost format: a base-10 int32 without
// a plus sign or leading zeros.
func isInt32Annotation(v string) bool {
	if v == "" || v[0] == '+' || (v[0] == '0' && v != "0") {
		return false
	}
	_, err := strconv.ParseInt(v, 10, 32)
	return err == nil
}

func validateSeccompAnnotation(profile string, fldPath *field.Path) field.ErrorList {
	switch {
	case profile == corev1.SeccompProfileRuntimeDefault, profile == corev1.DeprecatedSeccompProfileDockerDefault,
		profile == corev1.SeccompProfileNameUnconfined:
		return nil
	case strings.HasPrefix(profile, corev1.SeccompLocalhostProfileNamePrefix):
		return validateLocalDescendingPath(strings.TrimPrefix(profile, corev1.SeccompLocalhostProfileNamePrefix), fldPath)
	}
	return field.ErrorList{field.Invalid(fldPath, profile, "must be a valid seccomp profile")}
}

func validateAppArmorAnnotation(key, profile string, spec *corev1.PodSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	name := strings.TrimPrefix(key, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
	found := false
	forEachContainer(spec, func(c *corev1.Container) { found = found || c.Name == name })
	if !found {
		errs = append(errs, field.Invalid(fldPath, name, "container not found"))
	}
	switch {
	case profile == "", profile == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault,
		profile == corev1.DeprecatedAppArmorBetaProfileNameUnconfined,
		strings.HasPrefix(profile, corev1.DeprecatedAppArmorBetaProfileNamePrefix):
	default:
		errs = append(errs, field.Invalid(fldPath, profile, fmt.Sprintf("invalid AppArmor profile name: %q", profile)))
	}
	return errs
}

// validateMetaUpdate holds the metadata rules of every update: what
// metadata may change, finalizer names, and the kubelet-owned annotations.
func validateMetaUpdate(newPod, oldPod *corev1.Pod, metaPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&newPod.ObjectMeta, &oldPod.ObjectMeta, metaPath)
	for i, f := range newPod.Finalizers {
		errs = append(errs, validateKubeFinalizerName(f, metaPath.Child("finalizers").Index(i))...)
	}
	return append(errs, validateAnnotationUpdates(newPod, oldPod, metaPath.Child("annotations"))...)
}

// validateAnnotationUpdates forbids changing the annotations that the
// kubelet owns (mirror pods) or that can no longer be set (AppArmor).
func validateAnnotationUpdates(newPod, oldPod *corev1.Pod, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	protected := func(k string) bool {
		return k == corev1.MirrorPodAnnotationKey || strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix)
	}
	what := func(k string) string {
		if k == corev1.MirrorPodAnnotationKey {
			return "mirror pod annotation"
		}
		return "AppArmor annotations"
	}
	for k, oldValue := range oldPod.Annotations {
		if newValue, ok := newPod.Annotations[k]; (!ok || newValue != oldValue) && protected(k) {
			errs = append(errs, field.Forbidden(fldPath.Key(k), "may not remove or update "+what(k)))
		}
	}
	for k := range newPod.Annotations {
		if _, ok := oldPod.Annotations[k]; !ok && protected(k) {
			errs = append(errs, field.Forbidden(fldPath.Key(k), "may not add "+what(k)))
		}
	}
	return errs
}
