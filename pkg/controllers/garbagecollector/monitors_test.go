package garbagecollector

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func resourceList(gv string, resources ...string) *metav1.APIResourceList {
	list := &metav1.APIResourceList{GroupVersion: gv}
	for _, r := range resources {
		list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: true, Verbs: []string{"delete", "list", "watch"}})
	}
	return list
}

func monitored(gc *GarbageCollector) []string {
	var out []string
	for _, r := range gc.monitors.resources() {
		out = append(out, r.Resource)
	}
	slices.Sort(out)
	return out
}

func TestMonitorsFollowDiscoveryAndSkipWhatFailsToList(t *testing.T) {
	f := newFixture(t, newObject("ConfigMap", "ns", "cm", "c1"))
	// Listing secrets is refused: the collector syncs without them.
	f.client.PrependReactor("list", "secrets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("forbidden for the test")
	})
	mapper := f.gc.mapper.(*resettableMapper)
	f.discovery.set([]*metav1.APIResourceList{resourceList("v1", "configmaps", "secrets", "events")}, nil)
	known := f.gc.resyncMonitors(f.ctx, nil)
	t.Cleanup(f.gc.monitors.stop)
	if got := monitored(f.gc); !slices.Equal(got, []string{"configmaps", "secrets"}) {
		t.Fatalf("monitored %v, want configmaps and secrets (events are ignored)", got)
	}
	if mapper.resets != 1 {
		t.Errorf("the mapper was reset %d times, want once for the new resources", mapper.resets)
	}
	waitFor(t, "the monitors synced, the failing one skipped", f.gc.IsSynced)
	f.drain()
	if !f.gc.GraphHasUID("c1") {
		t.Error("the config map's monitor did not feed the graph")
	}

	// Nothing changed: no reset.
	known = f.gc.resyncMonitors(f.ctx, known)
	if mapper.resets != 1 {
		t.Errorf("the mapper was reset %d times after an unchanged discovery, want 1", mapper.resets)
	}
	// A group that fails discovery keeps its synced monitors; a resource gone is stopped.
	failure := &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{{Version: "v1"}: errors.New("down")}}
	f.discovery.set([]*metav1.APIResourceList{resourceList("v1", "pods")}, failure)
	known = f.gc.resyncMonitors(f.ctx, known)
	if got := monitored(f.gc); !slices.Equal(got, []string{"configmaps", "pods"}) {
		t.Errorf("after a partial discovery failure, monitored %v, want configmaps (synced, kept) and pods (new); secrets never synced", got)
	}
	f.discovery.set([]*metav1.APIResourceList{resourceList("v1", "pods")}, nil)
	f.gc.resyncMonitors(f.ctx, known)
	if got := monitored(f.gc); !slices.Equal(got, []string{"pods"}) {
		t.Errorf("monitored %v, want pods only", got)
	}
}

func TestNoDiscoveredResourcesKeepsTheMonitors(t *testing.T) {
	f := newFixture(t)
	f.discovery.set([]*metav1.APIResourceList{resourceList("v1", "configmaps")}, nil)
	known := f.gc.resyncMonitors(f.ctx, nil)
	t.Cleanup(f.gc.monitors.stop)
	f.discovery.set(nil, errors.New("discovery down"))
	f.gc.resyncMonitors(f.ctx, known)
	if got := monitored(f.gc); !slices.Equal(got, []string{"configmaps"}) {
		t.Errorf("monitored %v after a failed discovery, want configmaps kept", got)
	}
}

// sharedStub hands out one typed informer for one resource.
type sharedStub struct {
	resource schema.GroupVersionResource
	informer cache.SharedIndexInformer
}

func (s sharedStub) Informer(resource schema.GroupVersionResource, _ schema.GroupVersionKind) (cache.SharedIndexInformer, bool) {
	return s.informer, resource == s.resource
}

func TestSharedInformerIsJoinedNotWatchedAgain(t *testing.T) {
	f := newFixture(t, newObject("ConfigMap", "ns", "cm", "c1"))
	kube := kubefake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p1"}})
	factory := informers.NewSharedInformerFactory(kube, 0)
	podInformer := factory.Core().V1().Pods().Informer()
	stop := make(chan struct{})
	factory.Start(stop)
	t.Cleanup(func() { close(stop); factory.Shutdown() })
	f.gc.monitors.shared = sharedStub{resource: pods, informer: podInformer}

	f.discovery.set([]*metav1.APIResourceList{resourceList("v1", "configmaps", "pods")}, nil)
	f.gc.resyncMonitors(f.ctx, nil)
	waitFor(t, "the monitors synced", f.gc.IsSynced)
	f.drain()
	if !f.gc.GraphHasUID("p1") || !f.gc.GraphHasUID("c1") {
		t.Fatal("the shared pod informer or the own config map monitor did not feed the graph")
	}
	for _, a := range f.client.Actions() {
		if a.GetResource() == pods {
			t.Errorf("the collector's metadata client %s pods, beside the shared informer", a.GetVerb())
		}
	}
	// The cached object the collector reads is the shared informer's typed one.
	if store, ok := f.gc.monitors.store(pods); !ok {
		t.Error("no store for pods")
	} else if _, exists, _ := store.GetByKey("ns/p"); !exists {
		t.Error("the pods' store is not the shared informer's")
	}

	// Stopping the monitors leaves the shared informer running, without the collector's handler.
	f.gc.monitors.stop()
	if podInformer.IsStopped() {
		t.Error("stopping the collector's monitors stopped the shared informer")
	}
	if _, err := kube.CoreV1().Pods("ns").Create(f.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "q", UID: "q1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the shared informer saw the new pod", func() bool {
		_, exists, _ := podInformer.GetStore().GetByKey("ns/q")
		return exists
	})
	f.drain()
	if f.gc.GraphHasUID("q1") {
		t.Error("a pod created after the monitors stopped reached the graph: the handler was not removed")
	}
}
