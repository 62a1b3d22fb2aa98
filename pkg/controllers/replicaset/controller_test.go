package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller on a fake API, with informer caches the test fills by hand, and
// a record of what it wrote.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *recordingRecorder
	queue    *recordingQueue
	clock    *clocktesting.FakePassiveClock
}

func newFixture(t *testing.T, rc bool, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	var names atomic.Int32
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			n := names.Add(1)
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, n)
			pod.UID = types.UID(pod.Name)
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	f := &fixture{t: t, client: client, factory: factory, recorder: &recordingRecorder{}}
	if rc {
		f.c = NewReplicationManager(client, factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods())
	} else {
		f.c = NewReplicaSetController(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods())
	}
	f.c.Recorder = f.recorder
	f.queue = &recordingQueue{TypedRateLimitingInterface: f.c.queue}
	f.c.queue = f.queue
	f.clock = clocktesting.NewFakePassiveClock(testNow)
	f.c.clock = f.clock
	for _, obj := range objs {
		var err error
		switch o := obj.(type) {
		case *appsv1.ReplicaSet:
			err = factory.Apps().V1().ReplicaSets().Informer().GetStore().Add(o)
		case *corev1.ReplicationController:
			err = factory.Core().V1().ReplicationControllers().Informer().GetStore().Add(o)
		case *corev1.Pod:
			err = factory.Core().V1().Pods().Informer().GetStore().Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) sync(key string) error {
	f.t.Helper()
	f.client.ClearActions()
	return f.c.sync(context.Background(), key)
}

// actions are the client's writes since the last sync, as "verb resource[/subresource] name".
func (f *fixture) actions() []string {
	var out []string
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		resource := a.GetResource().Resource
		if a.GetSubresource() != "" {
			resource += "/" + a.GetSubresource()
		}
		name := ""
		switch a := a.(type) {
		case clienttesting.CreateAction:
			if m, ok := a.GetObject().(metav1.Object); ok {
				name = m.GetName() + m.GetGenerateName()
			}
		case clienttesting.UpdateAction:
			if m, ok := a.GetObject().(metav1.Object); ok {
				name = m.GetName()
			}
		case clienttesting.DeleteAction:
			name = a.GetName()
		case clienttesting.PatchAction:
			name = a.GetName()
		}
		out = append(out, a.GetVerb()+" "+resource+" "+name)
	}
	sort.Strings(out)
	return out
}

// lastStatus is the status of the last ReplicaSet status update.
func (f *fixture) lastRSStatus() *appsv1.ReplicaSetStatus {
	var status *appsv1.ReplicaSetStatus
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			if rs, ok := u.GetObject().(*appsv1.ReplicaSet); ok {
				status = &rs.Status
			}
		}
	}
	return status
}

type event struct{ regarding, eventType, reason, note string }

// recordingRecorder records events with the type of the object they regard.
type recordingRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recordingRecorder) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _ string, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{fmt.Sprintf("%T", regarding), eventType, reason, fmt.Sprintf(note, args...)})
}

func (r *recordingRecorder) take() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.events
	r.events = nil
	sort.Slice(out, func(i, j int) bool { return out[i].note < out[j].note })
	return out
}

// recordingQueue records the delays of AddAfter.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	mu    sync.Mutex
	after []time.Duration
}

func (q *recordingQueue) AddAfter(key string, d time.Duration) {
	q.mu.Lock()
	q.after = append(q.after, d)
	q.mu.Unlock()
}

var labelsWeb = map[string]string{"app": "web"}

func newRS(name string, replicas int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labelsWeb},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labelsWeb},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
}

func ownedPod(rs metav1.Object, kind schema.GroupVersionKind, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, UID: types.UID(name), Labels: labelsWeb,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind)},
	}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
}

var rsGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func readyPod(p *corev1.Pod, since time.Time) *corev1.Pod {
	p.Spec.NodeName = "node"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(since)}}
	return p
}

func TestScaleUp(t *testing.T) {
	rs := newRS("web", 3)
	f := newFixture(t, false, rs)
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	want := []string{"create pods web-", "create pods web-", "create pods web-", "update replicasets/status web"}
	if diff := cmp.Diff(want, f.actions()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	pod, err := f.client.CoreV1().Pods("default").Get(context.Background(), "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(pod); ref == nil || ref.UID != rs.UID || ref.Kind != "ReplicaSet" || !*ref.BlockOwnerDeletion {
		t.Errorf("the pod's controller %+v", ref)
	}
	if adds, _, _ := f.c.expectations.Pending("default/web"); adds != 3 {
		t.Errorf("pending creations %d, want 3", adds)
	}
	wantEvents := []event{
		{"*v1.ReplicaSet", "Normal", "SuccessfulCreate", "Created pod: web-1"},
		{"*v1.ReplicaSet", "Normal", "SuccessfulCreate", "Created pod: web-2"},
		{"*v1.ReplicaSet", "Normal", "SuccessfulCreate", "Created pod: web-3"},
	}
	if diff := cmp.Diff(wantEvents, f.recorder.take(), cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	status := f.lastRSStatus()
	if status == nil || status.Replicas != 0 || status.ObservedGeneration != 1 || status.TerminatingReplicas == nil || *status.TerminatingReplicas != 0 {
		t.Errorf("status %+v", status)
	}

	// Until the creations are observed, a sync creates nothing more.
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.actions() {
		if strings.HasPrefix(a, "create") {
			t.Fatalf("created again before observing: %v", f.actions())
		}
	}
	// The informer's add events observe them.
	for i := 1; i <= 3; i++ {
		f.c.podAdded(ownedPod(rs, rsGVK, fmt.Sprintf("web-%d", i)))
	}
	if !f.c.expectations.Satisfied("default/web") {
		t.Fatal("expectations not satisfied after the creations were observed")
	}
}

func TestBurstReplicas(t *testing.T) {
	f := newFixture(t, false, newRS("web", 7))
	f.c.burstReplicas = 4
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, a := range f.actions() {
		if strings.HasPrefix(a, "create pods") {
			creates++
		}
	}
	if creates != 4 {
		t.Fatalf("%d creates, want the burst of 4", creates)
	}
}

func TestCreateFailures(t *testing.T) {
	rs := newRS("web", 10)
	f := newFixture(t, false, rs)
	var calls atomic.Int32
	f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		if calls.Add(1) > 1 {
			return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
		}
		return false, nil, nil
	})
	err := f.sync("default/web")
	if !apierrors.IsForbidden(err) {
		t.Fatalf("sync: %v, want the create's error", err)
	}
	// Batch 1 (one create) succeeded, batch 2 (two) failed, the rest were skipped.
	if calls.Load() != 3 {
		t.Fatalf("%d create calls, want 3", calls.Load())
	}
	if adds, _, _ := f.c.expectations.Pending("default/web"); adds != 1 {
		t.Errorf("pending creations %d, want the 1 that succeeded", adds)
	}
	status := f.lastRSStatus()
	if status == nil || len(status.Conditions) != 1 {
		t.Fatalf("status %+v, want a ReplicaFailure condition", status)
	}
	cond := status.Conditions[0]
	if cond.Type != appsv1.ReplicaSetReplicaFailure || cond.Status != corev1.ConditionTrue || cond.Reason != "FailedCreate" ||
		!strings.Contains(cond.Message, "exceeded quota") {
		t.Errorf("condition %+v", cond)
	}
	warnings := 0
	for _, e := range f.recorder.take() {
		if e.reason == "FailedCreate" && e.eventType == "Warning" {
			warnings++
		}
	}
	if warnings != 2 {
		t.Errorf("%d FailedCreate events, want 2", warnings)
	}
}

func TestNamespaceTerminatingIsNotAFailure(t *testing.T) {
	f := newFixture(t, false, newRS("web", 2))
	f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden, Message: "namespace terminating",
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
		}}
	})
	if err := f.sync("default/web"); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if status := f.lastRSStatus(); status == nil || len(status.Conditions) != 0 {
		t.Fatalf("status %+v, want no ReplicaFailure", status)
	}
	if got := f.recorder.take(); len(got) != 0 {
		t.Fatalf("events %v", got)
	}
}

func TestScaleDown(t *testing.T) {
	rs := newRS("web", 1)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 3, ObservedGeneration: 1}
	old := readyPod(ownedPod(rs, rsGVK, "old"), testNow.Add(-time.Hour))
	notReady := ownedPod(rs, rsGVK, "not-ready")
	notReady.Spec.NodeName = "node"
	pending := ownedPod(rs, rsGVK, "pending")
	pending.Status.Phase = corev1.PodPending
	f := newFixture(t, false, rs, old, notReady, pending)
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	want := []string{"delete pods not-ready", "delete pods pending", "update replicasets/status web"}
	if diff := cmp.Diff(want, f.actions()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	if _, dels, _ := f.c.expectations.Pending("default/web"); dels != 2 {
		t.Fatalf("pending deletions %d, want 2", dels)
	}
	// Marking one for deletion observes it; the removal that follows does not count twice.
	deleting := pending.DeepCopy()
	deleting.ResourceVersion = "2"
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	f.c.podUpdated(pending, deleting)
	f.c.podDeleted(deleting)
	if _, dels, _ := f.c.expectations.Pending("default/web"); dels != 1 {
		t.Fatalf("pending deletions %d, want 1", dels)
	}
	f.c.podDeleted(notReady)
	if !f.c.expectations.Satisfied("default/web") {
		t.Fatal("not satisfied after both deletions")
	}
	events := f.recorder.take()
	if len(events) != 2 || events[0].reason != "SuccessfulDelete" || events[0].note != "Deleted pod: not-ready" {
		t.Errorf("events %+v", events)
	}
}

func TestDeleteFailures(t *testing.T) {
	rs := newRS("web", 0)
	f := newFixture(t, false, rs, ownedPod(rs, rsGVK, "a"), ownedPod(rs, rsGVK, "b"))
	f.client.PrependReactor("delete", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.(clienttesting.DeleteAction).GetName() == "a" {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "a")
		}
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err := f.sync("default/web")
	if !apierrors.IsInternalError(err) {
		t.Fatalf("sync: %v, want b's error (a's NotFound is no failure)", err)
	}
	if !f.c.expectations.Satisfied("default/web") {
		t.Fatal("failed deletions are still expected")
	}
	status := f.lastRSStatus()
	if status == nil || len(status.Conditions) != 1 || status.Conditions[0].Reason != "FailedDelete" {
		t.Fatalf("status %+v, want ReplicaFailure FailedDelete", status)
	}
}

// TestDeletePanicIsRecovered: a deletion runs in a goroutine of its own, outside the worker's
// panic boundary; its panic comes back as the sync's error (a recovered panic, which the
// worker records as FailedSync and retries), and the deletion is no longer expected.
func TestDeletePanicIsRecovered(t *testing.T) {
	rs := newRS("web", 0)
	f := newFixture(t, false, rs, ownedPod(rs, rsGVK, "a"))
	f.client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		panic("a deletion that panics")
	})
	err := f.sync("default/web")
	if !recovery.IsPanic(err) {
		t.Fatalf("sync: %v, want the deletion's recovered panic", err)
	}
	if !f.c.expectations.Satisfied("default/web") {
		t.Fatal("the panicked deletion is still expected")
	}
}

func TestAdoptionAndRelease(t *testing.T) {
	rs := newRS("web", 2)
	orphan := ownedPod(rs, rsGVK, "orphan")
	orphan.OwnerReferences = nil
	stale := ownedPod(rs, rsGVK, "stale")
	stale.Labels = map[string]string{"app": "other"}
	foreign := ownedPod(newRS("other", 1), rsGVK, "foreign")
	kept := ownedPod(rs, rsGVK, "kept")
	f := newFixture(t, false, rs, orphan, stale, foreign, kept)
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	// The orphan is adopted and counted, so nothing is created; the stale pod is released.
	want := []string{"patch pods orphan", "patch pods stale", "update replicasets/status web"}
	if diff := cmp.Diff(want, f.actions()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	if s := f.lastRSStatus(); s.Replicas != 2 || s.FullyLabeledReplicas != 2 {
		t.Errorf("status %+v", s)
	}
	// CanAdopt read the ReplicaSet uncached.
	gets := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "get" && a.GetResource().Resource == "replicasets" {
			gets++
		}
	}
	if gets != 1 {
		t.Errorf("%d uncached gets of the ReplicaSet, want 1", gets)
	}
}

func TestAdoptionRefusedForRecreatedOwner(t *testing.T) {
	rs := newRS("web", 1)
	orphan := ownedPod(rs, rsGVK, "orphan")
	orphan.OwnerReferences = nil
	f := newFixture(t, false, rs, orphan)
	// The stored ReplicaSet is a namesake with another UID.
	recreated := rs.DeepCopy()
	recreated.UID = "new-uid"
	if err := f.client.Tracker().Update(appsv1.SchemeGroupVersion.WithResource("replicasets"), recreated, "default"); err != nil {
		t.Fatal(err)
	}
	err := f.sync("default/web")
	if err == nil || !strings.Contains(err.Error(), "original ReplicaSet default/web is gone: got uid new-uid, wanted web-uid") {
		t.Fatalf("sync: %v", err)
	}
}

func TestDeletingOwnerManagesNothing(t *testing.T) {
	rs := newRS("web", 3)
	rs.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	rs.Finalizers = []string{"foregroundDeletion"}
	f := newFixture(t, false, rs)
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"update replicasets/status web"}, f.actions()); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
}

func TestStatusUnchangedIsNotWritten(t *testing.T) {
	rs := newRS("web", 1)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 1, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)}
	f := newFixture(t, false, rs, ownedPod(rs, rsGVK, "a"))
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.actions(); len(got) != 0 {
		t.Fatalf("actions %v, want none", got)
	}
}

func TestStatusRetriesOnce(t *testing.T) {
	rs := newRS("web", 0)
	f := newFixture(t, false, rs)
	var updates int
	f.client.PrependReactor("update", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		updates++
		if updates == 1 {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web", errors.New("changed"))
		}
		return false, nil, nil
	})
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	if updates != 2 {
		t.Fatalf("%d status updates, want 2", updates)
	}
	updates = -10 // every update from now on conflicts
	f.client.PrependReactor("update", "replicasets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "web", errors.New("changed"))
	})
	if err := f.sync("default/web"); !apierrors.IsConflict(err) {
		t.Fatalf("sync: %v, want the conflict", err)
	}
}

func TestMinReadySecondsRequeue(t *testing.T) {
	rs := newRS("web", 2)
	rs.Spec.MinReadySeconds = 10
	f := newFixture(t, false, rs,
		readyPod(ownedPod(rs, rsGVK, "a"), testNow.Add(-4*time.Second)),
		readyPod(ownedPod(rs, rsGVK, "b"), testNow.Add(-time.Minute)))
	if err := f.sync("default/web"); err != nil {
		t.Fatal(err)
	}
	s := f.lastRSStatus()
	if s.ReadyReplicas != 2 || s.AvailableReplicas != 1 {
		t.Fatalf("status %+v, want 2 ready, 1 available", s)
	}
	if diff := cmp.Diff([]time.Duration{6 * time.Second}, f.queue.after); diff != "" {
		t.Fatalf("requeues (-want +got):\n%s", diff)
	}

	// The pod handler requeues after minReadySeconds when a pod becomes ready.
	f.queue.after = nil
	before := ownedPod(rs, rsGVK, "c")
	before.ResourceVersion = "1"
	after := readyPod(before.DeepCopy(), testNow)
	after.ResourceVersion = "2"
	f.c.podUpdated(before, after)
	if diff := cmp.Diff([]time.Duration{10 * time.Second}, f.queue.after); diff != "" {
		t.Fatalf("requeues (-want +got):\n%s", diff)
	}
}

func TestDeletedOwner(t *testing.T) {
	f := newFixture(t, false)
	f.c.expectations.ExpectCreations("default/gone", 3)
	if err := f.sync("default/gone"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := f.c.expectations.Pending("default/gone"); ok {
		t.Fatal("the deleted owner's expectations were kept")
	}
}

func TestPodHandlersQueue(t *testing.T) {
	rs := newRS("web", 1)
	f := newFixture(t, false, rs)
	orphan := ownedPod(rs, rsGVK, "orphan")
	orphan.OwnerReferences = nil
	f.c.expectations.ExpectCreations("default/web", 1)
	f.c.podAdded(orphan)
	if f.c.expectations.Satisfied("default/web") {
		t.Fatal("an orphan's arrival was observed as a creation")
	}
	if f.queue.Len() != 1 {
		t.Fatalf("queue length %d, want the selecting ReplicaSet", f.queue.Len())
	}
	// A pod of a namesake (another UID) is nobody's here.
	namesake := ownedPod(rs, rsGVK, "namesake")
	namesake.OwnerReferences[0].UID = "other"
	f.c.podAdded(namesake)
	if f.c.expectations.Satisfied("default/web") {
		t.Fatal("a namesake's pod was observed")
	}
}
