package cronjob

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const ns = "ns"

// created is the CronJobs' creation time; "*/5 * * * *" first fires at 10:05.
var created = time.Date(2026, 3, 1, 10, 1, 0, 0, time.UTC)

func newCronJob(policy batchv1.ConcurrencyPolicy, opts ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cj", UID: "cj-uid", ResourceVersion: "1", CreationTimestamp: metav1.NewTime(created)},
		Spec: batchv1.CronJobSpec{
			Schedule:          "*/5 * * * *",
			ConcurrencyPolicy: policy,
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}},
		},
	}
	for _, o := range opts {
		o(cj)
	}
	return cj
}

type harness struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	clock    *testingclock.FakeClock
	c        *Controller
	recorder *events.FakeRecorder
	jobs     cache.Indexer
	cronJobs cache.Indexer
	seq      int
}

func newHarness(t *testing.T, now time.Time, objs ...runtime.Object) *harness {
	h := &harness{t: t, ctx: context.Background(), clock: testingclock.NewFakeClock(now), client: fake.NewClientset(objs...)}
	h.client.PrependReactor("create", "jobs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		job := a.(clienttesting.CreateAction).GetObject().(*batchv1.Job)
		h.seq++
		job.UID = types.UID("job-uid-" + job.Name)
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(h.client, 0)
	h.c = newController(h.client, factory.Batch().V1().Jobs(), factory.Batch().V1().CronJobs(), h.clock)
	h.recorder = events.NewFakeRecorder(100)
	h.c.Recorder = h.recorder
	h.jobs = factory.Batch().V1().Jobs().Informer().GetIndexer()
	h.cronJobs = factory.Batch().V1().CronJobs().Informer().GetIndexer()
	return h
}

// refresh makes the caches what the clientset holds.
func (h *harness) refresh() {
	h.t.Helper()
	jobs, err := h.client.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var items []any
	for i := range jobs.Items {
		items = append(items, &jobs.Items[i])
	}
	if err := h.jobs.Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
	cjs, err := h.client.BatchV1().CronJobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	items = nil
	for i := range cjs.Items {
		items = append(items, &cjs.Items[i])
	}
	if err := h.cronJobs.Replace(items, ""); err != nil {
		h.t.Fatal(err)
	}
}

// syncAt moves the clock to at and syncs the CronJob.
func (h *harness) syncAt(at string) {
	h.t.Helper()
	tm, err := time.Parse(time.RFC3339, at)
	if err != nil {
		h.t.Fatal(err)
	}
	h.clock.SetTime(tm)
	h.refresh()
	if err := h.c.sync(h.ctx, ns+"/cj"); err != nil {
		h.t.Fatalf("sync at %s: %v", at, err)
	}
}

func (h *harness) cronJob() *batchv1.CronJob {
	cj, err := h.client.BatchV1().CronJobs(ns).Get(h.ctx, "cj", metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return cj
}

func (h *harness) jobNames() []string {
	jobs, err := h.client.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	var names []string
	for _, j := range jobs.Items {
		names = append(names, j.Name)
	}
	return names
}

// finishJob gives a Job a Complete (or Failed) condition at the clock's time.
func (h *harness) finishJob(name string, t batchv1.JobConditionType) {
	h.t.Helper()
	job, err := h.client.BatchV1().Jobs(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	now := metav1.NewTime(h.clock.Now())
	job.Status.StartTime = &now
	job.Status.Conditions = append(job.Status.Conditions, batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	if t == batchv1.JobComplete {
		job.Status.CompletionTime = &now
	}
	if _, err := h.client.BatchV1().Jobs(ns).UpdateStatus(h.ctx, job, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func activeNames(cj *batchv1.CronJob) string {
	var names []string
	for _, a := range cj.Status.Active {
		names = append(names, a.Name)
	}
	return strings.Join(names, ",")
}

// The Job names of the starts at 10:05, 10:10 and 10:15.
const (
	job1005 = "cj-29539325"
	job1010 = "cj-29539330"
	job1015 = "cj-29539335"
)

func TestAllowStartsOnSchedule(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent))
	h.syncAt("2026-03-01T10:04:00Z")
	if names := h.jobNames(); len(names) != 0 {
		t.Fatalf("jobs before the first start: %v", names)
	}
	h.syncAt("2026-03-01T10:05:01Z")
	cj := h.cronJob()
	if names := h.jobNames(); len(names) != 1 || names[0] != job1005 {
		t.Fatalf("jobs = %v, want [%s]", names, job1005)
	}
	if activeNames(cj) != job1005 || !cj.Status.LastScheduleTime.Time.Equal(time.Date(2026, 3, 1, 10, 5, 0, 0, time.UTC)) {
		t.Errorf("status: active %s lastScheduleTime %v", activeNames(cj), cj.Status.LastScheduleTime)
	}
	job, _ := h.client.BatchV1().Jobs(ns).Get(h.ctx, job1005, metav1.GetOptions{})
	if job.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != "2026-03-01T10:05:00Z" {
		t.Errorf("annotations = %v", job.Annotations)
	}
	if ev := h.events(); len(ev) != 1 || ev[0] != "Normal SuccessfulCreate Created job "+job1005 {
		t.Errorf("events = %q", ev)
	}

	// Allow: the next start runs beside the first.
	h.syncAt("2026-03-01T10:10:00Z")
	if got := activeNames(h.cronJob()); got != job1005+","+job1010 {
		t.Errorf("active = %s", got)
	}
	// The first finishes: it leaves status.active and sets lastSuccessfulTime.
	h.finishJob(job1005, batchv1.JobComplete)
	completed := h.clock.Now()
	h.syncAt("2026-03-01T10:11:00Z")
	cj = h.cronJob()
	if activeNames(cj) != job1010 || cj.Status.LastSuccessfulTime == nil || !cj.Status.LastSuccessfulTime.Time.Equal(completed) {
		t.Errorf("status: active %s lastSuccessfulTime %v", activeNames(cj), cj.Status.LastSuccessfulTime)
	}
	if ev := h.events(); len(ev) != 2 || ev[1] != "Normal SawCompletedJob Saw completed job: "+job1005+", condition: Complete" {
		t.Errorf("events = %q", ev)
	}
}

func TestRequeueAtNextStart(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent))
	h.clock.SetTime(time.Date(2026, 3, 1, 10, 5, 30, 0, time.UTC))
	h.refresh()
	cj := h.cronJob()
	after, changed, err := h.c.syncCronJob(h.ctx, cj, nil)
	if err != nil || !changed {
		t.Fatalf("changed %v, err %v", changed, err)
	}
	if want := 4*time.Minute + 30*time.Second + nextScheduleDelta; after == nil || *after != want {
		t.Errorf("requeue after %v, want %v", after, want)
	}
}

func TestForbidSkipsWhileActive(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.ForbidConcurrent))
	h.syncAt("2026-03-01T10:05:00Z")
	h.events()
	h.syncAt("2026-03-01T10:10:00Z")
	if names := h.jobNames(); len(names) != 1 {
		t.Errorf("jobs = %v, want only the first", names)
	}
	if ev := h.events(); len(ev) != 1 || ev[0] != "Normal JobAlreadyActive Not starting job because prior execution is running and concurrency policy is Forbid" {
		t.Errorf("events = %q", ev)
	}
	// Once the first finished, the skipped start (still due: no deadline) runs.
	h.finishJob(job1005, batchv1.JobComplete)
	h.syncAt("2026-03-01T10:12:00Z")
	if got := activeNames(h.cronJob()); got != job1010 {
		t.Errorf("active = %s, want %s", got, job1010)
	}
}

func TestReplaceDeletesActive(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.ReplaceConcurrent))
	h.syncAt("2026-03-01T10:05:00Z")
	h.events()
	h.syncAt("2026-03-01T10:10:00Z")
	if names := h.jobNames(); len(names) != 1 || names[0] != job1010 {
		t.Errorf("jobs = %v, want [%s]", names, job1010)
	}
	if got := activeNames(h.cronJob()); got != job1010 {
		t.Errorf("active = %s", got)
	}
	ev := h.events()
	if len(ev) != 2 || ev[0] != "Normal SuccessfulDelete Deleted job "+job1005 || ev[1] != "Normal SuccessfulCreate Created job "+job1010 {
		t.Errorf("events = %q", ev)
	}
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok && d.GetResource().Resource == "jobs" {
			if p := d.GetDeleteOptions().PropagationPolicy; p == nil || *p != metav1.DeletePropagationBackground {
				t.Errorf("delete propagation = %v", p)
			}
		}
	}
}

func TestStartingDeadlineMissed(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent, func(cj *batchv1.CronJob) {
		cj.Spec.StartingDeadlineSeconds = ptr.To[int64](30)
	}))
	h.syncAt("2026-03-01T10:05:31Z")
	if names := h.jobNames(); len(names) != 0 {
		t.Errorf("jobs = %v, want none", names)
	}
	h.syncAt("2026-03-01T10:10:10Z")
	if names := h.jobNames(); len(names) != 1 || names[0] != job1010 {
		t.Errorf("jobs = %v, want [%s]", names, job1010)
	}
}

func TestTooManyMissedAndSuspend(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "* * * * *" }))
	h.syncAt("2026-03-01T14:00:30Z")
	ev := h.events()
	if len(ev) != 2 || ev[0] != "Warning TooManyMissedTimes too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew" {
		t.Errorf("events = %q", ev)
	}
	if names := h.jobNames(); len(names) != 1 || names[0] != "cj-29539560" { // only the latest start
		t.Errorf("jobs = %v", names)
	}

	cj := h.cronJob()
	cj.Spec.Suspend = ptr.To(true)
	if _, err := h.client.BatchV1().CronJobs(ns).Update(h.ctx, cj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.syncAt("2026-03-01T14:05:00Z")
	if names := h.jobNames(); len(names) != 1 {
		t.Errorf("a suspended CronJob started jobs: %v", names)
	}
}

func TestHistoryLimits(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent, func(cj *batchv1.CronJob) {
		cj.Spec.SuccessfulJobsHistoryLimit = ptr.To[int32](1)
		cj.Spec.FailedJobsHistoryLimit = ptr.To[int32](0)
	}))
	h.syncAt("2026-03-01T10:05:00Z")
	h.finishJob(job1005, batchv1.JobComplete)
	h.syncAt("2026-03-01T10:10:00Z")
	h.finishJob(job1010, batchv1.JobComplete)
	h.syncAt("2026-03-01T10:15:00Z")
	h.finishJob(job1015, batchv1.JobFailed)
	h.syncAt("2026-03-01T10:16:00Z")
	if names := strings.Join(h.jobNames(), ","); names != job1010 {
		t.Errorf("jobs = %s, want the newest success only", names)
	}
	if got := activeNames(h.cronJob()); got != "" {
		t.Errorf("active = %s", got)
	}
}

func TestUnknownTimeZoneAndBadSchedule(t *testing.T) {
	h := newHarness(t, created, newCronJob(batchv1.AllowConcurrent, func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Mars/Olympus") }))
	h.syncAt("2026-03-01T10:05:00Z")
	if ev := h.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], `Warning UnknownTimeZone invalid timeZone: "Mars/Olympus": `) {
		t.Errorf("events = %q", ev)
	}
	h2 := newHarness(t, created, newCronJob(batchv1.AllowConcurrent, func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=0" }))
	h2.syncAt("2026-03-01T10:05:00Z")
	ev := h2.events()
	if len(ev) != 2 || !strings.HasPrefix(ev[1], `Warning UnparseableSchedule unparseable schedule: "TZ=0" : `) {
		t.Errorf("events = %q", ev)
	}
	if len(h.jobNames())+len(h2.jobNames()) != 0 {
		t.Error("jobs were created")
	}
}

func TestUnexpectedAndMissingJobs(t *testing.T) {
	cj := newCronJob(batchv1.AllowConcurrent)
	cj.Status.Active = []corev1.ObjectReference{{Kind: "Job", Namespace: ns, Name: "gone", UID: "gone-uid"}}
	stray := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "stray", UID: "stray-uid",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, controllerKind)}}}
	h := newHarness(t, created, cj, stray)
	h.syncAt("2026-03-01T10:02:00Z")
	ev := h.events()
	if len(ev) != 2 || ev[0] != "Warning UnexpectedJob Saw a job that the controller did not create or forgot: stray" ||
		ev[1] != "Normal MissingJob Active job went missing: gone" {
		t.Errorf("events = %q", ev)
	}
	if got := activeNames(h.cronJob()); got != "" {
		t.Errorf("active = %s", got)
	}
}
