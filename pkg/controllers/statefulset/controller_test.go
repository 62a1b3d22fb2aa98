package statefulset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// fixture is a controller on a fake clientset whose caches the test fills from the client
// between syncs, standing in for the informers.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *events.FakeRecorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := fake.NewClientset(objs...)
	// The API server gives new pods phase Pending.
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if pod, ok := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod); ok && pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewStatefulSetController(client, factory.Core().V1().Pods(), factory.Apps().V1().StatefulSets(), factory.Apps().V1().ControllerRevisions())
	c.clock = clocktesting.NewFakeClock(now)
	recorder := events.NewFakeRecorder(100)
	c.Recorder = recorder
	t.Cleanup(c.queue.ShutDown)
	f := &fixture{t: t, client: client, factory: factory, c: c, recorder: recorder}
	f.refresh()
	return f
}

// refresh replaces the caches' content with the client's.
func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	sets, _ := f.client.AppsV1().StatefulSets("").List(ctx, metav1.ListOptions{})
	pods, _ := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	revs, _ := f.client.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
	replace := func(inf cache.SharedIndexInformer, objs []any) {
		if err := inf.GetIndexer().Replace(objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	var o []any
	for i := range sets.Items {
		o = append(o, &sets.Items[i])
	}
	replace(f.factory.Apps().V1().StatefulSets().Informer(), o)
	o = nil
	for i := range pods.Items {
		o = append(o, &pods.Items[i])
	}
	replace(f.factory.Core().V1().Pods().Informer(), o)
	o = nil
	for i := range revs.Items {
		o = append(o, &revs.Items[i])
	}
	replace(f.factory.Apps().V1().ControllerRevisions().Informer(), o)
}

func (f *fixture) sync(key string) error {
	f.t.Helper()
	err := f.c.sync(context.Background(), key)
	f.refresh()
	return err
}

// podNames are the stored pods, sorted.
func (f *fixture) podNames() []string {
	pods, _ := f.client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}

// makeReady makes every stored pod Running and Ready an hour ago.
func (f *fixture) makeReady() {
	ctx := context.Background()
	pods, _ := f.client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	for i := range pods.Items {
		p := &pods.Items[i]
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
		if _, err := f.client.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			f.t.Fatal(err)
		}
	}
	f.refresh()
}

func (f *fixture) set(name string) *appsv1.StatefulSet {
	s, err := f.client.AppsV1().StatefulSets("ns").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestSyncOrderedScaleUpAndRollingUpdate(t *testing.T) {
	f := newFixture(t, newSet("web", 2).get())

	// 1. The first sync creates a revision and web-0 only.
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("pods %v, want web-0", got)
	}
	revs, _ := f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 1 || !strings.HasPrefix(revs.Items[0].Name, "web-") || revs.Items[0].Revision != 1 {
		t.Fatalf("revisions %+v", revs.Items)
	}
	rev1 := revs.Items[0].Name
	pod, _ := f.client.CoreV1().Pods("ns").Get(context.Background(), "web-0", metav1.GetOptions{})
	if pod.Labels[appsv1.StatefulSetRevisionLabel] != rev1 || pod.Labels[appsv1.StatefulSetPodNameLabel] != "web-0" ||
		pod.Labels[appsv1.PodIndexLabel] != "0" || pod.Spec.Hostname != "web-0" || pod.Spec.Subdomain != "web" {
		t.Errorf("pod web-0: labels %v hostname %q subdomain %q", pod.Labels, pod.Spec.Hostname, pod.Spec.Subdomain)
	}
	set := f.set("web")
	if set.Status.CurrentRevision != rev1 || set.Status.UpdateRevision != rev1 || set.Status.ObservedGeneration != 1 {
		t.Errorf("status %+v", set.Status)
	}
	if ev := f.events(); !slices.Contains(ev, "Normal SuccessfulCreate Create Pod web-0 in StatefulSet web successful") {
		t.Errorf("events %v", ev)
	}

	// 2. Not ready: nothing more. Ready: web-1.
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); len(got) != 1 {
		t.Fatalf("pods %v before web-0 is ready", got)
	}
	f.makeReady()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0", "web-1"}) {
		t.Fatalf("pods %v", got)
	}
	f.makeReady()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	set = f.set("web")
	if set.Status.Replicas != 2 || set.Status.ReadyReplicas != 2 || set.Status.AvailableReplicas != 2 ||
		set.Status.CurrentReplicas != 2 || set.Status.UpdatedReplicas != 2 {
		t.Errorf("status %+v", set.Status)
	}

	// 3. A new template: a second revision; web-1 goes first.
	set.Spec.Template.Spec.Containers[0].Image = "img:2"
	set.Generation = 2
	if _, err := f.client.AppsV1().StatefulSets("ns").Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("pods %v, want web-1 deleted for the update", got)
	}
	set = f.set("web")
	if set.Status.CurrentRevision != rev1 || set.Status.UpdateRevision == rev1 || set.Status.CurrentReplicas != 1 {
		t.Errorf("status during the update %+v", set.Status)
	}
	if ev := f.events(); !slices.Contains(ev, "Normal SuccessfulDelete Delete Pod web-1 in StatefulSet web successful") {
		t.Errorf("events %v", ev)
	}
	rev2 := set.Status.UpdateRevision

	// web-1 comes back at the new revision, then web-0 rolls, then the update completes.
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	pod, _ = f.client.CoreV1().Pods("ns").Get(context.Background(), "web-1", metav1.GetOptions{})
	if pod.Labels[appsv1.StatefulSetRevisionLabel] != rev2 || pod.Spec.Containers[0].Image != "img:2" {
		t.Errorf("recreated web-1 at %s with %s", pod.Labels[appsv1.StatefulSetRevisionLabel], pod.Spec.Containers[0].Image)
	}
	f.makeReady()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-1"}) {
		t.Fatalf("pods %v, want web-0 deleted for the update", got)
	}
	for range 2 {
		if err := f.sync("ns/web"); err != nil {
			t.Fatal(err)
		}
		f.makeReady()
	}
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	set = f.set("web")
	if set.Status.CurrentRevision != rev2 || set.Status.UpdatedReplicas != 2 || set.Status.CurrentReplicas != 2 {
		t.Errorf("status after the update %+v", set.Status)
	}

	// 4. Scale to 0: web-1 first.
	set.Spec.Replicas = new(int32)
	if _, err := f.client.AppsV1().StatefulSets("ns").Update(context.Background(), set, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Fatalf("pods %v, want web-1 deleted first", got)
	}
}

func TestSyncParallel(t *testing.T) {
	f := newFixture(t, newSet("web", 3).parallel().get())
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0", "web-1", "web-2"}) {
		t.Fatalf("pods %v", got)
	}
}

func TestSyncClaimsUnsupported(t *testing.T) {
	f := newFixture(t, newSet("web", 2).claims("data").get())
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); len(got) != 0 {
		t.Fatalf("pods %v created for a set with claims", got)
	}
	want := "Warning FailedCreate Create Claim data-web-0 for Pod web-0 in StatefulSet web failed error: persistent volumes are not bound or mounted by this cluster yet"
	if ev := f.events(); !slices.Contains(ev, want) {
		t.Errorf("events %v", ev)
	}
	set := f.set("web")
	if len(set.Status.Conditions) != 1 || set.Status.Conditions[0].Type != ReplicaFailure || set.Status.Conditions[0].Reason != "FailedCreate" {
		t.Errorf("conditions %+v", set.Status.Conditions)
	}
}

func TestSyncAdoptsOrphanAndRecreatesFailed(t *testing.T) {
	set := newSet("web", 1).get()
	orphan := mkPod(set, 0, "", failed)
	orphan.OwnerReferences = nil
	f := newFixture(t, set, orphan)
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	var patched, deleted bool
	for _, a := range f.client.Actions() {
		patched = patched || (a.GetVerb() == "patch" && a.GetResource().Resource == "pods")
		deleted = deleted || (a.GetVerb() == "delete" && a.GetResource().Resource == "pods")
	}
	if !patched || !deleted {
		t.Errorf("adopted %v, deleted the failed pod %v", patched, deleted)
	}
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	if got := f.podNames(); !slices.Equal(got, []string{"web-0"}) {
		t.Errorf("pods %v, want web-0 recreated", got)
	}
}

func TestSyncCreateFailure(t *testing.T) {
	f := newFixture(t, newSet("web", 1).get())
	f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	if err := f.sync("ns/web"); err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("sync error %v", err)
	}
	ev := f.events()
	if len(ev) == 0 || !strings.HasPrefix(ev[0], "Warning FailedCreate Create Pod web-0 in StatefulSet web failed error: quota exceeded") {
		t.Errorf("events %v", ev)
	}
	// The status is recorded anyway.
	if f.set("web").Status.ObservedGeneration != 1 {
		t.Error("status not written after a failed create")
	}
}

func TestSyncRevisionHistoryLimit(t *testing.T) {
	set := newSet("web", 0).get()
	set.Spec.RevisionHistoryLimit = new(int32)
	f := newFixture(t, set)
	for i, image := range []string{"img:1", "img:2", "img:3"} {
		s := f.set("web")
		s.Spec.Template.Spec.Containers[0].Image = image
		s.Generation = int64(i + 1)
		if _, err := f.client.AppsV1().StatefulSets("ns").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		f.refresh()
		if err := f.sync("ns/web"); err != nil {
			t.Fatal(err)
		}
	}
	// Each sync's current revision is the previous template (a set without pods completes
	// its update at once, for the next sync): the third sync keeps img:2 and img:3 and
	// deletes img:1.
	revs, _ := f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	var numbers []int64
	for _, r := range revs.Items {
		numbers = append(numbers, r.Revision)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int64{2, 3}) {
		t.Errorf("revisions %v kept with revisionHistoryLimit 0, want 2 and 3", numbers)
	}
	s := f.set("web")
	if s.Status.CurrentRevision != s.Status.UpdateRevision {
		t.Errorf("a set without pods completes its update at once: %+v", s.Status)
	}

	// Rolling back to img:2 renumbers its revision rather than writing a new one.
	s.Spec.Template.Spec.Containers[0].Image = "img:2"
	s.Generation = 4
	if _, err := f.client.AppsV1().StatefulSets("ns").Update(context.Background(), s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync("ns/web"); err != nil {
		t.Fatal(err)
	}
	revs, _ = f.client.AppsV1().ControllerRevisions("ns").List(context.Background(), metav1.ListOptions{})
	numbers = nil
	for _, r := range revs.Items {
		numbers = append(numbers, r.Revision)
	}
	slices.Sort(numbers)
	if !slices.Equal(numbers, []int64{3, 4}) {
		t.Errorf("revisions %v after a rollback, want 3 and the old img:2 one renumbered 4", numbers)
	}
}

func TestSyncDeletedSet(t *testing.T) {
	f := newFixture(t)
	if err := f.sync("ns/gone"); err != nil {
		t.Errorf("a deleted set: %v", err)
	}
}

func TestSyncPanicIsRecovered(t *testing.T) {
	f := newFixture(t, newSet("web", 1).get())
	old := reconcile
	reconcile = func(*Controller, context.Context, string) error { panic("boom") }
	t.Cleanup(func() { reconcile = old })
	err := recovery.Sync(context.Background(), controllerName, func() error { return reconcile(f.c, context.Background(), "ns/web") })
	if !recovery.IsPanic(err) {
		t.Errorf("panic not recovered: %v", err)
	}
}
