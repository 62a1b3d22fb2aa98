package queue

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// panickyGate panics in PreEnqueue for pods named "bad".
type panickyGate struct{}

func (panickyGate) Name() string { return "PanickyGate" }

func (panickyGate) PreEnqueue(_ context.Context, pod *v1.Pod) *framework.Status {
	if pod.Name == "bad" {
		panic("boom")
	}
	return nil
}

// TestAPanickingPreEnqueueOrHintCostsOnlyItsPod: a PreEnqueue plugin's panic gates only its
// pod (an Error from the plugin); a QueueingHint's panic queues the pod, as a hint's error
// does; both are counted.
func TestAPanickingPreEnqueueOrHintCostsOnlyItsPod(t *testing.T) {
	nodeAdd := framework.ClusterEvent{Resource: framework.Node, ActionType: framework.Add}
	panickyHint := func(klog.Logger, *v1.Pod, interface{}, interface{}) (framework.QueueingHint, error) { panic("boom") }
	q, _, logger := newTestQueue(t,
		WithPreEnqueuePluginMap(map[string][]framework.PreEnqueuePlugin{v1.DefaultSchedulerName: {panickyGate{}}}),
		WithPodInitialBackoffDuration(0),
		hintsFor(QueueingHintMap{nodeAdd: {{PluginName: "NodeThing", QueueingHintFn: panickyHint}}}))
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(framework.PanicComponent))

	bad, good := st.MakePod().Name("bad").UID("bad").Obj(), st.MakePod().Name("good").UID("good").Obj()
	q.Add(logger, bad)
	q.Add(logger, good)
	if got := where(q, bad); got != QueueGated {
		t.Errorf("the pod whose PreEnqueue panicked is in %q, want gated", got)
	}
	if pInfo := q.unschedulablePods.get(bad.UID); pInfo == nil || pInfo.GatingPlugin != "PanickyGate" {
		t.Errorf("the gated pod's gating plugin is not PanickyGate: %+v", pInfo)
	}
	popAndFail(t, q, logger, good, "NodeThing")
	q.MoveAllToActiveOrBackoffQueue(logger, nodeAdd, nil, st.MakeNode().Name("n").Obj(), nil)
	if got := where(q, good); got != QueueActive {
		t.Errorf("after a hint panicked, the pod is in %q, want active (queued as on a hint's error)", got)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(framework.PanicComponent)); got != before+2 {
		t.Errorf("berth_recovered_panics_total{component=scheduler} = %v, want %v", got, before+2)
	}
}
