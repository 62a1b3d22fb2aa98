package replicaset

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// runController runs a ReplicaSet controller with its informers on client until the test ends.
func runController(t *testing.T, client *fake.Clientset, recorder events.EventRecorder) context.Context {
	t.Helper()
	var names atomic.Int32
	client.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, names.Add(1))
			pod.UID = types.UID(pod.Name)
		}
		return false, nil, nil
	})
	// As the API server's status subresource: a status update changes only the status, so
	// that one racing a spec update does not undo it (the fake stores whole objects).
	client.PrependReactor("update", "replicasets", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() != "status" {
			return false, nil, nil
		}
		update := action.(clienttesting.UpdateAction).GetObject().(*appsv1.ReplicaSet)
		stored, err := client.Tracker().Get(action.GetResource(), update.Namespace, update.Name)
		if err != nil {
			return true, nil, err
		}
		rs := stored.(*appsv1.ReplicaSet).DeepCopy()
		rs.Status = update.Status
		if err := client.Tracker().Update(action.GetResource(), rs, rs.Namespace); err != nil {
			return true, nil, err
		}
		return true, rs, nil
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewReplicaSetController(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods())
	c.Recorder = recorder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})
	return ctx
}

func waitForStatus(t *testing.T, ctx context.Context, client *fake.Clientset, name string, cond func(appsv1.ReplicaSetStatus) bool) {
	t.Helper()
	var last appsv1.ReplicaSetStatus
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		rs, err := client.AppsV1().ReplicaSets("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = rs.Status
		return cond(rs.Status), nil
	})
	if err != nil {
		t.Fatalf("ReplicaSet %s: status %+v: %v", name, last, err)
	}
}

// TestRunConverges runs the whole loop on a fake API: the pods are created once, observed
// through the informer, and counted in the status; a scale-down deletes the surplus.
func TestRunConverges(t *testing.T) {
	client := fake.NewClientset(newRS("web", 3))
	ctx := runController(t, client, nil)
	waitForStatus(t, ctx, client, "web", func(s appsv1.ReplicaSetStatus) bool { return s.Replicas == 3 && s.ObservedGeneration == 1 })
	pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 3 {
		t.Fatalf("%d pods (%v), want exactly 3", len(pods.Items), err)
	}

	rs, err := client.AppsV1().ReplicaSets("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs.Spec.Replicas = ptr.To[int32](1)
	rs.Generation = 2
	if _, err := client.AppsV1().ReplicaSets("default").Update(ctx, rs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForStatus(t, ctx, client, "web", func(s appsv1.ReplicaSetStatus) bool { return s.Replicas == 1 && s.ObservedGeneration == 2 })
	if pods, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); len(pods.Items) != 1 {
		t.Fatalf("%d pods after scaling down, want 1", len(pods.Items))
	}
}

// TestPanicIsRecovered: a sync that panics costs its owner a retry and a FailedSync event,
// not the process; the other owners are synced.
func TestPanicIsRecovered(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		if key == "default/bad" && n <= 2 {
			var rs *appsv1.ReplicaSet
			_ = rs.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, key)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(newRS("bad", 1), newRS("good", 1))
	recorder := events.NewFakeRecorder(100)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component("replicaset")))
	ctx := runController(t, client, recorder)
	for _, name := range []string{"good", "bad"} {
		waitForStatus(t, ctx, client, name, func(s appsv1.ReplicaSetStatus) bool { return s.Replicas == 1 })
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component("replicaset"))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	failedSync := 0
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.HasPrefix(e, "Warning FailedSync internal error in controller/replicaset: recovered from panic") {
			failedSync++
		}
	}
	if failedSync != 2 {
		t.Errorf("%d FailedSync events, want 2", failedSync)
	}
}
