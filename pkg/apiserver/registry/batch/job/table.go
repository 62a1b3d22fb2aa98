package job

import (
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get jobs`, as upstream's printJob.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*batchv1.Job] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}, func(j *batchv1.Job, now time.Time) metav1.TableRow {
		names, images := ContainerCells(j.Spec.Template.Spec.Containers)
		return metav1.TableRow{Cells: []any{j.Name, statusCell(j), completionsCell(j), durationCell(j, now),
			table.Age(j, now), names, images, metav1.FormatLabelSelector(j.Spec.Selector)}}
	})
}

// statusCell is the Job's state in one word, the first that holds of upstream's list.
func statusCell(j *batchv1.Job) string {
	switch c := j.Status.Conditions; {
	case firstConditionTrue(c, batchv1.JobComplete):
		return "Complete"
	case firstConditionTrue(c, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case firstConditionTrue(c, batchv1.JobSuspended):
		return "Suspended"
	case firstConditionTrue(c, batchv1.JobFailureTarget):
		return "FailureTarget"
	case firstConditionTrue(c, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// firstConditionTrue reads the first condition of type t, as upstream's printer does.
func firstConditionTrue(list []batchv1.JobCondition, t batchv1.JobConditionType) bool {
	for _, c := range list {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// completionsCell is succeeded/completions; a Job without completions ends at its first
// success, shown as "/1", with its parallelism when it has more than one pod.
func completionsCell(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	if j.Spec.Parallelism != nil && *j.Spec.Parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *j.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

// durationCell is the time from start to completion, or to now while the Job runs.
func durationCell(j *batchv1.Job, now time.Time) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}

// ContainerCells are the CONTAINERS and IMAGES cells of a template's containers.
func ContainerCells(containers []corev1.Container) (names, images string) {
	n, i := make([]string, 0, len(containers)), make([]string, 0, len(containers))
	for _, c := range containers {
		n, i = append(n, c.Name), append(i, c.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}
