package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// TestHandlePanicUndoesTheAssumptionAndReportsASchedulerError: a panic recovered at the
// boundary of scheduleOne or of the binding goroutine forgets the pod it had assumed and
// reports the attempt as kube-scheduler reports an internal error: PodScheduled=False with
// reason SchedulerError and the panic in the message.
func TestHandlePanicUndoesTheAssumptionAndReportsASchedulerError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, fwk := newGeneratedScheduler(t, ctx)
	logger := klog.FromContext(ctx)
	s.Cache.AddNode(logger, st.MakeNode().Name("n1").Obj())
	pod, err := s.client.CoreV1().Pods("default").Create(ctx, st.MakePod().Name("p").Namespace("default").UID("p").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	assumed := pod.DeepCopy()
	assumed.Spec.NodeName = "n1"
	if err := s.Cache.AssumePod(logger, assumed); err != nil {
		t.Fatal(err)
	}

	s.handlePanic(ctx, fwk, &framework.QueuedPodInfo{PodInfo: framework.NewPodInfo(pod)},
		&panics.Error{Component: framework.PanicComponent, Value: "boom"}, time.Now())

	if still, _ := s.Cache.IsAssumedPod(pod); still {
		t.Error("the pod is still assumed in the cache")
	}
	got, err := s.client.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cond *v1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == v1.PodScheduled {
			cond = &got.Status.Conditions[i]
		}
	}
	if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != v1.PodReasonSchedulerError || !strings.Contains(cond.Message, "recovered from panic: boom") {
		t.Errorf("PodScheduled condition %+v, want False/SchedulerError with the panic", cond)
	}
}
