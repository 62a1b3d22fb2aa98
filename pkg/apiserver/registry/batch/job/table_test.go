package job

import (
	"context"
	"reflect"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestTable(t *testing.T) {
	at := func(d time.Duration) *metav1.Time { tm := metav1.NewTime(tableNow.Add(-d)); return &tm }
	base := func(mutate func(*batchv1.Job)) batchv1.Job {
		j := newJob()
		j.CreationTimestamp = *at(time.Hour)
		mutate(j) // after create, which clears status
		return *j
	}
	cond := func(t batchv1.JobConditionType) []batchv1.JobCondition {
		return []batchv1.JobCondition{{Type: t, Status: corev1.ConditionTrue}}
	}
	sel := "batch.kubernetes.io/controller-uid=uid-1"
	tests := []struct {
		name string
		job  batchv1.Job
		want []any
	}{
		{"running", base(func(j *batchv1.Job) {}), []any{"pi", "Running", "0/1", "", "60m", "pi", "perl", sel}},
		{"complete", base(func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{Succeeded: 1, StartTime: at(50 * time.Minute), CompletionTime: at(48 * time.Minute),
				Conditions: append(cond(batchv1.JobSuccessCriteriaMet), cond(batchv1.JobComplete)...)}
		}), []any{"pi", "Complete", "1/1", "2m", "60m", "pi", "perl", sel}},
		{"failed, started 5m ago", base(func(j *batchv1.Job) {
			j.Status = batchv1.JobStatus{StartTime: at(5 * time.Minute), Conditions: append(cond(batchv1.JobFailureTarget), cond(batchv1.JobFailed)...)}
		}), []any{"pi", "Failed", "0/1", "5m", "60m", "pi", "perl", sel}},
		{"suspended", base(func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobSuspended) }), []any{"pi", "Suspended", "0/1", "", "60m", "pi", "perl", sel}},
		{"failure target", base(func(j *batchv1.Job) { j.Status.Conditions = cond(batchv1.JobFailureTarget) }), []any{"pi", "FailureTarget", "0/1", "", "60m", "pi", "perl", sel}},
		{"terminating", base(func(j *batchv1.Job) { j.DeletionTimestamp = at(0) }), []any{"pi", "Terminating", "0/1", "", "60m", "pi", "perl", sel}},
		{"work queue", base(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3); j.Spec.Completions = nil }),
			[]any{"pi", "Running", "0/1 of 3", "", "60m", "pi", "perl", sel}},
	}
	list := &batchv1.JobList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.job)
	}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow)).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Status", "Completions", "Duration", "Age", "Containers", "Images", "Selector"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	if tbl.ResourceVersion != "8" || len(tbl.Rows) != len(tests) {
		t.Fatalf("%d rows at %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tt := range tests {
		if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: cells %v, want %v", tt.name, got, tt.want)
		}
	}
}
