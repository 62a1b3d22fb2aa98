package disruption

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// TestRun runs the whole controller on a fake API, with a sync that panics twice for one
// budget: both budgets get their status, the panics are counted and evented, and Run stops
// when its context ends.
func TestRun(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		if key == "default/bad" && n <= 2 {
			var pdb *policyv1.PodDisruptionBudget
			_ = pdb.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, key)
	}
	t.Cleanup(func() { reconcile = orig })

	bad := budget(minAvailable(intstr.FromInt32(1)))
	bad.Name = "bad"
	client := fake.NewClientset(budget(minAvailable(intstr.FromInt32(1))), bad, pod("a", true, nil, rsKind), pod("b", true, nil, rsKind))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Policy().V1().PodDisruptionBudgets(),
		factory.Core().V1().ReplicationControllers(), factory.Apps().V1().ReplicaSets(),
		factory.Apps().V1().Deployments(), factory.Apps().V1().StatefulSets())
	recorder := events.NewFakeRecorder(100)
	c.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	done := make(chan error)
	go func() { done <- c.Run(ctx, 1) }()

	for _, name := range []string{"budget", "bad"} {
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			pdb, err := client.PolicyV1().PodDisruptionBudgets("default").Get(ctx, name, metav1.GetOptions{})
			return err == nil && pdb.Status.ObservedGeneration == 3 && pdb.Status.DisruptionsAllowed == 1, nil
		})
		if err != nil {
			t.Fatalf("budget %s: %v", name, err)
		}
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	failedSync := 0
	for len(recorder.Events) > 0 {
		if e := <-recorder.Events; strings.HasPrefix(e, "Warning FailedSync internal error in controller/disruption: recovered from panic") {
			failedSync++
		}
	}
	if failedSync != 2 {
		t.Errorf("%d FailedSync events, want 2", failedSync)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
