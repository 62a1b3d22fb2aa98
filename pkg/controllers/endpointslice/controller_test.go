package endpointslice

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	discovery "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

const ns = "ns"

// Fixtures.

var node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}

// newService is a ClusterIP Service selecting app=web, port "http" 80 → targetPort.
func newService(name string, targetPort intstr.IntOrString, opts ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports:      []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: targetPort}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

func headless(svc *corev1.Service)        { svc.Spec.ClusterIP = corev1.ClusterIPNone }
func publishNotReady(svc *corev1.Service) { svc.Spec.PublishNotReadyAddresses = true }

// newPod is a ready pod labelled app=web on n1 with IP 10.0.<i/250>.<i%250+1>.
func newPod(i int, opts ...func(*corev1.Pod)) *corev1.Pod {
	ip := fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("pod-uid-%d", i)),
			Labels: map[string]string{"app": "web"}, ResourceVersion: "1"},
		Spec: corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			PodIP:      ip,
			PodIPs:     []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func notReady(pod *corev1.Pod) {
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
}

func terminating(pod *corev1.Pod) {
	now := metav1.Now()
	pod.DeletionTimestamp = &now
}

func namedPort(name string, port int32) func(*corev1.Pod) {
	return func(pod *corev1.Pod) {
		pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	}
}

func labelled(l map[string]string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Labels = l }
}

// newClient is a fake clientset that, as the API server does, names EndpointSlices from
// their generateName, gives them a UID and tracks their generation.
func newClient(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	var n atomic.Int64
	client.PrependReactor("create", "endpointslices", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s := action.(clienttesting.CreateAction).GetObject().(*discovery.EndpointSlice)
		i := n.Add(1)
		if s.GenerateName != "" {
			s.Name, s.GenerateName = fmt.Sprintf("%s%05d", s.GenerateName, i), ""
		}
		s.UID = types.UID(fmt.Sprintf("slice-uid-%d", i))
		s.Generation = 1
		return false, nil, nil
	})
	client.PrependReactor("update", "endpointslices", func(action clienttesting.Action) (bool, runtime.Object, error) {
		s := action.(clienttesting.UpdateAction).GetObject().(*discovery.EndpointSlice)
		old, err := client.Tracker().Get(action.GetResource(), action.GetNamespace(), s.Name)
		if err != nil {
			return true, nil, err
		}
		// The UID is the stored one's, whatever the update says; the reconciler updates a
		// slice it recycles with a new object.
		s.UID, s.Generation = old.(*discovery.EndpointSlice).UID, old.(*discovery.EndpointSlice).Generation+1
		return false, nil, nil
	})
	return client
}

// harness is a controller whose informers' caches a test fills by hand, synced by calling
// syncService: no goroutines, no waiting.
type harness struct {
	t       *testing.T
	client  *fake.Clientset
	factory informers.SharedInformerFactory
	c       *Controller
}

func newHarness(t *testing.T, maxPerSlice int32, objects ...runtime.Object) *harness {
	t.Helper()
	client := newClient()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices(), maxPerSlice)
	t.Cleanup(func() { c.queue.ShutDown(); c.topologyQueue.ShutDown() })
	h := &harness{t: t, client: client, factory: factory, c: c}
	h.set(node)
	for _, o := range objects {
		h.set(o)
	}
	return h
}

// set puts obj in its informer's cache.
func (h *harness) set(obj runtime.Object) {
	h.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		err = h.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	case *corev1.Service:
		err = h.factory.Core().V1().Services().Informer().GetIndexer().Update(o)
	case *corev1.Node:
		err = h.factory.Core().V1().Nodes().Informer().GetIndexer().Update(o)
	default:
		h.t.Fatalf("set %T", obj)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// sync syncs ns/name, then copies the API's slices into the cache, as the informer would.
func (h *harness) sync(name string) {
	h.t.Helper()
	if err := h.c.syncService(context.Background(), ns+"/"+name); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	indexer := h.factory.Discovery().V1().EndpointSlices().Informer().GetIndexer()
	for _, o := range indexer.List() {
		_ = indexer.Delete(o)
	}
	for _, s := range h.slices() {
		if err := indexer.Add(s.DeepCopy()); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *harness) slices() []discovery.EndpointSlice {
	h.t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return list.Items
}

// writes are the verbs of the API calls made since the last clearActions.
func (h *harness) writes() []string {
	var verbs []string
	for _, a := range h.client.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			verbs = append(verbs, a.GetVerb())
		}
	}
	return verbs
}

func endpointCount(slices []discovery.EndpointSlice) (n int) {
	for _, s := range slices {
		n += len(s.Endpoints)
	}
	return n
}

func conditions(ep discovery.Endpoint) string {
	b := func(p *bool) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("ready=%s serving=%s terminating=%s", b(ep.Conditions.Ready), b(ep.Conditions.Serving), b(ep.Conditions.Terminating))
}

func TestThreePodsMakeOneSliceOfThreeReadyEndpoints(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080))
	h := newHarness(t, 100, svc, newPod(0), newPod(1), newPod(2),
		newPod(3, labelled(map[string]string{"app": "other"})),                       // not selected
		newPod(4, func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil }), // no IP yet
		newPod(5, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }))      // terminal
	h.sync("web")

	got := h.slices()
	if len(got) != 1 {
		t.Fatalf("%d slices, want 1", len(got))
	}
	s := got[0]
	if s.AddressType != discovery.AddressTypeIPv4 || !strings.HasPrefix(s.Name, "web-") {
		t.Errorf("slice %s of type %s", s.Name, s.AddressType)
	}
	wantLabels := map[string]string{discovery.LabelServiceName: "web", discovery.LabelManagedBy: ControllerName}
	for k, v := range wantLabels {
		if s.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, s.Labels[k], v)
		}
	}
	if _, ok := s.Labels[corev1.IsHeadlessService]; ok {
		t.Errorf("a ClusterIP service's slice is labelled headless")
	}
	if len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" || *s.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("ports %+v", s.Ports)
	}
	if got := s.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-01T00:00:00Z" {
		t.Errorf("%s = %q, want the service's creation", corev1.EndpointsLastChangeTriggerTime, got)
	}
	if len(s.Endpoints) != 3 {
		t.Fatalf("%d endpoints, want 3: %+v", len(s.Endpoints), s.Endpoints)
	}
	var addrs []string
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
		if c := conditions(ep); c != "ready=true serving=true terminating=false" {
			t.Errorf("%v: %s", ep.Addresses, c)
		}
		if ep.NodeName == nil || *ep.NodeName != "n1" || ep.Zone == nil || *ep.Zone != "zone-a" {
			t.Errorf("%v: node %v zone %v", ep.Addresses, ep.NodeName, ep.Zone)
		}
		if ep.TargetRef == nil || ep.TargetRef.Kind != "Pod" || ep.TargetRef.Namespace != ns || !strings.HasPrefix(ep.TargetRef.Name, "pod-") || ep.TargetRef.UID == "" {
			t.Errorf("%v: targetRef %+v", ep.Addresses, ep.TargetRef)
		}
		if ep.Hostname != nil {
			t.Errorf("%v: hostname %q without spec.hostname", ep.Addresses, *ep.Hostname)
		}
	}
	slices.Sort(addrs)
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}; !slices.Equal(addrs, want) {
		t.Errorf("addresses %v, want %v", addrs, want)
	}

	// Nothing changed: nothing written.
	h.client.ClearActions()
	h.sync("web")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("a second sync with nothing changed wrote %v", w)
	}
}

func TestOwnerReference(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080))
	h := newHarness(t, 100, svc, newPod(0))
	h.sync("web")
	s := h.slices()[0]
	owner := metav1.GetControllerOf(&s)
	if owner == nil || owner.APIVersion != "v1" || owner.Kind != "Service" || owner.Name != "web" || owner.UID != svc.UID ||
		owner.BlockOwnerDeletion == nil || !*owner.BlockOwnerDeletion {
		t.Errorf("controller reference %+v", owner)
	}
}

func TestEndpointConditions(t *testing.T) {
	tests := []struct {
		name string
		svc  []func(*corev1.Service)
		pod  []func(*corev1.Pod)
		want string
	}{
		{name: "ready", want: "ready=true serving=true terminating=false"},
		{name: "not ready", pod: []func(*corev1.Pod){notReady}, want: "ready=false serving=false terminating=false"},
		{name: "not ready, publishNotReadyAddresses", svc: []func(*corev1.Service){publishNotReady}, pod: []func(*corev1.Pod){notReady},
			want: "ready=true serving=false terminating=false"},
		{name: "terminating, still ready", pod: []func(*corev1.Pod){terminating}, want: "ready=false serving=true terminating=true"},
		{name: "terminating, not ready", pod: []func(*corev1.Pod){terminating, notReady}, want: "ready=false serving=false terminating=true"},
		{name: "terminating, publishNotReadyAddresses", svc: []func(*corev1.Service){publishNotReady}, pod: []func(*corev1.Pod){terminating},
			want: "ready=true serving=true terminating=true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 100, newService("web", intstr.FromInt32(8080), tt.svc...), newPod(0, tt.pod...))
			h.sync("web")
			got := h.slices()
			if len(got) != 1 || len(got[0].Endpoints) != 1 {
				t.Fatalf("slices %+v", got)
			}
			if c := conditions(got[0].Endpoints[0]); c != tt.want {
				t.Errorf("%s, want %s", c, tt.want)
			}
		})
	}
}

// TestNamedTargetPort: pods naming different numbers for the target port land in different
// slices; a pod without the port gets a slice without ports.
func TestNamedTargetPort(t *testing.T) {
	h := newHarness(t, 100, newService("web", intstr.FromString("web")),
		newPod(0, namedPort("web", 8080)), newPod(1, namedPort("web", 8080)), newPod(2, namedPort("web", 9090)),
		newPod(3, namedPort("other", 7070)))
	h.sync("web")
	byPort := map[string]int{}
	for _, s := range h.slices() {
		key := "none"
		if len(s.Ports) == 1 {
			key = fmt.Sprint(*s.Ports[0].Port)
		}
		byPort[key] += len(s.Endpoints)
	}
	if want := map[string]int{"8080": 2, "9090": 1, "none": 1}; fmt.Sprint(byPort) != fmt.Sprint(want) {
		t.Errorf("endpoints by port %v, want %v", byPort, want)
	}
}

func TestTwoHundredFiftyPodsMakeThreeSlices(t *testing.T) {
	objects := []runtime.Object{newService("web", intstr.FromInt32(8080))}
	for i := range 250 {
		objects = append(objects, newPod(i))
	}
	h := newHarness(t, 100, objects...)
	h.sync("web")
	got := h.slices()
	var sizes []int
	for _, s := range got {
		sizes = append(sizes, len(s.Endpoints))
	}
	slices.Sort(sizes)
	if want := []int{50, 100, 100}; !slices.Equal(sizes, want) {
		t.Errorf("slice sizes %v, want %v", sizes, want)
	}
}

func TestHeadlessAndHostname(t *testing.T) {
	h := newHarness(t, 100, newService("web", intstr.FromInt32(8080), headless),
		newPod(0, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "web-0", "web" }),
		newPod(1, func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "web-1", "elsewhere" }))
	h.sync("web")
	got := h.slices()
	if len(got) != 1 {
		t.Fatalf("%d slices", len(got))
	}
	if v, ok := got[0].Labels[corev1.IsHeadlessService]; !ok || v != "" {
		t.Errorf("labels %v, want %s", got[0].Labels, corev1.IsHeadlessService)
	}
	hostnames := map[string]string{}
	for _, ep := range got[0].Endpoints {
		if ep.Hostname != nil {
			hostnames[ep.TargetRef.Name] = *ep.Hostname
		}
	}
	if fmt.Sprint(hostnames) != fmt.Sprint(map[string]string{"pod-0": "web-0"}) {
		t.Errorf("hostnames %v", hostnames)
	}
}

func TestServicesLeftAlone(t *testing.T) {
	noSelector := newService("manual", intstr.FromInt32(8080), func(s *corev1.Service) { s.Spec.Selector = nil })
	external := newService("ext", intstr.FromInt32(8080), func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "example.com", ""
	})
	h := newHarness(t, 100, noSelector, external, newPod(0))
	h.sync("manual")
	h.sync("ext")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("wrote %v", w)
	}
}

// TestSelectorChange: the slices follow the new selector, in place, and no slice is left over.
func TestSelectorChange(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080))
	h := newHarness(t, 100, svc, newPod(0), newPod(1), newPod(2, labelled(map[string]string{"app": "api"})))
	h.sync("web")
	if n := endpointCount(h.slices()); n != 2 {
		t.Fatalf("%d endpoints before, want 2", n)
	}
	svc = svc.DeepCopy()
	svc.Spec.Selector = map[string]string{"app": "api"}
	svc.ResourceVersion = "2"
	h.set(svc)
	h.sync("web")
	got := h.slices()
	if len(got) != 1 || len(got[0].Endpoints) != 1 || got[0].Endpoints[0].TargetRef.Name != "pod-2" {
		t.Errorf("after the change: %+v", got)
	}
	// No pods at all: an empty placeholder slice stays.
	svc = svc.DeepCopy()
	svc.Spec.Selector = map[string]string{"app": "none"}
	h.set(svc)
	h.sync("web")
	if got := h.slices(); len(got) != 1 || len(got[0].Endpoints) != 0 {
		t.Errorf("with no pods: %+v", got)
	}
}

// TestStaleSlicesAreDeleted: slices of a bigger set, or of another owner, go.
func TestStaleSlicesAreDeleted(t *testing.T) {
	objects := []runtime.Object{newService("web", intstr.FromInt32(8080))}
	for i := range 150 {
		objects = append(objects, newPod(i))
	}
	h := newHarness(t, 100, objects...)
	h.sync("web")
	if n := len(h.slices()); n != 2 {
		t.Fatalf("%d slices, want 2", n)
	}
	for i := 1; i < 150; i++ {
		if err := h.factory.Core().V1().Pods().Informer().GetIndexer().Delete(newPod(i)); err != nil {
			t.Fatal(err)
		}
	}
	h.sync("web")
	if got := h.slices(); len(got) != 1 || len(got[0].Endpoints) != 1 {
		t.Errorf("after the pods went: %d slices", len(got))
	}

	// The Service is deleted and recreated: the old owner's slice is replaced.
	svc := newService("web", intstr.FromInt32(8080), func(s *corev1.Service) { s.UID = "uid-new" })
	h.set(svc)
	h.sync("web")
	got := h.slices()
	if len(got) != 1 || metav1.GetControllerOf(&got[0]).UID != "uid-new" || len(got[0].Endpoints) != 1 {
		t.Errorf("after the service was recreated: %+v", got)
	}

	// The Service is deleted: its slices go with it.
	if err := h.factory.Core().V1().Services().Informer().GetIndexer().Delete(svc); err != nil {
		t.Fatal(err)
	}
	h.sync("web")
	if got := h.slices(); len(got) != 0 {
		t.Errorf("after the service was deleted: %d slices", len(got))
	}
}

// run starts the controller with informers on client and returns a function stopping it.
func run(t *testing.T, client *fake.Clientset, recorder events.EventRecorder, workers int) (*Controller, context.Context) {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices(), 100)
	c.Recorder = recorder
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	factory.Start(ctx.Done())
	done := make(chan error)
	go func() { done <- c.Run(ctx, workers) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})
	return c, ctx
}

func waitForSlices(t *testing.T, ctx context.Context, client *fake.Clientset, what string, cond func([]discovery.EndpointSlice) bool) {
	t.Helper()
	var last []discovery.EndpointSlice
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		last = list.Items
		return cond(list.Items), nil
	})
	if err != nil {
		t.Fatalf("%s: %v; slices %+v", what, err, last)
	}
}

// TestController: run with informers, the controller follows pods appearing, becoming
// unready, and a selector change.
func TestController(t *testing.T) {
	client := newClient(node, newService("web", intstr.FromInt32(8080)), newPod(0), newPod(1))
	_, ctx := run(t, client, nil, 2)
	waitForSlices(t, ctx, client, "two endpoints", func(s []discovery.EndpointSlice) bool { return endpointCount(s) == 2 })

	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "a new pod", func(s []discovery.EndpointSlice) bool { return endpointCount(s) == 3 })

	unready := newPod(0, notReady)
	unready.ResourceVersion = "2"
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, unready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "an unready pod", func(s []discovery.EndpointSlice) bool {
		for _, sl := range s {
			for _, ep := range sl.Endpoints {
				if ep.TargetRef.Name == "pod-0" {
					return !*ep.Conditions.Ready
				}
			}
		}
		return false
	})

	svc := newService("web", intstr.FromInt32(8080))
	svc.Spec.Selector = map[string]string{"app": "api"}
	svc.ResourceVersion = "2"
	if _, err := client.CoreV1().Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "the selector changed", func(s []discovery.EndpointSlice) bool { return len(s) == 1 && endpointCount(s) == 0 })
	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(3, labelled(map[string]string{"app": "api"})), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "a pod of the new selector", func(s []discovery.EndpointSlice) bool {
		return len(s) == 1 && endpointCount(s) == 1 && s[0].Endpoints[0].TargetRef.Name == "pod-3"
	})
}

// TestAPanicInOneServicesSyncIsRetried: a panicking sync is recovered, counted, reported on
// the Service and retried; the other Services are served meanwhile.
func TestAPanicInOneServicesSyncIsRetried(t *testing.T) {
	oldBackoff := syncBackoff
	syncBackoff = 10 * time.Millisecond
	t.Cleanup(func() { syncBackoff = oldBackoff })
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		if key == ns+"/bad" && n <= 2 {
			var svc *corev1.Service
			_ = svc.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, key)
	}
	t.Cleanup(func() { reconcile = orig })

	client := newClient(node, newService("bad", intstr.FromInt32(8080)), newService("good", intstr.FromInt32(8080)), newPod(0))
	recorder := events.NewFakeRecorder(10)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))
	_, ctx := run(t, client, recorder, 2)
	for _, svc := range []string{"good", "bad"} {
		waitForSlices(t, ctx, client, "service "+svc, func(s []discovery.EndpointSlice) bool {
			for _, sl := range s {
				if sl.Labels[discovery.LabelServiceName] == svc && len(sl.Endpoints) == 1 {
					return true
				}
			}
			return false
		})
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/endpointslice: recovered from panic") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the panics")
	}
}

// TestDualStack: a Service of both IP families gets a slice of each address type, each with
// the pods' addresses of its family.
func TestDualStack(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080), func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
	})
	dual := func(i int) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: fmt.Sprintf("fd00::1:%d", i+1)})
		}
	}
	h := newHarness(t, 100, svc, newPod(0, dual(0)), newPod(1, dual(1)))
	h.sync("web")
	addrs := map[discovery.AddressType][]string{}
	for _, s := range h.slices() {
		for _, ep := range s.Endpoints {
			addrs[s.AddressType] = append(addrs[s.AddressType], ep.Addresses...)
		}
	}
	for _, a := range addrs {
		slices.Sort(a)
	}
	want := map[discovery.AddressType][]string{
		discovery.AddressTypeIPv4: {"10.0.0.1", "10.0.0.2"},
		discovery.AddressTypeIPv6: {"fd00::1:1", "fd00::1:2"},
	}
	if fmt.Sprint(addrs) != fmt.Sprint(want) {
		t.Errorf("addresses by type %v, want %v", addrs, want)
	}
}

// TestAFailedWriteIsReported: a slice the API refuses is a Warning FailedToUpdateEndpointSlices
// on the Service and a failed sync, which the queue retries.
func TestAFailedWriteIsReported(t *testing.T) {
	h := newHarness(t, 100, newService("web", intstr.FromInt32(8080)), newPod(0))
	recorder := events.NewFakeRecorder(10)
	h.c.Recorder = recorder
	h.client.PrependReactor("create", "endpointslices", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("the API server is unavailable")
	})
	if err := h.c.syncService(context.Background(), ns+"/web"); err == nil {
		t.Fatal("sync succeeded with every create refused")
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning "+FailedToUpdateEndpointSlices+" Error updating Endpoint Slices for Service ns/web") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the failed write")
	}
}
