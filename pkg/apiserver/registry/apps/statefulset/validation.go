package statefulset

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// options are upstream's StatefulSetValidationOptions that berth needs: an update tolerates
// what it cannot change anyway.
type options struct {
	allowInvalidServiceName          bool
	skipValidatePodTemplateSpec      bool
	skipValidateVolumeClaimTemplates bool
}

// ValidateStatefulSet validates a new StatefulSet. Its name must be a DNS label: it is the
// prefix of its pods' hostnames.
func ValidateStatefulSet(s *appsv1.StatefulSet) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSLabel, field.NewPath("metadata"))
	return append(errs, validateSpec(&s.Spec, field.NewPath("spec"), options{})...)
}

// ValidateStatefulSetUpdate validates an update of a StatefulSet: as a new one (tolerating a
// stored template, service name or claim templates that are invalid by today's rules), and
// its selector, claim templates, service name and pod management policy unchanged.
func ValidateStatefulSetUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	opts := options{allowInvalidServiceName: true, skipValidateVolumeClaimTemplates: true}
	if len(validateSpec(&old.Spec, nil, opts)) > 0 {
		opts.skipValidatePodTemplateSpec = true
	}
	specPath := field.NewPath("spec")
	errs = append(errs, validateSpec(&s.Spec, specPath, opts)...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Spec.Selector, old.Spec.Selector, specPath.Child("selector"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Spec.VolumeClaimTemplates, old.Spec.VolumeClaimTemplates, specPath.Child("volumeClaimTemplates"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(s.Spec.ServiceName, old.Spec.ServiceName, specPath.Child("serviceName"))...)
	return append(errs, apivalidation.ValidateImmutableField(s.Spec.PodManagementPolicy, old.Spec.PodManagementPolicy, specPath.Child("podManagementPolicy"))...)
}

func validateSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path, opts options) field.ErrorList {
	var errs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		errs = append(errs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		errs = append(errs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement)))
	}
	errs = append(errs, validateUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		policyPath := fldPath.Child("persistentVolumeClaimRetentionPolicy")
		errs = append(errs, validateRetention(p.WhenDeleted, policyPath.Child("whenDeleted"))...)
		errs = append(errs, validateRetention(p.WhenScaled, policyPath.Child("whenScaled"))...)
	}
	if !opts.skipValidateVolumeClaimTemplates {
		for i := range spec.VolumeClaimTemplates {
			// A claim template's spec is checked as a new claim's.
			errs = append(errs, persistentvolumeclaim.ValidateClaimSpec(&spec.VolumeClaimTemplates[i].Spec,
				fldPath.Child("volumeClaimTemplates").Index(i).Child("spec"), persistentvolumeclaim.Options{})...)
		}
	}
	errs = append(errs, workload.Nonnegative(spec.Replicas, fldPath.Child("replicas"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), fldPath.Child("ordinals", "start"))...)
	}
	// Optional: a StatefulSet without a governing Service gets no per-pod DNS names.
	if !opts.allowInvalidServiceName && spec.ServiceName != "" {
		for _, msg := range apivalidation.NameIsDNSLabel(spec.ServiceName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("serviceName"), spec.ServiceName, msg))
		}
	}
	if spec.Selector == nil {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	} else {
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector, metavalidation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
		if len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for statefulset"))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(spec.Selector)
	if err != nil {
		errs = append(errs, field.Invalid(fldPath.Child("selector"), spec.Selector, ""))
	} else {
		t := templateAsPodsGetIt(spec)
		templatePath := fldPath.Child("template")
		errs = append(errs, workload.ValidateSelected(t, selector, templatePath)...)
		if !opts.skipValidatePodTemplateSpec {
			errs = append(errs, pod.ValidatePodTemplateSpec(t, templatePath)...)
		}
	}
	return append(errs, workload.ValidateRestart(&spec.Template, "StatefulSet", fldPath.Child("template"))...)
}

// templateAsPodsGetIt is the template as the controller makes pods of it, which is what is
// validated: hostname and subdomain are the controller's to set, and each claim template
// becomes a volume of the claim's name.
func templateAsPodsGetIt(spec *appsv1.StatefulSetSpec) *corev1.PodTemplateSpec {
	t := &spec.Template
	if t.Spec.Subdomain == "" && t.Spec.Hostname == "" && len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	t = t.DeepCopy()
	t.Spec.Subdomain, t.Spec.Hostname = "", ""
	if len(spec.VolumeClaimTemplates) == 0 {
		return t
	}
	claims := map[string]bool{}
	var volumes []corev1.Volume
	for _, c := range spec.VolumeClaimTemplates {
		if claims[c.Name] {
			continue
		}
		claims[c.Name] = true
		volumes = append(volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name},
		}})
	}
	for _, v := range t.Spec.Volumes {
		if !claims[v.Name] {
			volumes = append(volumes, v)
		}
	}
	t.Spec.Volumes = volumes
	return t
}

func validateUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("rollingUpdate"), s.RollingUpdate,
				fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
		return nil
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.RollingUpdate == nil {
			return nil
		}
		ruPath := fldPath.Child("rollingUpdate")
		errs := apivalidation.ValidateNonnegativeField(int64(ptr.Deref(s.RollingUpdate.Partition, 0)), ruPath.Child("partition"))
		if mu := s.RollingUpdate.MaxUnavailable; mu != nil {
			muPath := ruPath.Child("maxUnavailable")
			errs = append(errs, workload.ValidatePositiveIntOrPercent(*mu, muPath)...)
			if workload.IntOrPercentValue(*mu) == 0 {
				errs = append(errs, field.Invalid(muPath, *mu, "cannot be 0"))
			}
			errs = append(errs, workload.IsNotMoreThan100Percent(*mu, muPath)...)
		}
		return errs
	default:
		// The Recreate strategy is behind an alpha gate, off in Kubernetes 1.37.
		return field.ErrorList{field.Invalid(fldPath, s,
			fmt.Sprintf("must be '%s' or '%s'", appsv1.RollingUpdateStatefulSetStrategyType, appsv1.OnDeleteStatefulSetStrategyType))}
	}
}

func validateRetention(t appsv1.PersistentVolumeClaimRetentionPolicyType, fldPath *field.Path) field.ErrorList {
	switch t {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, t, []string{
		string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}

// ValidateStatefulSetStatusUpdate validates a write to statefulsets/status.
func ValidateStatefulSetStatusUpdate(s, old *appsv1.StatefulSet) field.ErrorList {
	fldPath := field.NewPath("status")
	errs := validateStatus(&s.Status, fldPath)
	errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&s.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))...)
	if workload.IsDecremented(s.Status.CollisionCount, old.Status.CollisionCount) {
		errs = append(errs, field.Invalid(fldPath.Child("collisionCount"), ptr.Deref(s.Status.CollisionCount, 0), "cannot be decremented"))
	}
	return errs
}

func validateStatus(s *appsv1.StatefulSetStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, c := range []struct {
		name  string
		value int32
	}{
		{"replicas", s.Replicas}, {"readyReplicas", s.ReadyReplicas}, {"currentReplicas", s.CurrentReplicas},
		{"updatedReplicas", s.UpdatedReplicas}, {"availableReplicas", s.AvailableReplicas},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, fldPath.Child("observedGeneration"))...)
	errs = append(errs, workload.Nonnegative(s.CollisionCount, fldPath.Child("collisionCount"))...)
	const msg = "cannot be greater than status.replicas"
	if s.ReadyReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("readyReplicas"), s.ReadyReplicas, msg))
	}
	if s.CurrentReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("currentReplicas"), s.CurrentReplicas, msg))
	}
	if s.UpdatedReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("updatedReplicas"), s.UpdatedReplicas, msg))
	}
	if s.AvailableReplicas > s.Replicas {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), s.AvailableReplicas, msg))
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		errs = append(errs, field.Invalid(fldPath.Child("availableReplicas"), s.AvailableReplicas, "cannot be greater than status.readyReplicas"))
	}
	return errs
}
