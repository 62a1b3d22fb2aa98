package ttlafterfinished

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

const ns = "ns"

var finished = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// finishedJob is a Job that finished (condition t) at finished, with ttl seconds (nil: none).
func finishedJob(name string, t batchv1.JobConditionType, ttl *int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name)},
		Spec:       batchv1.JobSpec{TTLSecondsAfterFinished: ttl},
		Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(finished.Add(-time.Minute))},
			{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(finished)},
		}},
	}
}

type harness struct {
	t      *testing.T
	client *fake.Clientset
	clock  *testingclock.FakeClock
	c      *Controller
	cache  cache.Indexer
}

func newHarness(t *testing.T, now time.Time, cached []*batchv1.Job, stored ...runtime.Object) *harness {
	h := &harness{t: t, clock: testingclock.NewFakeClock(now), client: fake.NewClientset(stored...)}
	factory := informers.NewSharedInformerFactory(h.client, 0)
	h.c = newController(h.client, factory.Batch().V1().Jobs(), h.clock)
	h.cache = factory.Batch().V1().Jobs().Informer().GetIndexer()
	for _, j := range cached {
		_ = h.cache.Add(j)
		h.c.jobChanged(j)
	}
	return h
}

func (h *harness) process(name string) {
	h.t.Helper()
	if err := h.c.processJob(context.Background(), ns+"/"+name); err != nil {
		h.t.Fatal(err)
	}
}

// deletes are the Job deletions the controller sent.
func (h *harness) deletes() []clienttesting.DeleteAction {
	var out []clienttesting.DeleteAction
	for _, a := range h.client.Actions() {
		if d, ok := a.(clienttesting.DeleteAction); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestDeletesExpiredJobForeground(t *testing.T) {
	job := finishedJob("done", batchv1.JobComplete, ptr.To[int32](60))
	h := newHarness(t, finished.Add(61*time.Second), []*batchv1.Job{job}, job)
	if h.c.queue.Len() != 1 {
		t.Fatalf("queue has %d keys, want 1", h.c.queue.Len())
	}
	h.process("done")
	d := h.deletes()
	if len(d) != 1 || d[0].GetName() != "done" {
		t.Fatalf("deletes = %v", d)
	}
	opts := d[0].GetDeleteOptions()
	if p := opts.PropagationPolicy; p == nil || *p != metav1.DeletePropagationForeground {
		t.Errorf("propagation = %v", p)
	}
	if opts.Preconditions == nil || opts.Preconditions.UID == nil || *opts.Preconditions.UID != job.UID {
		t.Errorf("preconditions = %+v", opts.Preconditions)
	}
	if _, err := h.client.BatchV1().Jobs(ns).Get(context.Background(), "done", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("job still there: %v", err)
	}
}

func TestFailedJobsExpireToo(t *testing.T) {
	job := finishedJob("failed", batchv1.JobFailed, ptr.To[int32](0))
	h := newHarness(t, finished, []*batchv1.Job{job}, job)
	h.process("failed")
	if len(h.deletes()) != 1 {
		t.Errorf("deletes = %v", h.deletes())
	}
}

func TestNotYetExpiredIsRequeued(t *testing.T) {
	job := finishedJob("young", batchv1.JobComplete, ptr.To[int32](60))
	h := newHarness(t, finished.Add(20*time.Second), []*batchv1.Job{job}, job)
	key, _ := h.c.queue.Get()
	h.process("young")
	h.c.queue.Done(key)
	if len(h.deletes()) != 0 {
		t.Fatalf("deleted before the TTL: %v", h.deletes())
	}
	if h.c.queue.Len() != 0 {
		t.Fatalf("requeued at once")
	}
	// The key comes back when the TTL passes.
	h.clock.Step(39 * time.Second)
	if h.c.queue.Len() != 0 {
		t.Fatal("requeued a second early")
	}
	h.clock.Step(time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for h.c.queue.Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the delaying queue moves the key on its own goroutine
	}
	if h.c.queue.Len() != 1 {
		t.Fatal("not requeued when the TTL passed")
	}
}

func TestStaleCacheRechecked(t *testing.T) {
	// The cache says the TTL passed; the stored Job has had its TTL raised.
	cached := finishedJob("raised", batchv1.JobComplete, ptr.To[int32](10))
	stored := finishedJob("raised", batchv1.JobComplete, ptr.To[int32](3600))
	h := newHarness(t, finished.Add(time.Minute), []*batchv1.Job{cached}, stored)
	h.process("raised")
	if len(h.deletes()) != 0 {
		t.Errorf("deleted on a stale TTL: %v", h.deletes())
	}
}

func TestIgnoredJobs(t *testing.T) {
	running := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "running"},
		Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ptr.To[int32](0)}}
	noTTL := finishedJob("keep", batchv1.JobComplete, nil)
	deleting := finishedJob("deleting", batchv1.JobComplete, ptr.To[int32](0))
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(finished))
	h := newHarness(t, finished.Add(time.Hour), []*batchv1.Job{running, noTTL, deleting}, running, noTTL, deleting)
	if h.c.queue.Len() != 0 {
		t.Errorf("queued %d jobs, want none", h.c.queue.Len())
	}
	for _, name := range []string{"running", "keep", "deleting", "absent"} {
		h.process(name)
	}
	if len(h.deletes()) != 0 {
		t.Errorf("deletes = %v", h.deletes())
	}
}

func TestFinishTimeMissing(t *testing.T) {
	j := finishedJob("x", batchv1.JobComplete, ptr.To[int32](1))
	j.Status.Conditions[1].LastTransitionTime = metav1.Time{}
	if _, err := timeLeft(klog.Background(), j, finished); err == nil {
		t.Error("no error for a finish without a time")
	}
}
