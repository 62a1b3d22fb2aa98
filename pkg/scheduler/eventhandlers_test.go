package scheduler

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPodInformerDropsManagedFields: the scheduler's pod informer keeps unfinished pods,
// without their managedFields.
func TestPodInformerDropsManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}
	client := fake.NewSimpleClientset(
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "running", Namespace: "ns", ManagedFields: managed}, Status: v1.PodStatus{Phase: v1.PodRunning}},
	)
	factory := informers.NewSharedInformerFactory(client, 0)
	registerPodInformer(factory)
	lister := factory.Core().V1().Pods().Lister()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer factory.Shutdown() // after cancel: it waits for the informers to stop
	defer cancel()
	factory.Start(ctx.Done())
	var pod *v1.Pod
	err := wait.PollUntilContextCancel(ctx, 10*time.Millisecond, true, func(context.Context) (bool, error) {
		var err error
		pod, err = lister.Pods("ns").Get("running")
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the pod never reached the informer: %v", err)
	}
	if pod.ManagedFields != nil {
		t.Errorf("cached pod kept its managedFields: %v", pod.ManagedFields)
	}
}
