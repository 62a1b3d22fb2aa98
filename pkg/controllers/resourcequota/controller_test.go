package resourcequota

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"
)

// TestControllerCountsAndReplenishes runs the controller on a fake API: a new quota gets
// its status, and deleting a pod brings its usage down.
func TestControllerCountsAndReplenishes(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: list("cpu", "250m")}}}}}
	}
	client := fake.NewClientset(pod("a"), pod("b"), rq("q", list("pods", "10", "requests.cpu", "2", "count/deployments.apps", "1"), nil, nil))
	factory := informers.NewSharedInformerFactory(client, 0)
	resources := []*metav1.APIResourceList{{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Namespaced: true, Verbs: metav1.Verbs{"create", "list", "watch", "delete"}}}}}
	c := newController(client.CoreV1(), factory, resources, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- c.Run(ctx, 1) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()

	waitUsed := func(want corev1.ResourceList) {
		t.Helper()
		var last corev1.ResourceList
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			q, err := client.CoreV1().ResourceQuotas("ns").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = q.Status.Used
			return quota.Equals(q.Status.Hard, q.Spec.Hard) && quota.Equals(last, want), nil
		})
		if err != nil {
			t.Fatalf("status.used = %v, want %v: %v", last, want, err)
		}
	}
	waitUsed(list("pods", "2", "requests.cpu", "500m", "count/deployments.apps", "0"))
	if err := client.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed(list("pods", "1", "requests.cpu", "250m", "count/deployments.apps", "0"))
}
