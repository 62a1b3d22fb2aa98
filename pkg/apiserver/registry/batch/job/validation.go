package job

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// The limits of upstream's Job validation.
const (
	// maxParallelismForIndexedJob caps the length of status.completedIndexes.
	maxParallelismForIndexedJob = 100000
	// maxFailedIndexesForIndexedJob caps the length of completedIndexes and failedIndexes.
	maxFailedIndexesForIndexedJob = 100_000

	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000

	maxManagedByLength = 63
)

// ValidationOptions are the relaxations an update may earn from the stored Job, as upstream's
// JobValidationOptions.
type ValidationOptions struct {
	// AllowInvalidLabelValueInSelector keeps a selector stored before its values were checked
	// updatable.
	AllowInvalidLabelValueInSelector bool
	// AllowMutableSchedulingDirectives lets the template's node affinity, node selector,
	// tolerations, scheduling gates, labels and annotations change (a suspended Job whose pods
	// are all gone).
	AllowMutableSchedulingDirectives bool
	// AllowMutablePodResources lets the containers' resources change, likewise.
	AllowMutablePodResources bool
	// RequirePrefixedLabels asks for the batch.kubernetes.io/ labels as well as the legacy
	// ones on a generated selector's template; Jobs stored without them stay updatable.
	RequirePrefixedLabels bool
}

// ValidateJob validates a new Job.
func ValidateJob(j *batchv1.Job, opts ValidationOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateGeneratedSelector(j, opts.RequirePrefixedLabels)...)
	errs = append(errs, ValidateJobSpec(&j.Spec, nil, field.NewPath("spec"), opts)...)
	return append(errs, validateNameAllowsCompletions(j)...)
}

// ValidateJobUpdate validates an update of a Job's spec and metadata.
func ValidateJobUpdate(j, old *batchv1.Job, opts ValidationOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&j.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateJobSpecUpdate(&j.Spec, &old.Spec, field.NewPath("spec"), opts)...)
	return append(errs, validateNameAllowsCompletions(j)...)
}

// validateGeneratedSelector checks, unless the selector is manual, that the template carries
// the labels the selector was generated from, with the Job's uid and name, and that the
// selector picks them.
func validateGeneratedSelector(j *batchv1.Job, prefixedLabels bool) field.ErrorList {
	if ptr.Deref(j.Spec.ManualSelector, false) || j.Spec.Selector == nil {
		return nil // a missing selector is reported by the spec's rules
	}
	var errs field.ErrorList
	// An empty uid would make the selector controller-uid=, which picks too much.
	if j.UID == "" {
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	metaPath := field.NewPath("spec", "template", "metadata")
	want := map[string]string{LegacyControllerUIDLabel: string(j.UID), LegacyJobNameLabel: j.Name}
	errs = append(errs, validateHasLabel(j.Spec.Template.Labels, metaPath, LegacyControllerUIDLabel, string(j.UID))...)
	errs = append(errs, validateHasLabel(j.Spec.Template.Labels, metaPath, LegacyJobNameLabel, j.Name)...)
	if prefixedLabels {
		errs = append(errs, validateHasLabel(j.Spec.Template.Labels, metaPath, batchv1.ControllerUidLabel, string(j.UID))...)
		errs = append(errs, validateHasLabel(j.Spec.Template.Labels, metaPath, batchv1.JobNameLabel, j.Name)...)
		want[batchv1.ControllerUidLabel] = string(j.UID)
		want[batchv1.JobNameLabel] = j.Name
	}
	if selector, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !selector.Matches(labels.Set(want)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateHasLabel(l map[string]string, metaPath *field.Path, key, value string) field.ErrorList {
	p := metaPath.Child("labels").Key(key)
	got, ok := l[key]
	switch {
	case !ok:
		return field.ErrorList{field.Required(p, fmt.Sprintf("must be '%s'", value))}
	case got != value:
		return field.ErrorList{field.Invalid(p, l, fmt.Sprintf("must be '%s'", value))}
	}
	return nil
}

// validateNameAllowsCompletions: an Indexed Job's pods are named <job>-<index>, which must
// be a DNS label for the largest index, or the controller could never create them.
func validateNameAllowsCompletions(j *batchv1.Job) field.ErrorList {
	if ptr.Deref(j.Spec.CompletionMode, "") != batchv1.IndexedCompletion || ptr.Deref(j.Spec.Completions, 0) <= 0 {
		return nil
	}
	hostname := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
	if len(utilvalidation.IsDNS1123Label(hostname)) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), j.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", hostname))}
	}
	return nil
}

// ValidateJobSpec validates a Job's spec at fldPath, its selector included; oldSpec is nil
// on create.
func ValidateJobSpec(spec, oldSpec *batchv1.JobSpec, fldPath *field.Path, opts ValidationOptions) field.ErrorList {
	errs := ValidateJobSpecWithoutSelector(spec, oldSpec, fldPath)
	if spec.Selector == nil {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	} else {
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector,
			metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.AllowInvalidLabelValueInSelector},
			fldPath.Child("selector"))...)
	}
	// Generated or manual, the selector must pick the pods the Job makes.
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

// ValidateJobSpecWithoutSelector validates what a Job's spec and a CronJob's job template
// share: everything but the selector, which a template never has.
func ValidateJobSpecWithoutSelector(spec, _ *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	nonNegative := func(v *int32, name string) {
		if v != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*v), fldPath.Child(name))...)
		}
	}
	nonNegative(spec.Parallelism, "parallelism")
	nonNegative(spec.Completions, "completions")
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	nonNegative(spec.BackoffLimit, "backoffLimit")
	nonNegative(spec.TTLSecondsAfterFinished, "ttlSecondsAfterFinished")
	nonNegative(spec.BackoffLimitPerIndex, "backoffLimitPerIndex")
	if spec.MaxFailedIndexes != nil {
		nonNegative(spec.MaxFailedIndexes, "maxFailedIndexes")
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(fldPath.Child("managedBy"), "", maxManagedByLength))
		}
	}
	errs = append(errs, validateCompletionMode(spec, fldPath)...)
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) != batchv1.IndexedCompletion {
			errs = append(errs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	errs = append(errs, validatePodReplacementPolicy(spec, fldPath.Child("podReplacementPolicy"))...)
	errs = append(errs, pod.ValidatePodTemplateSpec(&spec.Template, fldPath.Child("template"))...)
	return append(errs, validateRestartPolicy(spec, fldPath.Child("template", "spec", "restartPolicy"))...)
}

// validateCompletionMode checks the mode and what each mode asks of the counts.
func validateCompletionMode(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	mode := ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion)
	switch mode {
	case batchv1.NonIndexedCompletion:
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
		return errs
	case batchv1.IndexedCompletion:
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("completionMode"), spec.CompletionMode,
			[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion})}
	}
	if spec.Completions == nil {
		errs = append(errs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if spec.Parallelism != nil && *spec.Parallelism > maxParallelismForIndexedJob {
		errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism,
			fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if spec.MaxFailedIndexes != nil {
		if spec.Completions != nil && *spec.MaxFailedIndexes > *spec.Completions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "must be less than or equal to completions"))
		}
		if *spec.MaxFailedIndexes > maxFailedIndexesForIndexedJob {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
		}
	}
	if spec.Completions != nil && *spec.Completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		suffix := fmt.Sprintf("when completions are above %d and used with backoff limit per index", completionsSoftLimit)
		if spec.MaxFailedIndexes == nil {
			errs = append(errs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if spec.Parallelism != nil && *spec.Parallelism > parallelismLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("parallelism"), *spec.Parallelism, fmt.Sprintf("must be less than or equal to %d %s", parallelismLimitForHighCompletions, suffix)))
		}
		if spec.MaxFailedIndexes != nil && *spec.MaxFailedIndexes > maxFailedIndexesLimitForHighCompletions {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, fmt.Sprintf("must be less than or equal to %d %s", maxFailedIndexesLimitForHighCompletions, suffix)))
		}
	}
	return errs
}

// validateRestartPolicy: a Job's pods end, so they never restart Always (the pod default,
// which is why an unset policy is refused too); a pod failure policy needs Never.
func validateRestartPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		return field.ErrorList{field.Required(p, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))}
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.NotSupported(p, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(p, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever))}
	}
	return nil
}

// validateJobSpecUpdate: a running Job's spec is mostly fixed. The template changes only
// while suspended and then only in the parts the options allow; completions change only
// for Indexed Jobs, in tandem with parallelism (elastic Indexed Jobs).
func validateJobSpecUpdate(spec, old *batchv1.JobSpec, fldPath *field.Path, opts ValidationOptions) field.ErrorList {
	errs := ValidateJobSpec(spec, old, fldPath, opts)
	errs = append(errs, validateCompletionsUpdate(spec, old, fldPath.Child("completions"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.Selector, old.Selector, fldPath.Child("selector"))...)
	errs = append(errs, validatePodTemplateUpdate(spec, old, fldPath, opts)...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.CompletionMode, old.CompletionMode, fldPath.Child("completionMode"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.PodFailurePolicy, old.PodFailurePolicy, fldPath.Child("podFailurePolicy"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.BackoffLimitPerIndex, old.BackoffLimitPerIndex, fldPath.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(spec.ManagedBy, old.ManagedBy, fldPath.Child("managedBy"))...)
	return append(errs, apivalidation.ValidateImmutableField(spec.SuccessPolicy, old.SuccessPolicy, fldPath.Child("successPolicy"))...)
}

func validateCompletionsUpdate(spec, old *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if ptr.Deref(spec.CompletionMode, "") != batchv1.IndexedCompletion {
		return apivalidation.ValidateImmutableField(spec.Completions, old.Completions, p)
	}
	// An Indexed Job without completions is already refused by the spec's rules.
	if ptr.Equal(spec.Completions, old.Completions) || spec.Completions == nil {
		return nil
	}
	if !ptr.Equal(spec.Completions, spec.Parallelism) {
		return field.ErrorList{field.Invalid(p, spec.Completions, fmt.Sprintf("can only be modified in tandem with %s", p.Root().Child("parallelism")))}
	}
	return nil
}

func validatePodTemplateUpdate(spec, old *batchv1.JobSpec, fldPath *field.Path, opts ValidationOptions) field.ErrorList {
	template, oldTemplate := &spec.Template, &old.Template
	if opts.AllowMutableSchedulingDirectives {
		// Compare against a copy of the old template that already has the new directives.
		oldTemplate = old.Template.DeepCopy()
		switch newAff, oldAff := template.Spec.Affinity, oldTemplate.Spec.Affinity; {
		case newAff == nil && oldAff != nil:
			// Clearing affinity is allowed when it held only node affinity.
			oldAff.NodeAffinity = nil
			if apiequality.Semantic.DeepEqual(*oldAff, corev1.Affinity{}) {
				oldTemplate.Spec.Affinity = nil
			}
		case newAff != nil && oldAff == nil:
			oldTemplate.Spec.Affinity = &corev1.Affinity{NodeAffinity: newAff.NodeAffinity}
		case newAff != nil && oldAff != nil:
			oldAff.NodeAffinity = newAff.NodeAffinity
		}
		oldTemplate.Spec.NodeSelector = template.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = template.Spec.Tolerations
		oldTemplate.Annotations = template.Annotations
		oldTemplate.Labels = template.Labels
		oldTemplate.Spec.SchedulingGates = template.Spec.SchedulingGates
	}
	if !ptr.Deref(old.Suspend, false) || !opts.AllowMutablePodResources {
		return apivalidation.ValidateImmutableField(template, oldTemplate, fldPath.Child("template"))
	}
	return validatePodResourceUpdatesOnly(&template.Spec, &oldTemplate.Spec, fldPath.Child("template", "spec"))
}

// validatePodResourceUpdatesOnly allows the containers' resources to change, nothing else.
func validatePodResourceUpdatesOnly(spec, old *corev1.PodSpec, p *field.Path) field.ErrorList {
	expected := old.DeepCopy()
	copyResources := func(to, from []corev1.Container) {
		if len(to) != len(from) {
			return
		}
		for i := range from {
			if to[i].Name == from[i].Name {
				to[i].Resources = from[i].Resources
			}
		}
	}
	copyResources(expected.Containers, spec.Containers)
	copyResources(expected.InitContainers, spec.InitContainers)
	return apivalidation.ValidateImmutableField(*spec, *expected, p)
}
