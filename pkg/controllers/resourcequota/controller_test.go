package resourcequota

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/sharedmetadata"
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
	c := newController(client.CoreV1(), factory, nil, func() ([]*metav1.APIResourceList, error) { return resources, nil }, clock.RealClock{})
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

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// discoveryStub answers discovery with what the test last set.
type discoveryStub struct {
	mu    sync.Mutex
	lists []*metav1.APIResourceList
}

func (d *discoveryStub) set(lists ...*metav1.APIResourceList) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lists = lists
}

func (d *discoveryStub) discover() ([]*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lists, nil
}

// TestCustomResourceCountedWhileDiscovered: a custom resource discovery reports later is
// watched through a shared metadata informer and counted as count/widgets.example.com, its
// deletion frees the quota, and once discovery no longer reports it its monitor stops and
// lets the informer go.
func TestCustomResourceCountedWhileDiscovered(t *testing.T) {
	widget := func(name string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	}
	scheme := metadatafake.NewTestScheme()
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("Widget"), &metav1.PartialObjectMetadata{})
	scheme.AddKnownTypeWithName(widgets.GroupVersion().WithKind("WidgetList"), &metav1.PartialObjectMetadataList{})
	meta := metadatafake.NewSimpleMetadataClient(scheme, widget("a"), widget("b"))
	shared := sharedmetadata.New(meta)
	defer shared.Shutdown()

	client := fake.NewClientset(rq("q", list("count/widgets.example.com", "5"), nil, nil))
	factory := informers.NewSharedInformerFactory(client, 0)
	disco := &discoveryStub{}
	disco.set(&metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Namespaced: true, Verbs: metav1.Verbs{"create", "list", "watch", "delete"}}}})
	c := newController(client.CoreV1(), factory, shared, disco.discover, clock.RealClock{})
	c.DiscoveryPeriod = 20 * time.Millisecond
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

	waitUsed := func(what string, want corev1.ResourceList) {
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
			t.Fatalf("%s: status.used = %v, want %v: %v", what, last, want, err)
		}
	}
	// Not discovered: nothing counts it, so the quota's status has no usage for it.
	waitUsed("before discovery", corev1.ResourceList{})

	disco.set(&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", Namespaced: true, Verbs: metav1.Verbs{"create", "list", "watch", "delete"}}}})
	waitUsed("discovered", list("count/widgets.example.com", "2"))
	if err := meta.Resource(widgets).Namespace("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUsed("a widget deleted", list("count/widgets.example.com", "1"))

	// Gone from discovery: the monitor stops, the evaluator goes, the informer is let go.
	held := shared.Acquire(ctx, widgets) // the controller's informer, while it holds it
	held.Release()
	disco.set()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return held.Informer.IsStopped(), nil
	})
	if err != nil {
		t.Fatalf("the widgets' informer still runs after discovery stopped reporting them: %v", err)
	}
	if c.registry.Get(widgets.GroupResource()) != nil {
		t.Error("widgets are still counted after discovery stopped reporting them")
	}
}
