package job

import (
	"errors"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// checkFinalizersGone fails unless no pod holds the tracking finalizer.
func checkFinalizersGone(t *testing.T, h *harness) {
	t.Helper()
	for _, p := range h.allPods() {
		if hasTrackingFinalizer(p) {
			t.Errorf("pod %s still has the tracking finalizer", p.Name)
		}
	}
}

func TestCompletionsWithParallelism(t *testing.T) {
	h := newHarness(t, newJob("pi", 2, 5))
	created := 0
	for round := 0; round < 10; round++ {
		h.mustSync("pi")
		running := h.running()
		if len(running) > 2 {
			t.Fatalf("round %d: %d pods running, parallelism is 2", round, len(running))
		}
		if job := h.job("pi"); IsFinished(job) {
			break
		}
		for _, p := range running {
			if !hasTrackingFinalizer(p) {
				t.Errorf("pod %s was created without the tracking finalizer", p.Name)
			}
			if !strings.HasPrefix(p.Name, "pi-") {
				t.Errorf("pod name %q does not start with pi-", p.Name)
			}
			if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != "job-uid-pi" || ref.Kind != "Job" {
				t.Errorf("pod %s controller ref = %v", p.Name, ref)
			}
			created++
			h.finish(p, corev1.PodSucceeded, 0)
		}
		h.clock.Step(time.Second)
	}
	job := h.job("pi")
	if created != 5 {
		t.Errorf("created %d pods, want 5", created)
	}
	if got := conditionTypes(job); got != "SuccessCriteriaMet=True/CompletionsReached,Complete=True/CompletionsReached" {
		t.Errorf("conditions = %s", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobComplete); c.Message != "Reached expected number of succeeded pods" {
		t.Errorf("Complete message = %q", c.Message)
	}
	if job.Status.Succeeded != 5 || job.Status.Failed != 0 || job.Status.Active != 0 {
		t.Errorf("status counts = succeeded %d failed %d active %d", job.Status.Succeeded, job.Status.Failed, job.Status.Active)
	}
	if job.Status.StartTime == nil || job.Status.CompletionTime == nil {
		t.Errorf("startTime %v, completionTime %v", job.Status.StartTime, job.Status.CompletionTime)
	}
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Succeeded)+len(u.Failed) != 0 {
		t.Errorf("uncountedTerminatedPods = %+v", u)
	}
	checkFinalizersGone(t, h)
	events := h.events()
	if !hasEvent(events, "Normal Completed Job completed") {
		t.Errorf("no Completed event in %q", events)
	}
	if n := countPrefix(events, "Normal SuccessfulCreate Created pod: pi-"); n != 5 {
		t.Errorf("%d SuccessfulCreate events, want 5: %q", n, events)
	}

	// A finished Job is left alone.
	before := len(h.client.Actions())
	h.mustSync("pi")
	for _, a := range h.client.Actions()[before:] {
		if a.GetVerb() != "list" { // the harness's
			t.Errorf("a finished Job's sync called %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func TestIndexedJob(t *testing.T) {
	h := newHarness(t, newJob("idx", 3, 3, indexedMode))
	h.mustSync("idx")
	pods := h.running()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	byIndex := map[int]*corev1.Pod{}
	for _, p := range pods {
		ix := completionIndex(p)
		byIndex[ix] = p
		want := "idx-" + itoa(ix) + "-"
		if !strings.HasPrefix(p.Name, want) {
			t.Errorf("pod %s: name does not start with %s", p.Name, want)
		}
		if p.Labels[batchv1.JobCompletionIndexAnnotation] != itoa(ix) {
			t.Errorf("pod %s: label %q", p.Name, p.Labels[batchv1.JobCompletionIndexAnnotation])
		}
		if p.Spec.Hostname != "idx-"+itoa(ix) {
			t.Errorf("pod %s: hostname %q", p.Name, p.Spec.Hostname)
		}
		env := p.Spec.Containers[0].Env
		if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil ||
			env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
			t.Errorf("pod %s: env %+v", p.Name, env)
		}
	}
	for ix := 0; ix < 3; ix++ {
		if byIndex[ix] == nil {
			t.Fatalf("no pod of index %d", ix)
		}
	}

	h.finish(byIndex[1], corev1.PodSucceeded, 0)
	h.mustSync("idx")
	if got := h.job("idx").Status.CompletedIndexes; got != "1" {
		t.Errorf("completedIndexes = %q, want 1", got)
	}
	// Index 0 fails: it is re-created (after the back-off) under the same index.
	h.finish(byIndex[0], corev1.PodFailed, 1)
	h.mustSync("idx")
	h.clock.Step(11 * time.Second)
	h.mustSync("idx")
	var again *corev1.Pod
	for _, p := range h.running() {
		if completionIndex(p) == 0 {
			again = p
		}
	}
	if again == nil {
		t.Fatalf("index 0 was not re-created; running %v", h.running())
	}
	h.finish(again, corev1.PodSucceeded, 0)
	h.finish(byIndex[2], corev1.PodSucceeded, 0)
	h.mustSync("idx")
	h.mustSync("idx")
	job := h.job("idx")
	if job.Status.CompletedIndexes != "0-2" || job.Status.Succeeded != 3 || job.Status.Failed != 1 {
		t.Errorf("status: completedIndexes %q succeeded %d failed %d", job.Status.CompletedIndexes, job.Status.Succeeded, job.Status.Failed)
	}
	if !IsFinished(job) || FinishedCondition(job) != batchv1.JobComplete {
		t.Errorf("conditions = %s", conditionTypes(job))
	}
	checkFinalizersGone(t, h)
}

func TestBackoffLimitExceeded(t *testing.T) {
	h := newHarness(t, newJob("fail", 1, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }))
	h.mustSync("fail")
	pods := h.running()
	if len(pods) != 1 {
		t.Fatalf("%d pods, want 1", len(pods))
	}
	h.finish(pods[0], corev1.PodFailed, 1)
	h.mustSync("fail")
	if job := h.job("fail"); job.Status.Failed != 1 || IsFinished(job) {
		t.Fatalf("after one failure: failed %d, conditions %s", job.Status.Failed, conditionTypes(job))
	}
	// The back-off holds the replacement for 10s.
	if n := len(h.running()); n != 0 {
		t.Fatalf("%d pods running during the back-off", n)
	}
	h.clock.Step(5 * time.Second)
	h.mustSync("fail")
	if n := len(h.running()); n != 0 {
		t.Fatalf("%d pods running 5s into a 10s back-off", n)
	}
	h.clock.Step(6 * time.Second)
	h.mustSync("fail")
	pods = h.running()
	if len(pods) != 1 {
		t.Fatalf("%d pods after the back-off, want 1", len(pods))
	}
	h.finish(pods[0], corev1.PodFailed, 1)
	h.mustSync("fail")
	h.mustSync("fail")
	job := h.job("fail")
	if got := conditionTypes(job); got != "FailureTarget=True/BackoffLimitExceeded,Failed=True/BackoffLimitExceeded" {
		t.Errorf("conditions = %s", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobFailed); c.Message != "Job has reached the specified backoff limit" {
		t.Errorf("Failed message = %q", c.Message)
	}
	if job.Status.Failed != 2 || job.Status.Active != 0 || job.Status.CompletionTime != nil {
		t.Errorf("status: failed %d active %d completionTime %v", job.Status.Failed, job.Status.Active, job.Status.CompletionTime)
	}
	checkFinalizersGone(t, h)
	if events := h.events(); !hasEvent(events, "Warning BackoffLimitExceeded Job has reached the specified backoff limit") {
		t.Errorf("no BackoffLimitExceeded event in %q", events)
	}
}

func TestSuspendAndResume(t *testing.T) {
	h := newHarness(t, newJob("s", 2, 4))
	h.mustSync("s")
	if n := len(h.running()); n != 2 {
		t.Fatalf("%d pods, want 2", n)
	}
	job := h.job("s")
	job.Spec.Suspend = ptr.To(true)
	job.Generation++
	h.updateJob(job)
	h.mustSync("s")
	h.mustSync("s")
	job = h.job("s")
	if n := len(h.allPods()); n != 0 {
		t.Errorf("%d pods left in a suspended Job", n)
	}
	c := findCondition(job.Status.Conditions, batchv1.JobSuspended)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason != "JobSuspended" || c.Message != "Job suspended" {
		t.Errorf("Suspended condition = %+v", c)
	}
	if job.Status.Active != 0 || job.Status.StartTime != nil || job.Status.Failed != 0 {
		t.Errorf("suspended status: active %d startTime %v failed %d", job.Status.Active, job.Status.StartTime, job.Status.Failed)
	}
	events := h.events()
	if !hasEvent(events, "Normal Suspended Job suspended") || countPrefix(events, "Normal SuccessfulDelete Deleted pod: ") != 2 {
		t.Errorf("events %q", events)
	}

	job.Spec.Suspend = ptr.To(false)
	job.Generation++
	h.updateJob(job)
	h.clock.Step(time.Minute)
	h.mustSync("s")
	job = h.job("s")
	c = findCondition(job.Status.Conditions, batchv1.JobSuspended)
	if c == nil || c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" || c.Message != "Job resumed" {
		t.Errorf("Suspended condition after resume = %+v", c)
	}
	if job.Status.StartTime == nil || !job.Status.StartTime.Time.Equal(h.clock.Now()) {
		t.Errorf("startTime after resume = %v, want %v", job.Status.StartTime, h.clock.Now())
	}
	if n := len(h.running()); n != 2 {
		t.Errorf("%d pods after resume, want 2", n)
	}
	if events := h.events(); !hasEvent(events, "Normal Resumed Job resumed") {
		t.Errorf("events %q", events)
	}
}

func TestActiveDeadline(t *testing.T) {
	h := newHarness(t, newJob("d", 2, 2, func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](30) }))
	h.mustSync("d")
	if n := len(h.running()); n != 2 {
		t.Fatalf("%d pods, want 2", n)
	}
	h.clock.Step(29 * time.Second)
	h.mustSync("d")
	if job := h.job("d"); IsFinished(job) || len(h.running()) != 2 {
		t.Fatalf("finished before the deadline: %s", conditionTypes(job))
	}
	h.clock.Step(time.Second)
	h.mustSync("d")
	// The pods are being deleted (their finalizers hold them until counted)...
	h.mustSync("d")
	job := h.job("d")
	if got := conditionTypes(job); got != "FailureTarget=True/DeadlineExceeded,Failed=True/DeadlineExceeded" {
		t.Errorf("conditions = %s", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobFailed); c.Message != "Job was active longer than specified deadline" {
		t.Errorf("message = %q", c.Message)
	}
	if job.Status.Failed != 2 || job.Status.Active != 0 {
		t.Errorf("status: failed %d active %d", job.Status.Failed, job.Status.Active)
	}
	if n := len(h.allPods()); n != 0 {
		t.Errorf("%d pods left", n)
	}
	if events := h.events(); !hasEvent(events, "Warning DeadlineExceeded Job was active longer than specified deadline") {
		t.Errorf("events %q", events)
	}
}

func TestPodFailurePolicy(t *testing.T) {
	policy := func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](0)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}}},
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		}}
	}
	h := newHarness(t, newJob("pfp", 1, 1, policy))
	h.mustSync("pfp")
	first := h.running()[0]
	// Exit 3 is ignored: not counted against backoffLimit 0.
	h.finish(first, corev1.PodFailed, 3)
	h.mustSync("pfp")
	if job := h.job("pfp"); job.Status.Failed != 0 || IsFinished(job) {
		t.Fatalf("an ignored failure counted: failed %d, %s", job.Status.Failed, conditionTypes(job))
	}
	h.clock.Step(11 * time.Second)
	h.mustSync("pfp")
	running := h.running()
	if len(running) != 1 {
		t.Fatalf("%d pods after an ignored failure, want 1", len(running))
	}
	h.finish(running[0], corev1.PodFailed, 42)
	h.mustSync("pfp")
	h.mustSync("pfp")
	job := h.job("pfp")
	if got := conditionTypes(job); got != "FailureTarget=True/PodFailurePolicy,Failed=True/PodFailurePolicy" {
		t.Errorf("conditions = %s", got)
	}
	want := "Container main for pod ns/" + running[0].Name + " failed with exit code 42 matching FailJob rule at index 1"
	if c := findCondition(job.Status.Conditions, batchv1.JobFailed); c.Message != want {
		t.Errorf("message = %q, want %q", c.Message, want)
	}
	if job.Status.Failed != 1 {
		t.Errorf("failed = %d, want 1", job.Status.Failed)
	}
}

func TestBackoffLimitPerIndex(t *testing.T) {
	h := newHarness(t, newJob("bpi", 2, 2, indexedMode, func(j *batchv1.Job) {
		j.Spec.BackoffLimit = nil
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
	}))
	h.mustSync("bpi")
	pods := h.running()
	if len(pods) != 2 {
		t.Fatalf("%d pods, want 2", len(pods))
	}
	for _, p := range pods {
		if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "0" {
			t.Errorf("pod %s: failure count annotation %q", p.Name, p.Annotations[batchv1.JobIndexFailureCountAnnotation])
		}
		if completionIndex(p) == 0 {
			h.finish(p, corev1.PodFailed, 1)
		} else {
			h.finish(p, corev1.PodSucceeded, 0)
		}
	}
	h.mustSync("bpi")
	h.mustSync("bpi")
	job := h.job("bpi")
	if ptr.Deref(job.Status.FailedIndexes, "") != "0" || job.Status.CompletedIndexes != "1" {
		t.Errorf("failedIndexes %v completedIndexes %q", job.Status.FailedIndexes, job.Status.CompletedIndexes)
	}
	if got := conditionTypes(job); got != "FailureTarget=True/FailedIndexes,Failed=True/FailedIndexes" {
		t.Errorf("conditions = %s", got)
	}
}

func TestSuccessPolicy(t *testing.T) {
	h := newHarness(t, newJob("sp", 3, 3, indexedMode, func(j *batchv1.Job) {
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
	}))
	h.mustSync("sp")
	for _, p := range h.running() {
		if completionIndex(p) == 0 {
			h.finish(p, corev1.PodSucceeded, 0)
		}
	}
	for range 3 {
		h.mustSync("sp")
	}
	job := h.job("sp")
	if got := conditionTypes(job); got != "SuccessCriteriaMet=True/SuccessPolicy,Complete=True/SuccessPolicy" {
		t.Errorf("conditions = %s", got)
	}
	if c := findCondition(job.Status.Conditions, batchv1.JobComplete); c.Message != "Matched rules at index 0" {
		t.Errorf("message = %q", c.Message)
	}
	if job.Status.Succeeded != 1 || job.Status.CompletedIndexes != "0" || len(h.allPods()) != 1 {
		t.Errorf("succeeded %d completedIndexes %q pods %d", job.Status.Succeeded, job.Status.CompletedIndexes, len(h.allPods()))
	}
}

// TestNoCompletionLost: a finalizer removal that fails leaves the pod uncounted in status, and
// the next sync counts it exactly once.
func TestNoCompletionLost(t *testing.T) {
	h := newHarness(t, newJob("t", 1, 2))
	h.mustSync("t")
	first := h.running()[0]
	h.finish(first, corev1.PodSucceeded, 0)
	h.refresh()
	h.client.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(corev1.Resource("pods"), first.Name, errors.New("test"))
	})
	if err := h.c.syncJob(h.ctx, ns+"/t"); err == nil {
		t.Fatal("sync with failing patches succeeded")
	}
	job := h.job("t")
	if u := job.Status.UncountedTerminatedPods; u == nil || len(u.Succeeded) != 1 || u.Succeeded[0] != first.UID || job.Status.Succeeded != 0 {
		t.Fatalf("after a failed removal: uncounted %+v succeeded %d", job.Status.UncountedTerminatedPods, job.Status.Succeeded)
	}
	h.client.ReactionChain = h.client.ReactionChain[1:]
	h.mustSync("t")
	h.mustSync("t")
	job = h.job("t")
	if u := job.Status.UncountedTerminatedPods; len(u.Succeeded) != 0 || job.Status.Succeeded != 1 {
		t.Errorf("after retry: uncounted %+v succeeded %d", u, job.Status.Succeeded)
	}
}

// TestOrphanFinalizerRemoved: pods that no Job controls (orphaned by the garbage collector,
// or of a deleted Job) lose their tracking finalizer; those of a running Job keep it.
func TestOrphanFinalizerRemoved(t *testing.T) {
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", UID: types.UID("o"),
		Labels: map[string]string{"app": "x"}, Finalizers: []string{batchv1.JobTrackingFinalizer}}}
	h := newHarness(t, orphan, newJob("j", 1, 1))
	h.mustSync("j")
	drainOrphans(t, h)
	for _, p := range h.allPods() {
		if hasTrackingFinalizer(p) != (p.Name != "orphan") {
			t.Errorf("pod %s: tracking finalizer %v", p.Name, hasTrackingFinalizer(p))
		}
	}

	// The Job is deleted (orphaning its pods): its selector's pods are released.
	job := h.job("j")
	if err := h.client.BatchV1().Jobs(ns).Delete(h.ctx, "j", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_ = h.jobs.Delete(job)
	h.c.deleteJob(job)
	drainOrphans(t, h)
	checkFinalizersGone(t, h)
}

// drainOrphans syncs every key of the orphan queue.
func drainOrphans(t *testing.T, h *harness) {
	t.Helper()
	if h.c.orphanQueue.Len() == 0 {
		t.Fatal("the orphan queue is empty")
	}
	for h.c.orphanQueue.Len() > 0 {
		key, _ := h.c.orphanQueue.Get()
		if err := h.c.syncOrphanPods(h.ctx, key); err != nil {
			t.Fatal(err)
		}
		h.c.orphanQueue.Done(key)
	}
	h.refresh()
}

// TestWorkQueueJob: with no completions, the Job completes once one pod succeeded and the
// others have finished, and no pod is started after the first success.
func TestWorkQueueJob(t *testing.T) {
	h := newHarness(t, newJob("wq", 3, 0, func(j *batchv1.Job) { j.Spec.Completions = nil }))
	h.mustSync("wq")
	pods := h.running()
	if len(pods) != 3 {
		t.Fatalf("%d pods, want 3", len(pods))
	}
	h.finish(pods[0], corev1.PodSucceeded, 0)
	h.mustSync("wq")
	if job := h.job("wq"); IsFinished(job) || len(h.running()) != 2 {
		t.Fatalf("after one success: %s, %d running", conditionTypes(job), len(h.running()))
	}
	h.finish(pods[1], corev1.PodSucceeded, 0)
	h.finish(pods[2], corev1.PodSucceeded, 0)
	h.mustSync("wq")
	h.mustSync("wq")
	job := h.job("wq")
	if FinishedCondition(job) != batchv1.JobComplete || job.Status.Succeeded != 3 || len(h.allPods()) != 3 {
		t.Errorf("%s, succeeded %d, %d pods", conditionTypes(job), job.Status.Succeeded, len(h.allPods()))
	}
}

// TestRestartPolicyOnFailure: container restarts of running pods count against backoffLimit.
func TestRestartPolicyOnFailure(t *testing.T) {
	h := newHarness(t, newJob("r", 1, 1, func(j *batchv1.Job) {
		j.Spec.BackoffLimit = ptr.To[int32](2)
		j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	}))
	h.mustSync("r")
	pod := h.running()[0].DeepCopy()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: 2}}
	if _, err := h.client.CoreV1().Pods(ns).UpdateStatus(h.ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.mustSync("r")
	h.mustSync("r")
	job := h.job("r")
	if got := conditionTypes(job); got != "FailureTarget=True/BackoffLimitExceeded,Failed=True/BackoffLimitExceeded" {
		t.Errorf("conditions = %s", got)
	}
	if len(h.allPods()) != 0 {
		t.Errorf("%d pods left", len(h.allPods()))
	}
}

// TestScaleDown: lowering parallelism deletes the extra pods without counting them failed.
func TestScaleDown(t *testing.T) {
	h := newHarness(t, newJob("sd", 3, 6))
	h.mustSync("sd")
	job := h.job("sd")
	job.Spec.Parallelism = ptr.To[int32](1)
	job.Generation++
	h.updateJob(job)
	h.mustSync("sd")
	h.mustSync("sd")
	job = h.job("sd")
	if len(h.running()) != 1 || job.Status.Active != 1 || job.Status.Failed != 0 {
		t.Errorf("%d running, active %d, failed %d", len(h.running()), job.Status.Active, job.Status.Failed)
	}
}
