package cronjob

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The schedule arithmetic, pure: which start time is due, how many were missed, when to look
// again, and the Job a start time makes.

// nextScheduleDelta pads each requeue past the start time, for clock skew between this
// process and the API server.
const nextScheduleDelta = 100 * time.Millisecond

// tooManyMissed is upstream's bound: past 100 missed start times the controller warns
// rather than reckon them all (a clock decades off would cost it all its CPU).
const tooManyMissed = 100

// missed tells how many start times went by unstarted.
type missed int

const (
	noneMissed missed = iota
	fewMissed
	manyMissed
)

func (m missed) String() string {
	switch m {
	case noneMissed:
		return "none"
	case fewMissed:
		return "few"
	case manyMissed:
		return "many"
	}
	return fmt.Sprintf("unknown(%d)", int(m))
}

// formatSchedule is the schedule the cron parser reads: spec.timeZone as a "TZ=" prefix
// when it names a known zone. usesTZ reports a schedule that sets CRON_TZ or TZ itself, which
// upstream warns is not supported.
func formatSchedule(cj *batchv1.CronJob) (schedule string, usesTZ bool) {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		return cj.Spec.Schedule, true
	}
	if cj.Spec.TimeZone != nil {
		if _, err := time.LoadLocation(*cj.Spec.TimeZone); err != nil {
			return cj.Spec.Schedule, false
		}
		return fmt.Sprintf("TZ=%s %s", *cj.Spec.TimeZone, cj.Spec.Schedule), false
	}
	return cj.Spec.Schedule, false
}

// parseSchedule parses a standard cron schedule; the parser panics on some malformed input
// ("TZ=0"), which comes back as an error.
func parseSchedule(schedule string) (sched cron.Schedule, err error) {
	defer func() {
		if r := recover(); r != nil {
			sched, err = nil, fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	return cron.ParseStandard(schedule)
}

// mostRecentScheduleTime returns the time the schedule is reckoned from (the last schedule
// time, else the creation time, else — with withDeadline — now less startingDeadlineSeconds
// if later), the most recent start time at or before now (nil if none since), and how many
// were missed. It fails for a schedule that parses but never fires twice a second apart
// ("59 23 31 2 *").
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule, withDeadline bool) (time.Time, *time.Time, missed, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if withDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		// Nothing before this is started any more.
		if deadline := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	t1 := schedule.Next(earliest)
	t2 := schedule.Next(t1)
	if now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	if now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	between := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if between < 1 {
		return earliest, nil, noneMissed, errors.New("time difference between two schedules is less than 1 second")
	}
	// A rough count: how many intervals of t2-t1 fit between t1 and now.
	count := int64(now.Sub(t1).Seconds())/between + 1
	// Start one interval before the estimate and let the schedule find the exact times
	// (irregular schedules like "30 6-16/4 * * 1-5", and @every).
	var mostRecent time.Time
	for t := schedule.Next(t1.Add(time.Duration((count-2)*between) * time.Second)); !t.After(now); t = schedule.Next(t) {
		mostRecent = t
	}
	m := fewMissed
	if count > tooManyMissed {
		m = manyMissed
	}
	if mostRecent.IsZero() {
		return earliest, nil, m, nil
	}
	return earliest, &mostRecent, m, nil
}

// nextScheduleTime is the start time due now (the most recent unmet one, within the
// starting deadline), or nil, and how many were missed.
func nextScheduleTime(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule) (*time.Time, missed, error) {
	_, mostRecent, m, err := mostRecentScheduleTime(cj, now, schedule, true)
	if mostRecent == nil || mostRecent.After(now) {
		return nil, m, err
	}
	return mostRecent, m, err
}

// nextScheduleTimeDuration is how long until the next start time after the last one (or
// after now, if some were missed), plus nextScheduleDelta.
func nextScheduleTimeDuration(cj *batchv1.CronJob, now time.Time, schedule cron.Schedule) time.Duration {
	earliest, mostRecent, m, err := mostRecentScheduleTime(cj, now, schedule, false)
	switch {
	case err != nil:
		mostRecent = &now // still look again, from now
	case mostRecent == nil && m == noneMissed:
		mostRecent = &earliest
	case mostRecent == nil:
		mostRecent = &now
	}
	return schedule.Next(*mostRecent).Add(nextScheduleDelta).Sub(now)
}

// jobName is "<cronjob>-<scheduled time in minutes since the epoch>": one name per start
// time, so that a start is never created twice.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate is the Job of the start time scheduled: the template's labels,
// annotations and spec, the batch.kubernetes.io/cronjob-scheduled-timestamp annotation
// (RFC 3339, in spec.timeZone), and cj as its controller.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	loc, err := time.LoadLocation(ptr.Deref(cj.Spec.TimeZone, ""))
	if err != nil {
		return nil, err
	}
	lbls := make(map[string]string, len(cj.Spec.JobTemplate.Labels))
	for k, v := range cj.Spec.JobTemplate.Labels {
		lbls[k] = v
	}
	annotations := make(map[string]string, len(cj.Spec.JobTemplate.Annotations)+1)
	for k, v := range cj.Spec.JobTemplate.Annotations {
		annotations[k] = v
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:              jobName(cj, scheduled),
			Namespace:         cj.Namespace,
			Labels:            lbls,
			Annotations:       annotations,
			CreationTimestamp: metav1.NewTime(scheduled),
			OwnerReferences:   []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}

// jobReference is the entry of status.active for job.
func jobReference(job *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(),
		Namespace: job.Namespace, Name: job.Name, UID: job.UID, ResourceVersion: job.ResourceVersion,
	}
}

func inActiveList(cj *batchv1.CronJob, uid types.UID) bool {
	for _, j := range cj.Status.Active {
		if j.UID == uid {
			return true
		}
	}
	return false
}

func inActiveListByName(cj *batchv1.CronJob, namespace, name string) bool {
	for _, j := range cj.Status.Active {
		if j.Name == name && j.Namespace == namespace {
			return true
		}
	}
	return false
}

func deleteFromActiveList(cj *batchv1.CronJob, uid types.UID) {
	active := []corev1.ObjectReference{}
	for _, j := range cj.Status.Active {
		if j.UID != uid {
			active = append(active, j)
		}
	}
	cj.Status.Active = active
}

// byStartTime orders Jobs oldest first (not started last), by name when tied.
func byStartTime(a, b *batchv1.Job) int {
	switch {
	case a.Status.StartTime == nil && b.Status.StartTime != nil:
		return 1
	case a.Status.StartTime != nil && b.Status.StartTime == nil:
		return -1
	case a.Status.StartTime.Equal(b.Status.StartTime):
		return strings.Compare(a.Name, b.Name)
	case a.Status.StartTime.Before(b.Status.StartTime):
		return -1
	}
	return 1
}
