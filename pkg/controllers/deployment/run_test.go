package deployment

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// TestRunRollsOutAndSurvivesAPanic runs the controller on started informers: the first
// sync of "web" panics (a controller bug); the controller lives, counts it, emits a Warning
// FailedSync event, and on the retry creates the ReplicaSet. The ReplicaSet's status change
// (playing the ReplicaSet controller) reaches the Deployment through the ReplicaSet handler.
func TestRunRollsOutAndSurvivesAPanic(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, key string) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			var d *appsv1.Deployment
			_ = d.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, key)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(newDeployment("web", 2, nil, nil))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewDeploymentController(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods())
	recorder := events.NewFakeRecorder(100)
	c.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()

	var rs *appsv1.ReplicaSet
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.AppsV1().ReplicaSets("ns").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			return false, nil
		}
		rs = &list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no replica set: %v", err)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=controller/deployment} = %v, want %v", got, before+1)
	}
	if e := <-recorder.Events; !strings.HasPrefix(e, "Warning FailedSync internal error in controller/deployment: recovered from panic") {
		t.Errorf("first event %q, want a Warning FailedSync naming the panic", e)
	}

	// The ReplicaSet controller reports the pods available: the Deployment's status follows.
	rs.ResourceVersion = "2" // the fake keeps none of its own; the handler skips updates without a new one
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: ptr.To[int32](0)}
	if _, err := client.AppsV1().ReplicaSets("ns").UpdateStatus(ctx, rs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		d, err := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == 2 && d.Status.UpdatedReplicas == 2, nil
	})
	if err != nil {
		d, _ := client.AppsV1().Deployments("ns").Get(context.Background(), "web", metav1.GetOptions{})
		list, _ := client.AppsV1().ReplicaSets("ns").List(context.Background(), metav1.ListOptions{})
		t.Fatalf("the deployment's status did not follow its replica set: %v\nstatus %+v\nreplica sets %+v", err, d.Status, list.Items)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestHandlersQueue checks which Deployments each informer event queues.
func TestHandlersQueue(t *testing.T) {
	web := newDeployment("web", 1, nil, nil)
	recreate := newDeployment("db", 1, nil, nil)
	recreate.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	f := newFixture(t, web, recreate)
	f.refresh()
	owned := func(name string, d *appsv1.Deployment) *appsv1.ReplicaSet {
		rs := newRS(name, 1, t0)
		rs.Labels = map[string]string{"app": d.Name}
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(d, controllerKind)}
		return rs
	}
	drain := func() []string {
		var keys []string
		for f.c.queue.Len() > 0 {
			k, _ := f.c.queue.Get()
			keys = append(keys, k)
			f.c.queue.Done(k)
			f.c.queue.Forget(k)
		}
		return keys
	}
	expect := func(what string, want ...string) {
		t.Helper()
		got := drain()
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("%s: queued %v, want %v", what, got, want)
		}
	}

	rs := owned("web-1", web)
	f.c.addReplicaSet(rs)
	expect("owned replica set added", "ns/web")

	orphan := newRS("orphan", 1, t0)
	orphan.Labels = map[string]string{"app": "db"}
	f.c.addReplicaSet(orphan)
	expect("orphan added", "ns/db")

	stranger := owned("web-2", web)
	stranger.OwnerReferences[0].UID = "someone-else"
	f.c.addReplicaSet(stranger)
	expect("replica set of a deployment of the same name, recreated")

	moved := rs.DeepCopy()
	moved.ResourceVersion = "2"
	moved.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(recreate, controllerKind)}
	f.c.updateReplicaSet(rs, moved)
	expect("controller changed", "ns/web", "ns/db")

	same := rs.DeepCopy()
	f.c.updateReplicaSet(rs, same)
	expect("resync, same version")

	relabelled := orphan.DeepCopy()
	relabelled.ResourceVersion = "2"
	relabelled.Labels = map[string]string{"app": "web"}
	f.c.updateReplicaSet(orphan, relabelled)
	expect("orphan relabelled", "ns/web")

	f.c.deleteReplicaSet(rs)
	expect("owned replica set deleted", "ns/web")

	// A pod's deletion matters only to a Recreate Deployment.
	rollingRS, recreateRS := owned("web-3", web), owned("db-1", recreate)
	f.check(f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rollingRS))
	f.check(f.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(recreateRS))
	f.c.deletePod(pod("p1", rollingRS))
	expect("rolling deployment's pod deleted")
	f.c.deletePod(pod("p2", recreateRS))
	expect("recreate deployment's pod deleted", "ns/db")
}

func TestMinReadySecondsFollowsTheDeployment(t *testing.T) {
	f := newFixture(t, newDeployment("web", 1, nil, nil))
	f.sync("web")
	f.updateDeployment("web", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = 30 })
	f.sync("web")
	rss := f.replicaSets()
	if len(rss) != 1 || rss[0].Spec.MinReadySeconds != 30 {
		t.Errorf("replica sets %s, minReadySeconds %d: want the same one, at 30", f.sizes(), rss[0].Spec.MinReadySeconds)
	}
}

func TestNamespaceTerminatingIsNotRetried(t *testing.T) {
	f := newFixture(t, newDeployment("web", 1, nil, nil))
	f.client.PrependReactor("create", "replicasets", reactWith(terminatingRefusal()))
	if err := f.trySync("web"); err != nil {
		t.Errorf("sync: %v, want nothing to retry", err)
	}
}
