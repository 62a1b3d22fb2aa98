package cronjob

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newCronJob(mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	c := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns"},
		Spec: batchv1.CronJobSpec{
			Schedule: "*/1 * * * *",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "hello", Image: "busybox"}}},
			}}},
		},
	}
	for _, m := range mutate {
		m(c)
	}
	SetDefaults(c)
	Strategy.PrepareForCreate(context.Background(), c)
	return c
}

func TestDefaults(t *testing.T) {
	c := newCronJob()
	s := c.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("defaults %+v", s)
	}
	// The template's Job-level fields stay unset: each Job is defaulted when created.
	if s.JobTemplate.Spec.BackoffLimit != nil || s.JobTemplate.Spec.Completions != nil {
		t.Errorf("job template got Job defaults: %+v", s.JobTemplate.Spec)
	}
	if s.JobTemplate.Spec.Template.Spec.DNSPolicy != corev1.DNSClusterFirst {
		t.Errorf("the pod template is not defaulted")
	}
	if c.Generation != 1 {
		t.Errorf("generation %d", c.Generation)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   string
	}{
		{"valid", func(*batchv1.CronJob) {}, ""},
		{"descriptor", func(c *batchv1.CronJob) { c.Spec.Schedule = "@hourly" }, ""},
		{"time zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Europe/Paris") }, ""},
		{"bad schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "not a schedule" },
			`spec.schedule: Invalid value: "not a schedule": expected exactly 5 fields, found 3: [not a schedule]`},
		{"out of range", func(c *batchv1.CronJob) { c.Spec.Schedule = "61 * * * *" },
			`spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`},
		{"no schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "" }, "spec.schedule: Required value"},
		{"TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC 0 * * * *" },
			`spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`},
		{"CRON_TZ in schedule", func(c *batchv1.CronJob) { c.Spec.Schedule = "CRON_TZ=UTC 0 * * * *" },
			"cannot use TZ or CRON_TZ in schedule, use timeZone field instead"},
		{"unknown zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Mars/Olympus") },
			`spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
		{"path in zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("../etc") },
			`spec.timeZone: Invalid value: "../etc": unknown time zone ../etc`},
		{"Local zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("Local") },
			"spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"},
		{"empty zone", func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("") },
			`spec.timeZone: Invalid value: "": timeZone must be nil or non-empty string`},
		{"name too long", func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 53) },
			"metadata.name: Invalid value: \"" + strings.Repeat("a", 53) + "\": must be no more than 52 characters"},
		{"concurrency policy", func(c *batchv1.CronJob) { c.Spec.ConcurrencyPolicy = "Sometimes" },
			`spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"`},
		{"negative history", func(c *batchv1.CronJob) { c.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](-1) },
			"spec.successfulJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0"},
		{"negative failed history", func(c *batchv1.CronJob) { c.Spec.FailedJobsHistoryLimit = ptr.To[int32](-1) },
			"spec.failedJobsHistoryLimit: Invalid value: -1: must be greater than or equal to 0"},
		{"negative deadline", func(c *batchv1.CronJob) { c.Spec.StartingDeadlineSeconds = ptr.To[int64](-1) },
			"spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0"},
		{"template selector", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.Selector = &metav1.LabelSelector{} },
			"spec.jobTemplate.spec.selector: Invalid value: {}: `selector` will be auto-generated"},
		{"template manual selector", func(c *batchv1.CronJob) { c.Spec.JobTemplate.Spec.ManualSelector = ptr.To(true) },
			`spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"`},
		{"template restart policy", func(c *batchv1.CronJob) {
			c.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		},
			`spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := Strategy.Validate(context.Background(), newCronJob(tt.mutate)).ToAggregate()
			switch {
			case tt.want == "" && errs != nil:
				t.Errorf("unexpected errors %v", errs)
			case tt.want != "" && (errs == nil || !strings.Contains(errs.Error(), tt.want)):
				t.Errorf("errors %v\nwant one with %q", errs, tt.want)
			}
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	ctx := context.Background()
	old := newCronJob(func(c *batchv1.CronJob) { c.Name = strings.Repeat("a", 60) })
	old.ResourceVersion = "1"
	c := old.DeepCopy()
	c.Spec.Schedule = "@daily"
	c.Status.Active = []corev1.ObjectReference{{Name: "x"}}
	Strategy.PrepareForUpdate(ctx, c, old)
	if errs := Strategy.ValidateUpdate(ctx, c, old); len(errs) > 0 {
		t.Errorf("an old, long-named CronJob's update: %v", errs)
	}
	if c.Generation != 2 || len(c.Status.Active) != 0 {
		t.Errorf("generation %d, status %+v: want 2 and the stored status", c.Generation, c.Status)
	}
	// A TZ= stored before timeZone existed may stay, but not beside timeZone.
	legacy := old.DeepCopy()
	legacy.Spec.Schedule = "TZ=UTC 0 * * * *"
	c = legacy.DeepCopy()
	if errs := Strategy.ValidateUpdate(ctx, c, legacy); len(errs) > 0 {
		t.Errorf("keeping a stored TZ=: %v", errs)
	}
	if w := Strategy.WarningsOnUpdate(ctx, c, legacy); len(w) != 1 || !strings.Contains(w[0], "cannot use TZ or CRON_TZ in spec.spec.schedule") {
		t.Errorf("warnings %v", w)
	}
	c.Spec.TimeZone = ptr.To("UTC")
	if errs := Strategy.ValidateUpdate(ctx, c, legacy).ToAggregate(); errs == nil || !strings.Contains(errs.Error(), "cannot use both timeZone field and TZ or CRON_TZ in schedule") {
		t.Errorf("TZ= and timeZone: %v", errs)
	}

	s := old.DeepCopy()
	s.Spec.Schedule = "bad"
	s.Status.LastScheduleTime = &metav1.Time{Time: time.Now()}
	StatusStrategy.PrepareForUpdate(ctx, s, old)
	if s.Spec.Schedule != old.Spec.Schedule || s.Status.LastScheduleTime == nil {
		t.Errorf("status update: spec %q, status %+v", s.Spec.Schedule, s.Status)
	}
}

func TestParseScheduleRecovers(t *testing.T) {
	// robfig/cron panics on a time zone with no schedule after it; the error must come back
	// instead, and the API server live on.
	for _, s := range []string{"TZ=", "CRON_TZ=UTC", "TZ=UTC"} {
		if _, err := ParseSchedule(s); err == nil || !strings.HasPrefix(err.Error(), "invalid schedule format: ") {
			t.Errorf("ParseSchedule(%q) = %v, want the recovered panic", s, err)
		}
	}
	if errs := Strategy.Validate(context.Background(), newCronJob(func(c *batchv1.CronJob) { c.Spec.Schedule = "TZ=UTC" })); len(errs) == 0 {
		t.Error("TZ=UTC accepted")
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c := newCronJob(func(c *batchv1.CronJob) { c.Spec.TimeZone = ptr.To("UTC") })
	c.CreationTimestamp = metav1.NewTime(now.Add(-2 * time.Hour))
	c.Status = batchv1.CronJobStatus{Active: []corev1.ObjectReference{{Name: "a"}}, LastScheduleTime: &metav1.Time{Time: now.Add(-30 * time.Second)}}
	never := newCronJob(func(c *batchv1.CronJob) { c.Name = "never" })
	never.CreationTimestamp = metav1.NewTime(now.Add(-time.Minute))
	never.Spec.Suspend = nil
	list := &batchv1.CronJobList{Items: []batchv1.CronJob{*c, *never}}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Schedule", "Timezone", "Suspend", "Active", "Last Schedule", "Age", "Containers", "Images", "Selector"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v", names)
	}
	want := [][]any{
		{"hello", "*/1 * * * *", "UTC", "False", int64(1), "30s", "120m", "hello", "busybox", "<none>"},
		{"never", "*/1 * * * *", "<none>", "<unset>", int64(0), "<none>", "60s", "hello", "busybox", "<none>"},
	}
	for i := range want {
		if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, want[i]) {
			t.Errorf("row %d: %v, want %v", i, got, want[i])
		}
	}
}
