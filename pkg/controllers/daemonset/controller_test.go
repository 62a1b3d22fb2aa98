package daemonset

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/controllers/history"
)

// fixture is a controller on a fake clientset whose caches the test refills from the client
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
	client.PrependReactor("create", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
		pod := a.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			// The fake does not generate names.
			pod.Name = pod.GenerateName + strings.ReplaceAll(pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0], ".", "-")
			pod.UID = types.UID("uid-" + pod.Name)
		}
		if pod.Status.Phase == "" {
			pod.Status.Phase = corev1.PodPending
		}
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewDaemonSetsController(client, factory.Apps().V1().DaemonSets(), factory.Apps().V1().ControllerRevisions(),
		factory.Core().V1().Pods(), factory.Core().V1().Nodes())
	c.clock = clocktesting.NewFakeClock(now)
	recorder := events.NewFakeRecorder(100)
	c.Recorder = recorder
	t.Cleanup(c.queue.ShutDown)
	f := &fixture{t: t, client: client, factory: factory, c: c, recorder: recorder}
	f.refresh()
	return f
}

func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	var sets, pods, revs, nodes []any
	dl, _ := f.client.AppsV1().DaemonSets("").List(ctx, metav1.ListOptions{})
	for i := range dl.Items {
		sets = append(sets, &dl.Items[i])
	}
	pl, _ := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	for i := range pl.Items {
		pods = append(pods, &pl.Items[i])
	}
	rl, _ := f.client.AppsV1().ControllerRevisions("").List(ctx, metav1.ListOptions{})
	for i := range rl.Items {
		revs = append(revs, &rl.Items[i])
	}
	nl, _ := f.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	for i := range nl.Items {
		nodes = append(nodes, &nl.Items[i])
	}
	for inf, objs := range map[cache.SharedIndexInformer][]any{
		f.factory.Apps().V1().DaemonSets().Informer():          sets,
		f.factory.Core().V1().Pods().Informer():                pods,
		f.factory.Apps().V1().ControllerRevisions().Informer(): revs,
		f.factory.Core().V1().Nodes().Informer():               nodes,
	} {
		if err := inf.GetIndexer().Replace(objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
}

// sync syncs the DaemonSet and then, as the informers would, observes every pod now stored.
func (f *fixture) sync() error {
	f.t.Helper()
	err := f.c.sync(context.Background(), "kube-system/d")
	f.refresh()
	f.c.expect.Delete("kube-system/d/create")
	f.c.expect.Delete("kube-system/d/delete")
	return err
}

func (f *fixture) pods() []corev1.Pod {
	pl, _ := f.client.CoreV1().Pods("kube-system").List(context.Background(), metav1.ListOptions{})
	return pl.Items
}

// podNodes are the target nodes of the stored pods, sorted.
func (f *fixture) podNodes() []string {
	var out []string
	for i := range f.pods() {
		p := f.pods()[i]
		n, err := targetNode(&p)
		if err != nil {
			f.t.Fatalf("pod %s: %v", p.Name, err)
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return out
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

func (f *fixture) ds() *appsv1.DaemonSet {
	ds, err := f.client.AppsV1().DaemonSets("kube-system").Get(context.Background(), "d", metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return ds
}

func TestSyncThreeNodes(t *testing.T) {
	ds := newDS("d")
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	f := newFixture(t, ds,
		node("n1", map[string]string{"role": "worker"}),
		node("tainted", map[string]string{"role": "worker"}, taint("dedicated", corev1.TaintEffectNoSchedule)),
		node("unselected", nil))

	// 1. One pod, for n1 only, placed by node affinity and carrying the revision's hash.
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if got := f.podNodes(); !slices.Equal(got, []string{"n1"}) {
		t.Fatalf("pods for %v, want n1 only", got)
	}
	pod := f.pods()[0]
	revs, _ := f.client.AppsV1().ControllerRevisions("kube-system").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 1 {
		t.Fatalf("%d revisions", len(revs.Items))
	}
	hash := revs.Items[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
	if revs.Items[0].Name != "d-"+hash || pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hash || pod.Spec.NodeName != "" {
		t.Errorf("revision %s, pod labels %v, nodeName %q", revs.Items[0].Name, pod.Labels, pod.Spec.NodeName)
	}
	if ref := metav1.GetControllerOf(&pod); ref == nil || ref.Kind != "DaemonSet" {
		t.Errorf("pod controller %+v", ref)
	}
	if len(pod.Spec.Tolerations) != 6 {
		t.Errorf("tolerations %+v", pod.Spec.Tolerations)
	}
	if ev := f.events(); !slices.Contains(ev, "Normal SuccessfulCreate Created pod: "+pod.Name) {
		t.Errorf("events %v", ev)
	}

	// 2. Steady state: no pod writes at all.
	f.client.ClearActions()
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "list" && a.GetVerb() != "get" {
			t.Errorf("steady state wrote %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	// The status counts the pod once the cache has it (the first sync's did not yet).
	s := f.ds().Status
	if s.DesiredNumberScheduled != 1 || s.CurrentNumberScheduled != 1 || s.NumberUnavailable != 1 || s.ObservedGeneration != 1 {
		t.Errorf("status %+v", s)
	}

	// 3. The pod runs and is ready, bound to n1; the template changes: the old pod goes
	// (maxUnavailable 1) and a new one comes at the new hash.
	p := f.pods()[0]
	p.Spec.NodeName = "n1"
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := f.client.CoreV1().Pods("kube-system").Update(context.Background(), &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := f.ds()
	d.Spec.Template.Spec.Containers[0].Image = "img:2"
	d.Generation = 2
	if _, err := f.client.AppsV1().DaemonSets("kube-system").Update(context.Background(), d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.pods()) != 0 {
		t.Fatalf("pods %v, want the old one deleted", f.podNodes())
	}
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	pods := f.pods()
	if len(pods) != 1 || pods[0].Spec.Containers[0].Image != "img:2" || pods[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
		t.Fatalf("after the update: %+v", pods)
	}
	revs, _ = f.client.AppsV1().ControllerRevisions("kube-system").List(context.Background(), metav1.ListOptions{})
	if len(revs.Items) != 2 {
		t.Errorf("%d revisions, want the old and the new", len(revs.Items))
	}

	// 4. A NoExecute taint on n1 evicts the daemon.
	n, _ := f.client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	n.Spec.Taints = []corev1.Taint{taint("dedicated", corev1.TaintEffectNoExecute)}
	if _, err := f.client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.pods()) != 0 {
		t.Errorf("pods %v on a NoExecute node", f.podNodes())
	}
}

func TestSyncFailedPodBackoff(t *testing.T) {
	// At the current template's hash, so that the rolling update leaves it to the core loop.
	failed := dsPod("failed", "n1", history.ComputeHash(&newDS("d").Spec.Template, nil), false)
	failed.Status.Phase = corev1.PodFailed
	failed.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(newDS("d"), controllerKind)}
	ds := newDS("d")
	// The back-off is per node and observed generation.
	ds.Status.ObservedGeneration = 1
	f := newFixture(t, ds, node("n1", nil), failed)
	fakeClock := clocktesting.NewFakeClock(now)
	f.c.backoff.Clock = fakeClock
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.pods()) != 0 {
		t.Fatal("the failed pod was not deleted")
	}
	ev := f.events()
	if !slices.Contains(ev, "Warning FailedDaemonPod Found failed daemon pod kube-system/failed on node n1, will try to kill it") {
		t.Errorf("events %v", ev)
	}
	// The same node's next failure waits for the back-off.
	again := failed.DeepCopy()
	again.Name, again.UID, again.ResourceVersion = "failed2", "uid-failed2", ""
	if _, err := f.client.CoreV1().Pods("kube-system").Create(context.Background(), again, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.refresh()
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.pods()) != 1 {
		t.Errorf("a failure within the back-off was deleted at once: %d pods", len(f.pods()))
	}
}

func TestSyncCreateFailureSlowStart(t *testing.T) {
	f := newFixture(t, newDS("d"), node("n1", nil), node("n2", nil), node("n3", nil), node("n4", nil))
	f.client.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("quota exceeded")
	})
	err := f.c.sync(context.Background(), "kube-system/d")
	if err == nil || !strings.Contains(err.Error(), "quota exceeded") {
		t.Fatalf("sync error %v", err)
	}
	creates := 0
	for _, a := range f.client.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			creates++
		}
	}
	if creates != 1 {
		t.Errorf("%d creates, want 1: slow start stops after the first failed batch", creates)
	}
	if !f.c.satisfied("kube-system/d") {
		t.Error("failed and skipped creates are still expected")
	}
}

func TestSyncSelectingAll(t *testing.T) {
	ds := newDS("d")
	ds.Spec.Selector = &metav1.LabelSelector{}
	f := newFixture(t, ds, node("n1", nil))
	if err := f.sync(); err != nil {
		t.Fatal(err)
	}
	if len(f.pods()) != 0 {
		t.Error("a DaemonSet selecting everything made pods")
	}
	if ev := f.events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning SelectingAll") {
		t.Errorf("events %v", ev)
	}
}

func TestNodeChangedFilters(t *testing.T) {
	ds := newDS("d")
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"role": "worker"}
	f := newFixture(t, ds)
	n := node("n1", nil)
	// A node the DaemonSet does not want, with no pod there: nothing to do.
	f.c.nodeChanged(nil, n)
	if f.c.queue.Len() != 0 {
		t.Error("an irrelevant node queued the DaemonSet")
	}
	labelled := n.DeepCopy()
	labelled.Labels = map[string]string{"role": "worker"}
	// A heartbeat (same labels and taints) is ignored before any lookup.
	f.c.nodeChanged(labelled, labelled.DeepCopy())
	if f.c.queue.Len() != 0 {
		t.Error("a heartbeat queued the DaemonSet")
	}
	f.c.nodeChanged(n, labelled)
	if f.c.queue.Len() != 1 {
		t.Error("a node that now wants the daemon did not queue it")
	}
}

// TestRevisionAddedDoesNotQueue: as upstream's addHistory, a controlled revision's add queues
// nothing (its DaemonSet wrote it); its update does.
func TestRevisionAddedDoesNotQueue(t *testing.T) {
	ds := newDS("d")
	f := newFixture(t, ds)
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "d-1", Namespace: ds.Namespace, ResourceVersion: "1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}}}
	f.c.ownedChanged(nil, cr)
	if f.c.queue.Len() != 0 {
		t.Error("adding a controlled revision queued its DaemonSet")
	}
	changed := cr.DeepCopy()
	changed.ResourceVersion = "2"
	f.c.ownedChanged(cr, changed)
	if f.c.queue.Len() != 1 {
		t.Error("changing a controlled revision did not queue its DaemonSet")
	}
}
