package cronjob

import (
	"context"
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/job"
)

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of CronJobs. The main resource never
// writes status. Deleting a batch/v1 CronJob deletes its Jobs (the generic store's default;
// only the old batch/v1beta1 orphaned them).
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return true }

// PrepareForCreate clears status, starts the generation at 1 and drops the job template's
// spec.scheduling, whose feature (WorkloadWithJob, alpha) is off.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	c := obj.(*batchv1.CronJob)
	c.Status = batchv1.CronJobStatus{}
	c.Generation = 1
	c.Spec.JobTemplate.Spec.Scheduling = nil
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	c, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
	c.Status = o.Status
	if o.Spec.JobTemplate.Spec.Scheduling == nil {
		c.Spec.JobTemplate.Spec.Scheduling = nil
	}
	c.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(c.Spec, o.Spec) {
		c.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCronJob(obj.(*batchv1.CronJob))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateCronJobUpdate(obj.(*batchv1.CronJob), old.(*batchv1.CronJob))
}

var templatePath = field.NewPath("spec", "jobTemplate", "spec")

// WarningsOnCreate warns of a name that is no DNS label (the Jobs' pods' hostnames come from
// it) and of the job template's own warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	c := obj.(*batchv1.CronJob)
	var warnings []string
	if msgs := utilvalidation.IsDNS1123Label(c.Name); len(msgs) != 0 {
		warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
	}
	return append(warnings, job.SpecWarnings(templatePath, &c.Spec.JobTemplate.Spec, nil)...)
}

// WarningsOnUpdate repeats the template's warnings when the spec changed, and warns of a
// TZ= kept in the schedule.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	c, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
	var warnings []string
	if c.Generation != o.Generation {
		warnings = job.SpecWarnings(templatePath, &c.Spec.JobTemplate.Spec, &o.Spec.JobTemplate.Spec)
	}
	if strings.Contains(c.Spec.Schedule, "TZ") {
		// Upstream's text, whose path reads spec.spec.schedule.
		warnings = append(warnings, fmt.Sprintf("cannot use TZ or CRON_TZ in %s, use timeZone instead, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", field.NewPath("spec", "spec", "schedule")))
	}
	return warnings
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(batchv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ registry.Strategy }

// StatusStrategy is the update strategy of cronjobs/status: only status changes, and any
// status is accepted, as upstream.
var StatusStrategy = statusStrategy{registry.Base}

func (statusStrategy) NamespaceScoped() bool { return true }

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*batchv1.CronJob).Spec = old.(*batchv1.CronJob).Spec
}

func (statusStrategy) ValidateUpdate(context.Context, runtime.Object, runtime.Object) field.ErrorList {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(batchv1.SchemeGroupVersion, "spec")
}

// Fields are the fields CronJobs can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*batchv1.CronJob).ObjectMeta, true)
}
