package endpoints

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// newService is a ClusterIP Service selecting app=web, port "http" 80 → targetPort.
func newService(name string, targetPort intstr.IntOrString, opts ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1",
			Labels:            map[string]string{"team": "a"},
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
func noSelector(svc *corev1.Service)      { svc.Spec.Selector = nil }

// newPod is a ready pod labelled app=web on node n1 with IP 10.0.<i/250>.<i%250+1>.
func newPod(i int, opts ...func(*corev1.Pod)) *corev1.Pod {
	ip := fmt.Sprintf("10.0.%d.%d", i/250, i%250+1)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("pod-uid-%d", i)),
			Labels: map[string]string{"app": "web"}, ResourceVersion: "1"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c"}}},
		Status: corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  ip,
			PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC))}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	return pod
}

func notReady(pod *corev1.Pod) {
	pod.Status.Conditions[0].Status = corev1.ConditionFalse
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

// newClient is a fake clientset that, as the API server does, gives Endpoints a new
// resourceVersion on every write.
func newClient(objects ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objects...)
	var rv atomic.Int64
	rv.Store(100)
	setVersion := func(action clienttesting.Action) (bool, runtime.Object, error) {
		var obj runtime.Object
		switch a := action.(type) {
		case clienttesting.CreateAction:
			obj = a.GetObject()
		case clienttesting.UpdateAction:
			obj = a.GetObject()
		}
		obj.(*corev1.Endpoints).ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		return false, nil, nil
	}
	client.PrependReactor("create", "endpoints", setVersion)
	client.PrependReactor("update", "endpoints", setVersion)
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

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	client := newClient()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Endpoints())
	t.Cleanup(c.queue.ShutDown)
	h := &harness{t: t, client: client, factory: factory, c: c}
	for _, o := range objects {
		h.set(o)
	}
	return h
}

// set puts obj in its informer's cache, and Endpoints in the API too.
func (h *harness) set(obj runtime.Object) {
	h.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		err = h.factory.Core().V1().Pods().Informer().GetIndexer().Update(o)
	case *corev1.Service:
		err = h.factory.Core().V1().Services().Informer().GetIndexer().Update(o)
	case *corev1.Endpoints:
		err = h.client.Tracker().Add(o)
		if err == nil {
			err = h.factory.Core().V1().Endpoints().Informer().GetIndexer().Update(o)
		}
	default:
		h.t.Fatalf("set %T", obj)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(obj runtime.Object) {
	h.t.Helper()
	var err error
	switch o := obj.(type) {
	case *corev1.Pod:
		err = h.factory.Core().V1().Pods().Informer().GetIndexer().Delete(o)
	case *corev1.Service:
		err = h.factory.Core().V1().Services().Informer().GetIndexer().Delete(o)
	default:
		h.t.Fatalf("remove %T", obj)
	}
	if err != nil {
		h.t.Fatal(err)
	}
}

// sync syncs ns/name, then copies the API's Endpoints into the cache, as the informer would.
func (h *harness) sync(name string) {
	h.t.Helper()
	h.client.ClearActions()
	if err := h.c.syncService(context.Background(), ns+"/"+name); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	indexer := h.factory.Core().V1().Endpoints().Informer().GetIndexer()
	for _, o := range indexer.List() {
		_ = indexer.Delete(o)
	}
	list, err := h.client.CoreV1().Endpoints(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, ep := range list.Items {
		if err := indexer.Add(ep.DeepCopy()); err != nil {
			h.t.Fatal(err)
		}
	}
}

// endpoints are the API's Endpoints named name, nil if there are none.
func (h *harness) endpoints(name string) *corev1.Endpoints {
	h.t.Helper()
	ep, err := h.client.CoreV1().Endpoints(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	return ep
}

// writes are the verbs of the API calls of the last sync, reads aside.
func (h *harness) writes() []string {
	var verbs []string
	for _, a := range h.client.Actions() {
		if v := a.GetVerb(); v != "list" && v != "watch" && v != "get" {
			verbs = append(verbs, v)
		}
	}
	return verbs
}

// ips lists the IPs of addresses.
func ips(addresses []corev1.EndpointAddress) string {
	var out []string
	for _, a := range addresses {
		out = append(out, a.IP)
	}
	return strings.Join(out, ",")
}

func TestThreePodsMakeThreeAddresses(t *testing.T) {
	h := newHarness(t, newService("web", intstr.FromInt32(8080)), newPod(0), newPod(1), newPod(2))
	h.sync("web")
	if w := h.writes(); len(w) != 1 || w[0] != "create" {
		t.Fatalf("writes %v, want one create", w)
	}
	ep := h.endpoints("web")
	if len(ep.Subsets) != 1 {
		t.Fatalf("subsets %+v", ep.Subsets)
	}
	ss := ep.Subsets[0]
	if got := ips(ss.Addresses); got != "10.0.0.1,10.0.0.2,10.0.0.3" || len(ss.NotReadyAddresses) != 0 {
		t.Errorf("addresses %s, not ready %v", got, ss.NotReadyAddresses)
	}
	if len(ss.Ports) != 1 || ss.Ports[0] != (corev1.EndpointPort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}) {
		t.Errorf("ports %+v", ss.Ports)
	}
	a := ss.Addresses[0]
	if a.NodeName == nil || *a.NodeName != "n1" || a.Hostname != "" ||
		a.TargetRef == nil || *a.TargetRef != (corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "pod-0", UID: "pod-uid-0"}) {
		t.Errorf("address %+v", a)
	}
	if ep.Labels[LabelManagedBy] != ControllerName || ep.Labels["team"] != "a" || len(ep.Labels) != 2 {
		t.Errorf("labels %v", ep.Labels)
	}
	// A new Service: its creation time.
	if got := ep.Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-01-01T00:00:00Z" {
		t.Errorf("trigger time %q", got)
	}
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; ok {
		t.Errorf("annotations %v", ep.Annotations)
	}

	// Nothing changed: nothing written, not even for a pod update that does not matter.
	h.sync("web")
	p := newPod(1)
	p.ResourceVersion, p.Annotations = "2", map[string]string{"x": "y"}
	h.set(p)
	h.sync("web")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v for nothing changed", w)
	}

	// A pod goes: an update.
	h.remove(newPod(2))
	h.sync("web")
	if w := h.writes(); len(w) != 1 || w[0] != "update" {
		t.Fatalf("writes %v, want one update", w)
	}
	if got := ips(h.endpoints("web").Subsets[0].Addresses); got != "10.0.0.1,10.0.0.2" {
		t.Errorf("addresses %s after a pod went", got)
	}
}

func TestReadiness(t *testing.T) {
	tests := []struct {
		name                  string
		svc                   *corev1.Service
		pods                  []*corev1.Pod
		wantReady, wantNotRdy string
	}{
		{
			name:      "a not-ready pod is in notReadyAddresses",
			svc:       newService("web", intstr.FromInt32(8080)),
			pods:      []*corev1.Pod{newPod(0), newPod(1, notReady)},
			wantReady: "10.0.0.1", wantNotRdy: "10.0.0.2",
		},
		{
			name:      "terminating and terminal pods are left out",
			svc:       newService("web", intstr.FromInt32(8080)),
			pods:      []*corev1.Pod{newPod(0), newPod(1, terminating), newPod(2, func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded })},
			wantReady: "10.0.0.1",
		},
		{
			name:      "a pod without an IP is left out",
			svc:       newService("web", intstr.FromInt32(8080)),
			pods:      []*corev1.Pod{newPod(0), newPod(1, func(p *corev1.Pod) { p.Status.PodIP, p.Status.PodIPs = "", nil })},
			wantReady: "10.0.0.1",
		},
		{
			name:      "publishNotReadyAddresses: not-ready and terminating pods are ready",
			svc:       newService("web", intstr.FromInt32(8080), publishNotReady),
			pods:      []*corev1.Pod{newPod(0), newPod(1, notReady), newPod(2, terminating)},
			wantReady: "10.0.0.1,10.0.0.2,10.0.0.3",
		},
		{
			name: "an IPv6 Service gets the pods' IPv6 addresses",
			svc: newService("web", intstr.FromInt32(8080), func(s *corev1.Service) {
				s.Spec.ClusterIP, s.Spec.IPFamilies = "fd00::10", []corev1.IPFamily{corev1.IPv6Protocol}
			}),
			pods: []*corev1.Pod{newPod(0, func(p *corev1.Pod) {
				p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00:0::1"})
			}), newPod(1)},
			wantReady: "fd00::1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.svc)
			for _, p := range tt.pods {
				h.set(p)
			}
			h.sync("web")
			var ready, notReady []corev1.EndpointAddress
			for _, ss := range h.endpoints("web").Subsets {
				ready = append(ready, ss.Addresses...)
				notReady = append(notReady, ss.NotReadyAddresses...)
			}
			if got := ips(ready); got != tt.wantReady {
				t.Errorf("ready %s, want %s", got, tt.wantReady)
			}
			if got := ips(notReady); got != tt.wantNotRdy {
				t.Errorf("not ready %s, want %s", got, tt.wantNotRdy)
			}
		})
	}
}

func TestNamedTargetPortMakesOneSubsetPerNumber(t *testing.T) {
	h := newHarness(t, newService("web", intstr.FromString("web")),
		newPod(0, namedPort("web", 8080)), newPod(1, namedPort("web", 9090)), newPod(2, namedPort("other", 7070)))
	h.sync("web")
	got := h.endpoints("web").Subsets
	if len(got) != 2 {
		t.Fatalf("subsets %+v, want two", got)
	}
	for i, want := range []struct {
		ip   string
		port int32
	}{{"10.0.0.1", 8080}, {"10.0.0.2", 9090}} {
		if ips(got[i].Addresses) != want.ip || len(got[i].Ports) != 1 || got[i].Ports[0].Port != want.port || got[i].Ports[0].Name != "http" {
			t.Errorf("subset %d: %+v, want %s:%d", i, got[i], want.ip, want.port)
		}
	}
}

func TestHeadless(t *testing.T) {
	withHostname := func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-0", "web" }
	otherSubdomain := func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "db-1", "other" }
	h := newHarness(t, newService("web", intstr.FromInt32(5432), headless), newPod(0, withHostname), newPod(1, otherSubdomain))
	h.sync("web")
	ep := h.endpoints("web")
	if v, ok := ep.Labels[corev1.IsHeadlessService]; !ok || v != "" {
		t.Errorf("labels %v, want %s", ep.Labels, corev1.IsHeadlessService)
	}
	a := ep.Subsets[0].Addresses
	if len(a) != 2 || a[0].Hostname != "db-0" || a[1].Hostname != "" {
		t.Errorf("addresses %+v: want the hostname of the pod whose subdomain is the service only", a)
	}

	// Without ports, a headless Service still gets its pods' addresses.
	h = newHarness(t, newService("web", intstr.FromInt32(0), headless, func(s *corev1.Service) { s.Spec.Ports = nil }), newPod(0))
	h.sync("web")
	ss := h.endpoints("web").Subsets
	if len(ss) != 1 || ips(ss[0].Addresses) != "10.0.0.1" || len(ss[0].Ports) != 0 {
		t.Errorf("subsets %+v", ss)
	}
}

func TestServicesLeftAlone(t *testing.T) {
	user := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "external", ResourceVersion: "5", Labels: map[string]string{"mine": "yes"}},
		Subsets:    []corev1.EndpointSubset{{Addresses: addrs(addr("192.168.0.9")), Ports: ports(port("", 5432))}},
	}
	h := newHarness(t, newService("external", intstr.FromInt32(5432), noSelector), user, newPod(0),
		newService("name", intstr.FromInt32(80), func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }))
	h.sync("external")
	h.sync("name")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v", w)
	}
	if ep := h.endpoints("external"); ep.Labels["mine"] != "yes" || ips(ep.Subsets[0].Addresses) != "192.168.0.9" {
		t.Errorf("the user's Endpoints were changed: %+v", ep)
	}
	if ep := h.endpoints("name"); ep != nil {
		t.Errorf("an ExternalName Service got endpoints: %+v", ep)
	}
}

func TestOverCapacityIsTruncated(t *testing.T) {
	h := newHarness(t, newService("web", intstr.FromInt32(8080)))
	for i := range MaxCapacity + 1 {
		h.set(newPod(i))
	}
	h.sync("web")
	ep := h.endpoints("web")
	if n := addressCount(ep); n != MaxCapacity {
		t.Errorf("%d addresses, want %d", n, MaxCapacity)
	}
	if got := ep.Annotations[corev1.EndpointsOverCapacity]; got != Truncated {
		t.Errorf("annotations %v", ep.Annotations)
	}
	h.sync("web")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v for truncated Endpoints that did not change", w)
	}

	h.remove(newPod(0))
	h.sync("web")
	ep = h.endpoints("web")
	if _, ok := ep.Annotations[corev1.EndpointsOverCapacity]; ok || addressCount(ep) != MaxCapacity {
		t.Errorf("at capacity: %d addresses, annotations %v", addressCount(ep), ep.Annotations)
	}
}

func TestDeletedServiceLosesItsEndpoints(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080))
	h := newHarness(t, svc, newPod(0))
	h.sync("web")
	h.remove(svc)
	h.sync("web")
	if ep := h.endpoints("web"); ep != nil {
		t.Errorf("Endpoints left: %+v", ep)
	}
	h.sync("web") // and again: nothing to delete is no error
}

func TestLabelsFollowTheService(t *testing.T) {
	svc := newService("web", intstr.FromInt32(8080))
	h := newHarness(t, svc, newPod(0))
	h.sync("web")
	svc = svc.DeepCopy()
	svc.Labels = map[string]string{"team": "b"}
	h.set(svc)
	h.sync("web")
	if w := h.writes(); len(w) != 1 || w[0] != "update" {
		t.Fatalf("writes %v", w)
	}
	if l := h.endpoints("web").Labels; l["team"] != "b" || l[LabelManagedBy] != ControllerName {
		t.Errorf("labels %v", l)
	}
}

func TestStaleCacheIsRetried(t *testing.T) {
	h := newHarness(t, newService("web", intstr.FromInt32(8080)), newPod(0))
	h.sync("web")
	cached := h.endpoints("web") // what the cache holds
	h.set(newPod(1))
	h.sync("web") // updates; the harness then refreshes the cache
	if err := h.factory.Core().V1().Endpoints().Informer().GetIndexer().Update(cached); err != nil {
		t.Fatal(err)
	}
	err := h.c.syncService(context.Background(), ns+"/web")
	if _, ok := err.(staleCacheError); !ok {
		t.Errorf("sync on a stale cache: %v, want a staleCacheError", err)
	}
}

// run runs a controller on the informers of client until the test ends.
func run(t *testing.T, client *fake.Clientset, recorder events.EventRecorder, workers int) context.Context {
	t.Helper()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Pods(), factory.Core().V1().Services(), factory.Core().V1().Endpoints())
	if recorder != nil {
		c.Recorder = recorder
	}
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
	return ctx
}

func waitForEndpoints(t *testing.T, ctx context.Context, client *fake.Clientset, name, what string, cond func(*corev1.Endpoints) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		ep, err := client.CoreV1().Endpoints(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return cond(nil), nil
		}
		return err == nil && cond(ep), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// TestController: run with informers, the controller follows pods and Services, puts back
// Endpoints another writer changed, and deletes at start the Endpoints of a Service deleted
// while it was not running.
func TestController(t *testing.T) {
	orphan := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone", ResourceVersion: "3"}}
	client := newClient(newService("web", intstr.FromInt32(8080)), newPod(0), orphan)
	ctx := run(t, client, nil, 2)
	addressesAre := func(want string) func(*corev1.Endpoints) bool {
		return func(ep *corev1.Endpoints) bool {
			return ep != nil && len(ep.Subsets) == 1 && ips(ep.Subsets[0].Addresses) == want
		}
	}
	waitForEndpoints(t, ctx, client, "web", "created", addressesAre("10.0.0.1"))
	waitForEndpoints(t, ctx, client, "gone", "orphan deleted", func(ep *corev1.Endpoints) bool { return ep == nil })

	if _, err := client.CoreV1().Pods(ns).Create(ctx, newPod(1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEndpoints(t, ctx, client, "web", "a new pod added", addressesAre("10.0.0.1,10.0.0.2"))

	p := newPod(1, notReady)
	p.ResourceVersion = "2"
	if _, err := client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEndpoints(t, ctx, client, "web", "a pod not ready", func(ep *corev1.Endpoints) bool {
		return ep != nil && len(ep.Subsets) == 1 && ips(ep.Subsets[0].Addresses) == "10.0.0.1" && ips(ep.Subsets[0].NotReadyAddresses) == "10.0.0.2"
	})

	ep, err := client.CoreV1().Endpoints(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ep.Subsets = []corev1.EndpointSubset{{Addresses: addrs(addr("192.168.9.9")), Ports: ports(port("http", 1))}}
	if _, err := client.CoreV1().Endpoints(ns).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEndpoints(t, ctx, client, "web", "an edit undone", func(ep *corev1.Endpoints) bool {
		return ep != nil && len(ep.Subsets) == 1 && ips(ep.Subsets[0].Addresses) == "10.0.0.1"
	})

	if err := client.CoreV1().Endpoints(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEndpoints(t, ctx, client, "web", "recreated after a delete", func(ep *corev1.Endpoints) bool { return ep != nil })

	if err := client.CoreV1().Services(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForEndpoints(t, ctx, client, "web", "deleted with the service", func(ep *corev1.Endpoints) bool { return ep == nil })

	// Endpoints written by hand, with no Service, created and changed while the controller
	// runs: left alone, as upstream (the Endpoints lifecycle conformance test patches such).
	manual := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual", ResourceVersion: "1"},
		Subsets: []corev1.EndpointSubset{{Addresses: addrs(addr("10.9.9.9")), Ports: ports(port("http", 80))}}}
	if _, err := client.CoreV1().Endpoints(ns).Create(ctx, manual, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manual.ResourceVersion = "2"
	manual.Labels = map[string]string{"patched": "true"}
	if _, err := client.CoreV1().Endpoints(ns).Update(ctx, manual, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if _, err := client.CoreV1().Endpoints(ns).Get(ctx, "manual", metav1.GetOptions{}); err != nil {
		t.Errorf("Endpoints without a Service, updated by hand: %v, want them kept", err)
	}
}

// TestAPanicInOneServicesSyncIsRetried: a panicking sync is recovered, counted, reported on
// the Service and retried; the other Services are served meanwhile.
func TestAPanicInOneServicesSyncIsRetried(t *testing.T) {
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

	client := newClient(newService("bad", intstr.FromInt32(8080)), newService("good", intstr.FromInt32(8080)), newPod(0))
	recorder := events.NewFakeRecorder(10)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))
	ctx := run(t, client, recorder, 2)
	for _, name := range []string{"good", "bad"} {
		waitForEndpoints(t, ctx, client, name, "service "+name, func(ep *corev1.Endpoints) bool {
			return ep != nil && len(ep.Subsets) == 1 && len(ep.Subsets[0].Addresses) == 1
		})
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/endpoints: recovered from panic") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the panics")
	}
}
