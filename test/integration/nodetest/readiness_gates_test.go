package nodetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/test/integration/framework"
)

// gateTimeout is far below the pod workers' resync (a minute and more): Ready must follow a
// gate because the node agent saw it change, not because the pod happened to sync again.
const gateTimeout = 10 * time.Second

func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// TestNodeFollowsReadinessGates: a pod with two readiness gates is Ready only once both gates'
// conditions, patched by someone else, are True; Ready turns False again when one turns
// False; and the node agent's own status writes keep the gates' conditions as they are.
func TestNodeFollowsReadinessGates(t *testing.T) {
	const gate1, gate2 = "k8s.io/test-condition1", "k8s.io/test-condition2"
	c := framework.StartShared(t)
	n := StartNode(t, c, "scenario-gates", NodeOptions{})
	n.WaitForNodeReady(t, podTimeout)
	pod := MakePod("gated").Node(n.Name).Container("app", "busybox:1.36").Obj()
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate1}, {ConditionType: gate2}}
	pod = createPod(t, c, pod)
	pods := c.Client.CoreV1().Pods(pod.Namespace)

	ready := func(want v1.ConditionStatus, reason, message string) func(*v1.Pod) bool {
		return func(p *v1.Pod) bool {
			r := podCondition(p, v1.PodReady)
			return p.Status.Phase == v1.PodRunning && r != nil && r.Status == want && r.Reason == reason && r.Message == message
		}
	}
	patch := func(gate string, status v1.ConditionStatus) {
		t.Helper()
		body := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":%q}]}}`, gate, status)
		if _, err := pods.Patch(context.Background(), pod.Name, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatalf("patching %s to %s: %v", gate, status, err)
		}
	}

	WaitForPod(t, c.Client, pod.Namespace, pod.Name, podTimeout, "Running with its gates missing", ready(v1.ConditionFalse, "ReadinessGatesNotReady",
		`corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`))

	patch(gate1, v1.ConditionTrue)
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, gateTimeout, "waiting on the second gate only", ready(v1.ConditionFalse, "ReadinessGatesNotReady",
		`corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`))

	patch(gate2, v1.ConditionTrue)
	got := WaitForPod(t, c.Client, pod.Namespace, pod.Name, gateTimeout, "Ready with both gates True", ready(v1.ConditionTrue, "", ""))
	for _, g := range []v1.PodConditionType{gate1, gate2} {
		if cond := podCondition(got, g); cond == nil || cond.Status != v1.ConditionTrue {
			t.Errorf("gate condition %s = %+v after the node agent wrote Ready, want it kept True", g, cond)
		}
	}

	patch(gate1, v1.ConditionFalse)
	WaitForPod(t, c.Client, pod.Namespace, pod.Name, gateTimeout, "not Ready once the first gate is False", ready(v1.ConditionFalse, "ReadinessGatesNotReady",
		`the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False`))
}
