package cronjob

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/batch/job"
)

// maxNameLength leaves room for the "-<minutes since epoch>" suffix (11 characters) the
// controller gives each Job, whose name must stay a 63-character DNS label.
const maxNameLength = utilvalidation.DNS1035LabelMaxLength - 11

// ValidateCronJob validates a new CronJob.
func ValidateCronJob(c *batchv1.CronJob) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&c.Spec, nil, field.NewPath("spec"))...)
	if len(c.Name) > maxNameLength {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, "must be no more than 52 characters"))
	}
	return errs
}

// ValidateCronJobUpdate validates an update. The name limit is not checked again, so that
// CronJobs stored before it can still be updated and deleted.
func ValidateCronJobUpdate(c, old *batchv1.CronJob) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&c.Spec, &old.Spec, field.NewPath("spec"))...)
}

// validateSpec validates a CronJob's spec; old is nil on create.
func validateSpec(spec, old *batchv1.CronJobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.Schedule == "" {
		errs = append(errs, field.Required(p.Child("schedule"), ""))
	} else {
		// A schedule stored with TZ= before the timeZone field existed may keep it.
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		errs = append(errs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, p.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(*spec.StartingDeadlineSeconds, p.Child("startingDeadlineSeconds"))...)
	}
	// An unchanged zone is not checked again: the zone database may have lost it since.
	if old == nil || !ptr.Equal(old.TimeZone, spec.TimeZone) {
		errs = append(errs, validateTimeZone(spec.TimeZone, p.Child("timeZone"))...)
	}
	errs = append(errs, validateConcurrencyPolicy(spec.ConcurrencyPolicy, p.Child("concurrencyPolicy"))...)
	var oldTemplate *batchv1.JobSpec
	if old != nil {
		oldTemplate = &old.JobTemplate.Spec
	}
	errs = append(errs, validateJobTemplate(&spec.JobTemplate, oldTemplate, p.Child("jobTemplate"))...)
	// Zero is a valid limit: keep no finished Jobs.
	if spec.SuccessfulJobsHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.SuccessfulJobsHistoryLimit), p.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*spec.FailedJobsHistoryLimit), p.Child("failedJobsHistoryLimit"))...)
	}
	return errs
}

// ParseSchedule parses a schedule as the cronjob controller will: the standard five fields
// or a descriptor (@hourly, @every 1h), through robfig/cron, whose panics on some inputs
// become errors.
func ParseSchedule(schedule string) (s cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

func validateSchedule(schedule string, allowTZ bool, timeZone *string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := ParseSchedule(schedule); err != nil {
		errs = append(errs, field.Invalid(p, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		errs = append(errs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		errs = append(errs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return errs
}

// validTimeZonePart is one component of an IANA zone name
// (https://data.iana.org/time-zones/theory.html#naming), with the digits and '+' of legacy
// names tolerated.
var validTimeZonePart = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	for _, part := range strings.Split(*tz, "/") {
		// Refusing "." and ".." keeps time.LoadLocation from reading outside the zone database.
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZonePart.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, fmt.Sprintf("unknown time zone %s", *tz))}
		}
	}
	var errs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		errs = append(errs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		errs = append(errs, field.Invalid(p, tz, err.Error()))
	}
	return errs
}

func validateConcurrencyPolicy(policy batchv1.ConcurrencyPolicy, p *field.Path) field.ErrorList {
	switch policy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
		return nil
	case "":
		return field.ErrorList{field.Required(p, "")}
	}
	return field.ErrorList{field.NotSupported(p, policy,
		[]batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent})}
}

// validateJobTemplate validates the job template as a Job's spec, except that each Job's
// selector is generated when it is created: the template may set none.
func validateJobTemplate(t *batchv1.JobTemplateSpec, old *batchv1.JobSpec, p *field.Path) field.ErrorList {
	specPath := p.Child("spec")
	errs := job.ValidateJobSpecWithoutSelector(&t.Spec, old, specPath)
	if t.Spec.Selector != nil {
		errs = append(errs, field.Invalid(specPath.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if ptr.Deref(t.Spec.ManualSelector, false) {
		errs = append(errs, field.NotSupported(specPath.Child("manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return errs
}
