package job

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Jobs. The main resource never writes
// status: a new Job starts with none, and an update keeps the stored one.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy orphans a batch/v1 Job's pods unless the client asks
// otherwise, as upstream keeps doing for compatibility with the clients of batch/v1 (kubectl
// passes propagationPolicy=background itself); the storage warns about it on delete.
func (strategy) DefaultGarbageCollectionPolicy(ctx context.Context) rest.GarbageCollectionPolicy {
	if info, ok := genericapirequest.RequestInfoFrom(ctx); ok &&
		(schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}) == batchv1.SchemeGroupVersion {
		return rest.OrphanDependents
	}
	return rest.DeleteDependents
}

// PrepareForCreate generates the selector (unless manual), clears status, starts the
// generation at 1 and drops spec.scheduling, whose feature (WorkloadWithJob, alpha) is off.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	j := obj.(*batchv1.Job)
	if !ptr.Deref(j.Spec.ManualSelector, false) {
		GenerateSelector(j)
	}
	j.Status = batchv1.JobStatus{}
	j.Generation = 1
	j.Spec.Scheduling = nil
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	j.Status = o.Status
	if o.Spec.Scheduling == nil {
		j.Spec.Scheduling = nil
	}
	j.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(j.Spec, o.Spec) {
		j.Generation = o.Generation + 1
	}
}

// GenerateSelector labels the template with the Job's name and uid (both the
// batch.kubernetes.io/ labels and the legacy ones) and selects the controller-uid label,
// which no other Job's pods carry. Labels the user set are left for validation to judge.
func GenerateSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for key, value := range map[string]string{
		LegacyJobNameLabel:         j.Name,
		batchv1.JobNameLabel:       j.Name,
		LegacyControllerUIDLabel:   string(j.UID),
		batchv1.ControllerUidLabel: string(j.UID),
	} {
		if _, ok := j.Spec.Template.Labels[key]; !ok {
			j.Spec.Template.Labels[key] = value
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	// A wrong controller-uid the user put in matchLabels stays, and fails validation.
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateJob(obj.(*batchv1.Job), ValidationOptions{RequirePrefixedLabels: true})
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	return ValidateJobUpdate(j, o, updateOptions(o))
}

// updateOptions are the relaxations the stored Job earns, as upstream with the
// MutablePodResourcesForSuspendedJobs and MutableSchedulingDirectivesForSuspendedJobs gates
// on (their default): a suspended Job with no active pods, never started or suspended since,
// may have its template's scheduling directives and resources changed.
func updateOptions(old *batchv1.Job) ValidationOptions {
	suspended := ptr.Deref(old.Spec.Suspend, false)
	mutable := suspended && old.Status.Active == 0 &&
		(old.Status.StartTime == nil || conditionTrue(old.Status.Conditions, batchv1.JobSuspended))
	_, hadName := old.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := old.Spec.Template.Labels[batchv1.ControllerUidLabel]
	return ValidationOptions{
		AllowInvalidLabelValueInSelector: metavalidation.LabelSelectorHasInvalidLabelValue(old.Spec.Selector),
		AllowMutableSchedulingDirectives: mutable,
		AllowMutablePodResources:         mutable,
		RequirePrefixedLabels:            hadName && hadUID,
	}
}

// WarningsOnCreate warns of a name that is no DNS label: the Job's pods' hostnames come from it.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	j := obj.(*batchv1.Job)
	var warnings []string
	if msgs := utilvalidation.IsDNS1123Label(j.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, SpecWarnings(field.NewPath("spec"), &j.Spec, nil)...)
}

// WarningsOnUpdate repeats the spec's warnings when it changed.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	if j.Generation == o.Generation {
		return nil
	}
	return SpecWarnings(field.NewPath("spec"), &j.Spec, &o.Spec)
}

// SpecWarnings are the warnings of the Job spec at p (old is the stored one on an update,
// nil on a create), as upstream's WarningsForJobSpec: an Indexed Job too large for
// completedIndexes to be tracked when many indexes fail, then the pod template's warnings.
func SpecWarnings(p *field.Path, spec, old *batchv1.JobSpec) []string {
	var warnings []string
	if ptr.Deref(spec.CompletionMode, "") == batchv1.IndexedCompletion &&
		ptr.Deref(spec.Completions, 0) > completionsSoftLimit && ptr.Deref(spec.Parallelism, 0) > parallelismLimitForHighCompletions {
		warnings = append(warnings, fmt.Sprintf("%s: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail", p))
	}
	var oldTemplate *corev1.PodTemplateSpec
	if old != nil {
		oldTemplate = &old.Template
	}
	return append(warnings, pod.TemplateWarnings(p.Child("template"), &spec.Template, oldTemplate)...)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(batchv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of jobs/status: only status changes.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return true }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*batchv1.Job).Spec = old.(*batchv1.Job).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateJobStatusUpdate(obj.(*batchv1.Job), old.(*batchv1.Job))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(batchv1.SchemeGroupVersion, "spec")
}

// Fields are the fields Jobs can be selected by: metadata and status.successful, as upstream
// (the cronjob controller's `status.successful=1`-style queries).
func Fields(obj runtime.Object) fields.Set {
	j := obj.(*batchv1.Job)
	return generic.MergeFieldsSets(generic.ObjectMetaFieldsSet(&j.ObjectMeta, true), fields.Set{
		"status.successful": strconv.Itoa(int(j.Status.Succeeded)),
	})
}
