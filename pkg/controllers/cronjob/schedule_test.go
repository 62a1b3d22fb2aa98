package cronjob

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func TestMostRecentScheduleTime(t *testing.T) {
	cases := []struct {
		name        string
		schedule    string
		timeZone    *string
		created     string
		last        string // lastScheduleTime, "" for none
		deadline    *int64
		now         string
		want        string // "" for nil
		wantMissed  missed
		wantErr     bool
		withoutDead bool
	}{
		{name: "not yet", schedule: "0 * * * *", created: "2026-03-01T10:10:00Z", now: "2026-03-01T10:59:59Z"},
		{name: "exactly due", schedule: "0 * * * *", created: "2026-03-01T10:10:00Z", now: "2026-03-01T11:00:00Z", want: "2026-03-01T11:00:00Z"},
		{name: "due, from last schedule", schedule: "*/5 * * * *", created: "2026-03-01T00:00:00Z", last: "2026-03-01T10:00:00Z",
			now: "2026-03-01T10:07:00Z", want: "2026-03-01T10:05:00Z"},
		{name: "a few missed", schedule: "0 * * * *", created: "2026-03-01T10:10:00Z", now: "2026-03-01T15:30:00Z",
			want: "2026-03-01T15:00:00Z", wantMissed: fewMissed},
		{name: "many missed", schedule: "* * * * *", created: "2026-03-01T10:00:00Z", now: "2026-03-01T12:00:30Z",
			want: "2026-03-01T12:00:00Z", wantMissed: manyMissed},
		{name: "starting deadline bounds the look back", schedule: "* * * * *", created: "2026-03-01T10:00:00Z",
			deadline: ptr.To[int64](200), now: "2026-03-01T12:00:30Z", want: "2026-03-01T12:00:00Z", wantMissed: fewMissed},
		{name: "irregular schedule", schedule: "30 6-16/4 * * 1-5", created: "2026-03-02T00:00:00Z", now: "2026-03-03T12:00:00Z",
			want: "2026-03-03T10:30:00Z", wantMissed: fewMissed},
		{name: "time zone", schedule: "0 9 * * *", timeZone: ptr.To("America/New_York"), created: "2026-03-01T00:00:00Z",
			now: "2026-03-01T14:00:00Z", want: "2026-03-01T14:00:00Z"},
		{name: "time zone, not yet", schedule: "0 9 * * *", timeZone: ptr.To("America/New_York"), created: "2026-03-01T00:00:00Z",
			now: "2026-03-01T13:59:00Z"},
		{name: "never fires twice", schedule: "59 23 31 2 *", created: "2026-03-01T00:00:00Z", now: "2030-03-01T00:00:00Z", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cj := &batchv1.CronJob{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(mustTime(t, tc.created))},
				Spec:       batchv1.CronJobSpec{Schedule: tc.schedule, TimeZone: tc.timeZone, StartingDeadlineSeconds: tc.deadline},
			}
			if tc.last != "" {
				cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(mustTime(t, tc.last)))
			}
			text, _ := formatSchedule(cj)
			sched, err := parseSchedule(text)
			if err != nil {
				t.Fatal(err)
			}
			got, m, err := nextScheduleTime(cj, mustTime(t, tc.now), sched)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			gotText := ""
			if got != nil {
				gotText = got.UTC().Format(time.RFC3339)
			}
			if gotText != tc.want || m != tc.wantMissed {
				t.Errorf("nextScheduleTime = %q, %v; want %q, %v", gotText, m, tc.want, tc.wantMissed)
			}
		})
	}
}

func TestNextScheduleTimeDuration(t *testing.T) {
	sched, _ := parseSchedule("*/10 * * * *")
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(mustTime(t, "2026-03-01T10:01:00Z"))}}
	if got, want := nextScheduleTimeDuration(cj, mustTime(t, "2026-03-01T10:05:00Z"), sched), 5*time.Minute+nextScheduleDelta; got != want {
		t.Errorf("before the first start: %v, want %v", got, want)
	}
	cj.Status.LastScheduleTime = ptr.To(metav1.NewTime(mustTime(t, "2026-03-01T10:10:00Z")))
	if got, want := nextScheduleTimeDuration(cj, mustTime(t, "2026-03-01T10:10:01Z"), sched), 9*time.Minute+59*time.Second+nextScheduleDelta; got != want {
		t.Errorf("after a start: %v, want %v", got, want)
	}
	// Starts missed: the next one after now.
	if got, want := nextScheduleTimeDuration(cj, mustTime(t, "2026-03-01T11:15:00Z"), sched), 5*time.Minute+nextScheduleDelta; got != want {
		t.Errorf("after missed starts: %v, want %v", got, want)
	}
}

func TestParseScheduleRecoversPanics(t *testing.T) {
	for _, s := range []string{"TZ=0", "not a schedule", "* * * *"} {
		if _, err := parseSchedule(s); err == nil {
			t.Errorf("parseSchedule(%q) succeeded", s)
		}
	}
	cj := &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "CRON_TZ=UTC * * * * *"}}
	if _, usesTZ := formatSchedule(cj); !usesTZ {
		t.Error("CRON_TZ not reported")
	}
	cj = &batchv1.CronJob{Spec: batchv1.CronJobSpec{Schedule: "* * * * *", TimeZone: ptr.To("Europe/Berlin")}}
	if s, _ := formatSchedule(cj); s != "TZ=Europe/Berlin * * * * *" {
		t.Errorf("formatSchedule = %q", s)
	}
}

func TestJobFromTemplate(t *testing.T) {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hello", UID: "cj-uid"},
		Spec: batchv1.CronJobSpec{
			TimeZone: ptr.To("Asia/Tokyo"),
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"}},
				Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](3)},
			},
		},
	}
	scheduled := mustTime(t, "2026-03-01T12:00:00Z")
	job, err := jobFromTemplate(cj, scheduled)
	if err != nil {
		t.Fatal(err)
	}
	if job.Name != "hello-29539440" {
		t.Errorf("name = %q", job.Name)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-01T21:00:00+09:00" {
		t.Errorf("scheduled timestamp = %q", got)
	}
	if job.Annotations["c"] != "d" || job.Labels["a"] != "b" || *job.Spec.Parallelism != 3 {
		t.Errorf("template not copied: %+v", job)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.UID != "cj-uid" || !*ref.BlockOwnerDeletion {
		t.Errorf("controller ref = %+v", ref)
	}
	// The template is not aliased.
	job.Labels["a"] = "x"
	if cj.Spec.JobTemplate.Labels["a"] != "b" {
		t.Error("the template's labels were changed")
	}
}
