package job

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
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

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newJob is a Job as the API server stores it: selector and labels defaulted.
func newJob(name string, parallelism, completions int32, opts ...func(*batchv1.Job)) *batchv1.Job {
	uid := types.UID("job-uid-" + name)
	lbls := map[string]string{batchv1.ControllerUidLabel: string(uid), batchv1.JobNameLabel: name}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid, ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(t0)},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To(parallelism),
			Completions:  ptr.To(completions),
			BackoffLimit: ptr.To[int32](6),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbls},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
			},
		},
	}
	for _, o := range opts {
		o(job)
	}
	return job
}

func indexedMode(job *batchv1.Job) { job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }

// harness drives a controller on a fake clientset: the tests call sync, the harness copies
// the clientset's objects into the informers' caches (calling the controller's pod handlers,
// as the informer would) and acts as the node agent and garbage collector when asked.
type harness struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	clock    *testingclock.FakeClock
	c        *Controller
	recorder *events.FakeRecorder
	pods     cache.Indexer
	jobs     cache.Indexer
	rv       atomic.Int64
}

func newHarness(t *testing.T, objs ...runtime.Object) *harness {
	h := &harness{t: t, ctx: context.Background(), clock: testingclock.NewFakeClock(t0)}
	h.client = fake.NewClientset(objs...)
	// The API server names pods from generateName, gives them UIDs, and only marks a pod
	// with finalizers as being deleted.
	h.client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		action.(clienttesting.CreateAction).GetObject().(*corev1.Pod).CreationTimestamp = metav1.NewTime(h.clock.Now())
		return false, nil, nil
	})
	h.client.PrependReactor("create", "pods", nameFromGenerateName())
	h.client.PrependReactor("delete", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		name := action.(clienttesting.DeleteAction).GetName()
		obj, err := h.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), ns, name)
		if err != nil {
			return true, nil, err
		}
		pod := obj.(*corev1.Pod)
		if len(pod.Finalizers) == 0 {
			return false, nil, nil
		}
		if pod.DeletionTimestamp == nil {
			pod.DeletionTimestamp = ptr.To(metav1.NewTime(h.clock.Now()))
			pod.DeletionGracePeriodSeconds = ptr.To[int64](0)
		}
		return true, nil, h.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, ns)
	})
	factory := informers.NewSharedInformerFactory(h.client, 0)
	podInformer, jobInformer := factory.Core().V1().Pods(), factory.Batch().V1().Jobs()
	h.c = newController(h.client, podInformer, jobInformer, h.clock)
	h.recorder = events.NewFakeRecorder(1000)
	h.c.Recorder = h.recorder
	h.pods, h.jobs = podInformer.Informer().GetIndexer(), jobInformer.Informer().GetIndexer()
	h.refresh()
	return h
}

// nameFromGenerateName is a reactor that names pods from their generateName and gives them
// UIDs, as the API server does.
func nameFromGenerateName() clienttesting.ReactionFunc {
	var seq atomic.Int64
	return func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		n := seq.Add(1)
		if pod.Name == "" {
			pod.Name = pod.GenerateName + fmt.Sprintf("x%04d", n)
		}
		pod.UID = types.UID(fmt.Sprintf("pod-uid-%d", n))
		return false, nil, nil
	}
}

// refresh brings the caches up to the clientset, first removing pods being deleted whose
// finalizers are gone (the API server's part).
func (h *harness) refresh() {
	h.t.Helper()
	list, err := h.client.CoreV1().Pods(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range list.Items {
		pod := &list.Items[i]
		if pod.DeletionTimestamp != nil && len(pod.Finalizers) == 0 {
			if err := h.client.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, pod.Name); err != nil {
				h.t.Fatal(err)
			}
			continue
		}
		seen[pod.Name] = true
		old, exists, _ := h.pods.Get(pod)
		switch {
		case !exists:
			pod.ResourceVersion = strconv.FormatInt(h.rv.Add(1), 10)
			_ = h.pods.Add(pod)
			h.c.addPod(pod)
		default:
			prev := old.(*corev1.Pod)
			pod.ResourceVersion = prev.ResourceVersion
			if !reflect.DeepEqual(prev, pod) {
				pod.ResourceVersion = strconv.FormatInt(h.rv.Add(1), 10)
				_ = h.pods.Update(pod)
				h.c.updatePod(prev, pod)
			}
		}
	}
	for _, obj := range h.pods.List() {
		if pod := obj.(*corev1.Pod); !seen[pod.Name] {
			_ = h.pods.Delete(pod)
			h.c.deletePod(pod, true)
		}
	}
	jobs, err := h.client.BatchV1().Jobs(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range jobs.Items {
		_ = h.jobs.Update(&jobs.Items[i])
	}
}

// sync refreshes the caches, syncs the Job and refreshes again.
func (h *harness) sync(name string) error {
	h.t.Helper()
	h.refresh()
	err := h.c.syncJob(h.ctx, ns+"/"+name)
	h.refresh()
	return err
}

func (h *harness) mustSync(name string) {
	h.t.Helper()
	if err := h.sync(name); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
}

func (h *harness) job(name string) *batchv1.Job {
	h.t.Helper()
	job, err := h.client.BatchV1().Jobs(ns).Get(h.ctx, name, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return job
}

func (h *harness) updateJob(job *batchv1.Job) {
	h.t.Helper()
	if _, err := h.client.BatchV1().Jobs(ns).Update(h.ctx, job, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// allPods are the pods in the clientset, sorted by name.
func (h *harness) allPods() []*corev1.Pod {
	h.t.Helper()
	list, err := h.client.CoreV1().Pods(ns).List(h.ctx, metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods
}

// running are the pods the node agent would still run.
func (h *harness) running() []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range h.allPods() {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// finish ends pod with phase (Succeeded: exit 0, Failed: exitCode), as the node agent does.
func (h *harness) finish(pod *corev1.Pod, phase corev1.PodPhase, exitCode int32) {
	h.t.Helper()
	pod = pod.DeepCopy()
	pod.Status.Phase = phase
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, FinishedAt: metav1.NewTime(h.clock.Now())}}}}
	if _, err := h.client.CoreV1().Pods(ns).UpdateStatus(h.ctx, pod, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// events are the events recorded so far.
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

func hasEvent(events []string, want string) bool {
	for _, e := range events {
		if e == want {
			return true
		}
	}
	return false
}

func conditionTypes(job *batchv1.Job) string {
	var parts []string
	for _, c := range job.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return strings.Join(parts, ",")
}
