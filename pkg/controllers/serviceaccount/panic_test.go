package serviceaccount

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// TestAPanicInOneNamespacesSyncIsRetried: the sync of namespace "bad" panics twice (the test
// hook in reconcile); the controller lives, counts the panics, emits a Warning FailedSync
// event on the namespace, retries "bad" with back-off until it gets its "default" service
// account, and serves "good" meanwhile.
func TestAPanicInOneNamespacesSyncIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, name string) error {
		mu.Lock()
		calls[name]++
		n := calls[name]
		mu.Unlock()
		if name == "bad" && n <= 2 {
			var ns *corev1.Namespace
			_ = ns.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, name)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(namespace("bad", corev1.NamespaceActive), namespace("good", corev1.NamespaceActive))
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Namespaces(), factory.Core().V1().ServiceAccounts())
	recorder := events.NewFakeRecorder(10)
	c.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()

	for _, ns := range []string{"good", "bad"} {
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, DefaultName, metav1.GetOptions{})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace %s did not get its default service account: %v", ns, err)
		}
	}
	mu.Lock()
	if calls["bad"] != 3 {
		t.Errorf("bad was synced %d times, want 3 (two panics, then the sync that created the account)", calls["bad"])
	}
	mu.Unlock()
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total{component=controller/serviceaccount} = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/serviceaccount: recovered from panic: runtime error: invalid memory address or nil pointer dereference") {
			t.Errorf("event %q, want a Warning FailedSync naming the panic", e)
		}
	default:
		t.Error("no event for the panics")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run returned %v after its context ended, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}
