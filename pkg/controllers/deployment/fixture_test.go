package deployment

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

// fixture is a controller on a fake clientset whose informer caches the test refreshes from
// the clientset before each sync, with a fake clock for the conditions and the queue. It
// plays the API server's part where the fake does not (UIDs, creation times, generation)
// and, through markAvailable, the ReplicaSet controller's.
type fixture struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	clock    *testingclock.FakeClock
	recorder *events.FakeRecorder
	uids     int
}

func newFixture(t *testing.T, objects ...runtime.Object) *fixture {
	f := &fixture{t: t, client: fake.NewClientset(objects...), clock: testingclock.NewFakeClock(t0), recorder: events.NewFakeRecorder(1000)}
	// The API server's part: a created object gets a UID and a creation time; a changed
	// Deployment template a new generation.
	f.client.PrependReactor("create", "replicasets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		rs := a.(clienttesting.CreateAction).GetObject().(*appsv1.ReplicaSet)
		f.uids++
		rs.UID = types.UID(fmt.Sprintf("uid-created-%d", f.uids))
		rs.CreationTimestamp = metav1.NewTime(f.clock.Now())
		return false, nil, nil
	})
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	f.c = NewDeploymentController(f.client, f.factory.Apps().V1().Deployments(), f.factory.Apps().V1().ReplicaSets(), f.factory.Core().V1().Pods())
	f.c.clock = f.clock
	f.c.queue.ShutDown()
	f.c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment", Clock: f.clock})
	f.c.Recorder = f.recorder
	t.Cleanup(f.c.queue.ShutDown)
	return f
}

// refresh fills the informer caches with what the clientset holds.
func (f *fixture) refresh() {
	f.t.Helper()
	ctx := context.Background()
	ds, err := f.client.AppsV1().Deployments("").List(ctx, metav1.ListOptions{})
	f.check(err)
	rss, err := f.client.AppsV1().ReplicaSets("").List(ctx, metav1.ListOptions{})
	f.check(err)
	pods, err := f.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	f.check(err)
	replace := func(inf cache.SharedIndexInformer, objs []any) {
		f.check(inf.GetIndexer().Replace(objs, ""))
	}
	var objs []any
	for i := range ds.Items {
		objs = append(objs, &ds.Items[i])
	}
	replace(f.factory.Apps().V1().Deployments().Informer(), objs)
	objs = nil
	for i := range rss.Items {
		objs = append(objs, &rss.Items[i])
	}
	replace(f.factory.Apps().V1().ReplicaSets().Informer(), objs)
	objs = nil
	for i := range pods.Items {
		objs = append(objs, &pods.Items[i])
	}
	replace(f.factory.Core().V1().Pods().Informer(), objs)
}

func (f *fixture) check(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync refreshes the caches and syncs ns/name once, which must succeed.
func (f *fixture) sync(name string) {
	f.t.Helper()
	f.check(f.trySync(name))
}

func (f *fixture) trySync(name string) error {
	f.t.Helper()
	f.refresh()
	_, ctx := ktesting.NewTestContext(f.t)
	return f.c.syncDeployment(ctx, "ns/"+name)
}

func (f *fixture) deployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.client.AppsV1().Deployments("ns").Get(context.Background(), name, metav1.GetOptions{})
	f.check(err)
	return d
}

// updateDeployment changes the stored Deployment with change, bumping the generation as the
// API server does for a spec change.
func (f *fixture) updateDeployment(name string, change func(d *appsv1.Deployment)) {
	f.t.Helper()
	d := f.deployment(name)
	before := d.Spec.DeepCopy()
	change(d)
	if !equality.Semantic.DeepEqual(before, &d.Spec) {
		d.Generation++
	}
	_, err := f.client.AppsV1().Deployments("ns").Update(context.Background(), d, metav1.UpdateOptions{})
	f.check(err)
}

// replicaSets is the stored ReplicaSets, oldest first.
func (f *fixture) replicaSets() []*appsv1.ReplicaSet {
	f.t.Helper()
	list, err := f.client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
	f.check(err)
	out := make([]*appsv1.ReplicaSet, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	findNewReplicaSet(&appsv1.Deployment{}, out) // sorts oldest first
	return out
}

// replicaSetOf is the stored ReplicaSet whose template has image.
func (f *fixture) replicaSetOf(image string) *appsv1.ReplicaSet {
	f.t.Helper()
	for _, rs := range f.replicaSets() {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs
		}
	}
	f.t.Fatalf("no replica set of image %s", image)
	return nil
}

// markAvailable plays the ReplicaSet controller: every ReplicaSet's status reports its spec
// replicas, of which those of images in available are all ready and available.
func (f *fixture) markAvailable(available ...string) {
	f.t.Helper()
	for _, rs := range f.replicaSets() {
		n := *rs.Spec.Replicas
		rs.Status = appsv1.ReplicaSetStatus{Replicas: n, FullyLabeledReplicas: n, ObservedGeneration: rs.Generation, TerminatingReplicas: new(int32(0))}
		for _, image := range available {
			if rs.Spec.Template.Spec.Containers[0].Image == image {
				rs.Status.ReadyReplicas, rs.Status.AvailableReplicas = n, n
			}
		}
		_, err := f.client.AppsV1().ReplicaSets("ns").UpdateStatus(context.Background(), rs, metav1.UpdateOptions{})
		f.check(err)
	}
}

// events drains the events recorded so far.
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

// progressing is the stored Deployment's Progressing condition ("" when none) as
// "<status> <reason>: <message>".
func (f *fixture) progressing(name string) string {
	f.t.Helper()
	c := getCondition(f.deployment(name).Status, appsv1.DeploymentProgressing)
	if c == nil {
		return ""
	}
	return fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
}

// withImage is a change of the template's image.
func withImage(image string) func(*appsv1.Deployment) {
	return func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Image = image }
}

// sizes is the stored ReplicaSets' spec replicas by image, sorted: "img:1=3 img:2=0".
func (f *fixture) sizes() string {
	var parts []string
	for _, rs := range f.replicaSets() {
		parts = append(parts, fmt.Sprintf("%s=%d", rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

// pod is a running pod of rs.
func pod(name string, rs *appsv1.ReplicaSet) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: rs.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: new(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

// reactWith is a reactor failing the action with err.
func reactWith(err error) clienttesting.ReactionFunc {
	return func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, err }
}

// terminatingRefusal is NamespaceLifecycle admission's answer to a create in a terminating
// namespace.
func terminatingRefusal() error {
	err := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "replicasets"}, "",
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes,
		metav1.StatusCause{Type: corev1.NamespaceTerminatingCause, Field: "metadata.namespace"})
	return err
}
