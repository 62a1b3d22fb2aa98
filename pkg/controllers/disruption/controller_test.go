package disruption

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var testNow = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	c        *Controller
	recorder *recordingRecorder
	recheck  *recordingDelayQueue
	stale    *recordingRateLimitingQueue
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(), factory.Apps().V1().ReplicaSets(),
		factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets())
	f := &fixture{t: t, client: client, c: c, recorder: &recordingRecorder{}}
	c.Recorder = f.recorder
	c.clock = clocktesting.NewFakePassiveClock(testNow)
	f.recheck = &recordingDelayQueue{TypedDelayingInterface: c.recheck}
	c.recheck = f.recheck
	f.stale = &recordingRateLimitingQueue{TypedRateLimitingInterface: c.stale}
	c.stale = f.stale
	for _, obj := range objs {
		var store cache.Store
		switch obj.(type) {
		case *corev1.Pod:
			store = factory.Core().V1().Pods().Informer().GetStore()
		case *policyv1.PodDisruptionBudget:
			store = factory.Policy().V1().PodDisruptionBudgets().Informer().GetStore()
		case *corev1.ReplicationController:
			store = factory.Core().V1().ReplicationControllers().Informer().GetStore()
		case *appsv1.ReplicaSet:
			store = factory.Apps().V1().ReplicaSets().Informer().GetStore()
		case *appsv1.Deployment:
			store = factory.Apps().V1().Deployments().Informer().GetStore()
		case *appsv1.StatefulSet:
			store = factory.Apps().V1().StatefulSets().Informer().GetStore()
		}
		if err := store.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func (f *fixture) sync() error {
	f.t.Helper()
	f.client.ClearActions()
	return f.c.sync(context.Background(), "default/budget")
}

// written is the budget of the last status update, nil if none.
func (f *fixture) written() *policyv1.PodDisruptionBudget {
	var out *policyv1.PodDisruptionBudget
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			if pdb, ok := u.GetObject().(*policyv1.PodDisruptionBudget); ok {
				out = pdb
			}
		}
	}
	return out
}

type event struct{ regarding, eventType, reason, note string }

type recordingRecorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recordingRecorder) Eventf(regarding runtime.Object, _ runtime.Object, eventType, reason, _ string, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, event{fmt.Sprintf("%T", regarding), eventType, reason, fmt.Sprintf(note, args...)})
}

func (r *recordingRecorder) reasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		out = append(out, e.eventType+" "+e.reason)
	}
	return out
}

type recordingDelayQueue struct {
	workqueue.TypedDelayingInterface[string]
	after []time.Duration
}

func (q *recordingDelayQueue) AddAfter(_ string, d time.Duration) { q.after = append(q.after, d) }

type recordingRateLimitingQueue struct {
	workqueue.TypedRateLimitingInterface[string]
	after map[string]time.Duration
}

func (q *recordingRateLimitingQueue) AddAfter(key string, d time.Duration) {
	if q.after == nil {
		q.after = map[string]time.Duration{}
	}
	q.after[key] = d
}

var webLabels = map[string]string{"app": "web"}

func budget(mutate func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "budget", Generation: 3},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: webLabels}},
	}
	mutate(pdb)
	return pdb
}

func minAvailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &v }
}

func maxUnavailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = &v }
}

func pod(name string, ready bool, owner metav1.Object, kind schema.GroupVersionKind) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: webLabels}}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, kind)}
	}
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

var (
	rsKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ssKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	rcKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
)

func condition(pdb *policyv1.PodDisruptionBudget) (metav1.ConditionStatus, string) {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

func TestIntegerMinAvailable(t *testing.T) {
	f := newFixture(t, budget(minAvailable(intstr.FromInt32(2))),
		pod("a", true, nil, rsKind), pod("b", true, nil, rsKind), pod("c", true, nil, rsKind), pod("d", false, nil, rsKind))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	pdb := f.written()
	if pdb == nil {
		t.Fatal("no status written")
	}
	want := policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 4, DisruptionsAllowed: 1,
		DisruptedPods: map[string]metav1.Time{}, ObservedGeneration: 3}
	got := pdb.Status
	got.Conditions = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if status, reason := condition(pdb); status != metav1.ConditionTrue || reason != policyv1.SufficientPodsReason {
		t.Errorf("condition %s %s, want True SufficientPods", status, reason)
	}
	// An integer minAvailable needs no controllers: unmanaged pods are fine, unevented.
	if got := f.recorder.reasons(); len(got) != 0 {
		t.Errorf("events %v", got)
	}
}

func TestMaxUnavailablePercentOfDeployment(t *testing.T) {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "d-uid"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](4)}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-1", UID: "rs-uid",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](3)}}
	f := newFixture(t, budget(maxUnavailable(intstr.FromString("25%"))), d, rs,
		pod("a", true, rs, rsKind), pod("b", true, rs, rsKind), pod("c", true, rs, rsKind))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	s := f.written().Status
	// Expected from the Deployment (4), not the ReplicaSet (3); 25% of 4 rounds up to 1.
	if s.ExpectedPods != 4 || s.DesiredHealthy != 3 || s.CurrentHealthy != 3 || s.DisruptionsAllowed != 0 {
		t.Errorf("status %+v", s)
	}
	if status, reason := condition(f.written()); status != metav1.ConditionFalse || reason != policyv1.InsufficientPodsReason {
		t.Errorf("condition %s %s, want False InsufficientPods", status, reason)
	}
}

func TestPercentMinAvailableOfControllers(t *testing.T) {
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db", UID: "ss-uid"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)}}
	rc := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "old", UID: "rc-uid"}, Spec: corev1.ReplicationControllerSpec{Replicas: ptr.To[int32](2)}}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bare", UID: "rs-uid"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](5)}}
	f := newFixture(t, budget(minAvailable(intstr.FromString("50%"))), ss, rc, rs,
		pod("s0", true, ss, ssKind), pod("s1", true, ss, ssKind), pod("r0", true, rc, rcKind), pod("b0", true, rs, rsKind),
		pod("lone", true, nil, rsKind))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	s := f.written().Status
	// 3 + 2 + 5 expected; 50% of 10 is 5; 5 ready (the unmanaged one counts as healthy).
	if s.ExpectedPods != 10 || s.DesiredHealthy != 5 || s.CurrentHealthy != 5 || s.DisruptionsAllowed != 0 {
		t.Errorf("status %+v", s)
	}
	if diff := cmp.Diff([]string{"Warning UnmanagedPods"}, f.recorder.reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !strings.Contains(f.recorder.events[0].note, `please set ".spec.minAvailable" field of the PDB to an integer value`) {
		t.Errorf("note %q", f.recorder.events[0].note)
	}
}

func TestUnknownControllerFailsSafe(t *testing.T) {
	owner := &metav1.ObjectMeta{Name: "thing", UID: "x-uid"}
	pdb := budget(maxUnavailable(intstr.FromInt32(1)))
	pdb.Status.DisruptionsAllowed = 2
	f := newFixture(t, pdb, pod("a", true, owner, schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}))
	err := f.sync()
	if err != nil {
		t.Fatalf("sync: %v (the fail-safe write succeeded)", err)
	}
	written := f.written()
	if written == nil || written.Status.DisruptionsAllowed != 0 {
		t.Fatalf("fail-safe status %+v", written)
	}
	c := apimeta.FindStatusCondition(written.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason || c.Message != `found no controllers for pod "a"` {
		t.Errorf("condition %+v", c)
	}
	if diff := cmp.Diff([]string{"Warning CalculateExpectedPodCountFailed"}, f.recorder.reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestNoPods(t *testing.T) {
	f := newFixture(t, budget(minAvailable(intstr.FromInt32(0))))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if s := f.written().Status; s.ExpectedPods != 0 || s.DisruptionsAllowed != 0 {
		t.Errorf("status %+v: no disruption may be allowed while no pods are expected", s)
	}
	if diff := cmp.Diff([]string{"Normal NoPods"}, f.recorder.reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDisruptedPods(t *testing.T) {
	recent := metav1.NewTime(testNow.Add(-30 * time.Second))
	old := metav1.NewTime(testNow.Add(-3 * time.Minute))
	deleting := pod("deleting", true, nil, rsKind)
	deleting.DeletionTimestamp = ptr.To(metav1.NewTime(testNow))
	pdb := budget(minAvailable(intstr.FromInt32(1)))
	pdb.Status.DisruptedPods = map[string]metav1.Time{"recent": recent, "old": old, "gone": recent, "deleting": recent}
	f := newFixture(t, pdb, pod("recent", true, nil, rsKind), pod("old", true, nil, rsKind), pod("other", true, nil, rsKind), deleting)
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	s := f.written().Status
	if diff := cmp.Diff(map[string]metav1.Time{"recent": recent}, s.DisruptedPods); diff != "" {
		t.Errorf("disruptedPods (-want +got):\n%s", diff)
	}
	// "recent" is going, "deleting" is being deleted: old and other are healthy.
	if s.CurrentHealthy != 2 || s.DisruptionsAllowed != 1 {
		t.Errorf("status %+v", s)
	}
	if diff := cmp.Diff([]time.Duration{90 * time.Second}, f.recheck.after); diff != "" {
		t.Errorf("rechecks (-want +got):\n%s", diff)
	}
	if len(f.recorder.events) != 1 || f.recorder.events[0].reason != "NotDeleted" || f.recorder.events[0].regarding != "*v1.Pod" ||
		f.recorder.events[0].note != "Pod was expected by PDB default/budget to be deleted but it wasn't" {
		t.Errorf("events %+v", f.recorder.events)
	}
}

func TestStatusUnchangedIsNotWritten(t *testing.T) {
	pdb := budget(minAvailable(intstr.FromInt32(1)))
	pdb.Status = policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1, ObservedGeneration: 3,
		DisruptedPods: map[string]metav1.Time{},
		Conditions:    []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason}}}
	f := newFixture(t, pdb, pod("a", true, nil, rsKind))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if f.written() != nil {
		t.Fatal("an unchanged status was written")
	}
}

func TestConflictIsNotFailedSafe(t *testing.T) {
	f := newFixture(t, budget(minAvailable(intstr.FromInt32(1))), pod("a", true, nil, rsKind))
	updates := 0
	f.client.PrependReactor("update", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		updates++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "budget", errors.New("changed"))
	})
	if err := f.sync(); !apierrors.IsConflict(err) {
		t.Fatalf("sync: %v, want the conflict", err)
	}
	if updates != 1 {
		t.Fatalf("%d status writes, want 1 (no fail-safe write after a conflict)", updates)
	}
}

func TestStalePodDisruption(t *testing.T) {
	target := func(name string, age time.Duration, reason string) *corev1.Pod {
		p := pod(name, true, nil, rsKind)
		p.Generation = 2
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reason, LastTransitionTime: metav1.NewTime(testNow.Add(-age))})
		return p
	}
	stale := target("stale", 3*time.Minute, "EvictionByEvictionAPI")
	fresh := target("fresh", 30*time.Second, "EvictionByEvictionAPI")
	kubelet := target("kubelet", time.Hour, corev1.PodReasonTerminationByKubelet)
	f := newFixture(t, stale, fresh, kubelet)
	ctx := context.Background()

	if err := f.c.syncStalePodDisruption(ctx, "default/stale"); err != nil {
		t.Fatal(err)
	}
	var updated *corev1.Pod
	for _, a := range f.client.Actions() {
		if u, ok := a.(clienttesting.UpdateAction); ok && a.GetSubresource() == "status" {
			updated = u.GetObject().(*corev1.Pod)
		}
	}
	if updated == nil {
		t.Fatal("the stale condition was not reset")
	}
	want := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, ObservedGeneration: 2, LastTransitionTime: metav1.NewTime(testNow)}
	if diff := cmp.Diff(want, updated.Status.Conditions[1]); diff != "" {
		t.Errorf("condition (-want +got):\n%s", diff)
	}

	f.client.ClearActions()
	if err := f.c.syncStalePodDisruption(ctx, "default/fresh"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.syncStalePodDisruption(ctx, "default/kubelet"); err != nil {
		t.Fatal(err)
	}
	if len(f.client.Actions()) != 0 {
		t.Errorf("actions %v, want none", f.client.Actions())
	}
	if diff := cmp.Diff(map[string]time.Duration{"default/fresh": 90 * time.Second}, f.stale.after); diff != "" {
		t.Errorf("stale requeues (-want +got):\n%s", diff)
	}

	// The pod handler queues only the pods with a condition to reset.
	f.stale.after = nil
	f.c.podChanged(fresh)
	f.c.podChanged(kubelet)
	f.c.podChanged(pod("plain", true, nil, rsKind))
	if diff := cmp.Diff(map[string]time.Duration{"default/fresh": 90 * time.Second}, f.stale.after); diff != "" {
		t.Errorf("handler requeues (-want +got):\n%s", diff)
	}
}

func TestMultipleBudgets(t *testing.T) {
	other := budget(minAvailable(intstr.FromInt32(1)))
	other.Name = "other"
	f := newFixture(t, budget(minAvailable(intstr.FromInt32(1))), other)
	f.c.podChanged(pod("a", true, nil, rsKind))
	if diff := cmp.Diff([]string{"Warning MultiplePodDisruptionBudgets"}, f.recorder.reasons()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if f.c.queue.Len() != 1 {
		t.Errorf("queue length %d, want the one budget picked", f.c.queue.Len())
	}
}
