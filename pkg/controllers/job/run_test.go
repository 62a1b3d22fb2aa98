package job

import (
	"context"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2/ktesting"
)

// TestRunEndToEnd runs the controller with its workers on started informers: a Job added
// through the API gets its pod, the pod's success completes it, and Run returns once its
// context ends.
func TestRunEndToEnd(t *testing.T) {
	period := syncBatchPeriod
	syncBatchPeriod = 10 * time.Millisecond
	t.Cleanup(func() { syncBatchPeriod = period })

	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Batch().V1().Jobs())
	c.Recorder = events.NewFakeRecorder(100)
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()

	job := newJob("e2e", 1, 1)
	// The fake clientset does not name pods from generateName: name them by hand.
	client.PrependReactor("create", "pods", nameFromGenerateName())
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pod *corev1.Pod
	poll(t, "the Job's pod", func() bool {
		pods, _ := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if len(pods.Items) == 1 {
			pod = &pods.Items[0]
		}
		return pod != nil
	})
	pod.Status.Phase = corev1.PodSucceeded
	// The fake clientset keeps the objects' resourceVersion as written, and the controller
	// ignores an update that does not change it (a resync): an API server would set a new one.
	pod.ResourceVersion = "2"
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "the Job's completion", func() bool {
		j, err := client.BatchV1().Jobs(ns).Get(ctx, "e2e", metav1.GetOptions{})
		return err == nil && FinishedCondition(j) == batchv1.JobComplete && j.Status.Succeeded == 1
	})

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	factory.Shutdown()
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
