package nodetest

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/berth-cluster/berth/pkg/node"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
	"github.com/berth-cluster/berth/pkg/util/panics"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// A panic in one pod's sync (injected through the test hook) costs that pod a failed sync and
// nothing more: the node agent lives, the pod gets a FailedSync event and the InternalError
// waiting reason, it is retried after the back-off and runs, another pod on the node runs
// meanwhile, and berth_recovered_panics_total{component=podworker} moved.
func TestNodeContainsAPanicInOnePodsSync(t *testing.T) {
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-panic", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(podworkers.Component))

	var panicked atomic.Int32
	restore := node.SetSyncPodTestHook(func(pod *v1.Pod) {
		if pod.Name == "victim" && pod.Spec.NodeName == n.Name && panicked.Add(1) == 1 {
			var limits map[v1.ResourceName]int
			limits[v1.ResourceCPU]++ // a nil map write: the kind of bug an unchecked optional field makes
		}
	})
	t.Cleanup(restore)

	victim := createPod(t, c, MakePod("victim").Node(n.Name).Container("app", "busybox:1.36").Obj())
	bystander := createPod(t, c, MakePod("bystander").Namespace(victim.Namespace).Node(n.Name).Container("app", "busybox:1.36").Obj())

	// The bystander runs while the victim waits for its retry.
	WaitForPod(t, c.Client, bystander.Namespace, bystander.Name, podTimeout, "Running", Running)
	got := WaitForPod(t, c.Client, victim.Namespace, victim.Name, podTimeout, "waiting with InternalError or Running", func(p *v1.Pod) bool {
		return WaitingReason(p) == "InternalError" || Running(p)
	})
	if Running(got) {
		t.Logf("the victim's InternalError status was overtaken by its retry before it was seen")
	} else if msg := got.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "internal error in podworker: recovered from panic: assignment to entry in nil map") {
		t.Errorf("the victim waits with message %q", msg)
	}
	WaitForPod(t, c.Client, victim.Namespace, victim.Name, 2*podTimeout, "Running after the retry", Running)
	if n := panicked.Load(); n < 2 {
		t.Errorf("the victim's sync ran %d times, want a retry after the panic", n)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(podworkers.Component)); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=podworker} = %v, want %v", got, before+1)
	}

	var events *v1.EventList
	deadline := time.Now().Add(podTimeout)
	for {
		var err error
		events, err = c.Client.CoreV1().Events(victim.Namespace).List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("involvedObject.name", victim.Name).String(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if hasEvent(events, "FailedSync", "error syncing pod: internal error in podworker: recovered from panic") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no Warning FailedSync event naming the panic for the victim; events: %+v", events.Items)
		}
		time.Sleep(100 * time.Millisecond)
	}
	bystanderNow, err := c.Client.CoreV1().Pods(bystander.Namespace).Get(context.Background(), bystander.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s := bystanderNow.Status.ContainerStatuses; len(s) != 1 || s[0].RestartCount != 0 || !Running(bystanderNow) {
		t.Errorf("the bystander was disturbed: %+v", bystanderNow.Status)
	}
}

func hasEvent(events *v1.EventList, reason, message string) bool {
	for _, e := range events.Items {
		if e.Type == v1.EventTypeWarning && e.Reason == reason && strings.Contains(e.Message, message) {
			return true
		}
	}
	return false
}
