package endpointslicemirroring

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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

const ns = "ns"

// Fixtures.

// newService is a Service without a selector, as a user whose endpoints are outside the
// cluster makes it.
func newService(name string, opts ...func(*corev1.Service)) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("svc-uid-" + name)},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.96.0.20",
			Ports:     []corev1.ServicePort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		},
	}
	for _, o := range opts {
		o(svc)
	}
	return svc
}

func withSelector(svc *corev1.Service) { svc.Spec.Selector = map[string]string{"app": "db"} }

func address(ip string) corev1.EndpointAddress { return corev1.EndpointAddress{IP: ip} }

func port(name string, n int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

// newEndpoints are a user's Endpoints: two ready addresses and one not ready on port pg 5432.
func newEndpoints(name string, opts ...func(*corev1.Endpoints)) *corev1.Endpoints {
	node := "n1"
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("ep-uid-" + name), ResourceVersion: "1",
			Labels: map[string]string{"team": "db"},
			Annotations: map[string]string{
				"note":                                "mine",
				corev1.EndpointsLastChangeTriggerTime: "2026-01-01T00:00:00Z",
				corev1.LastAppliedConfigAnnotation:    "{}",
			}},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{
				{IP: "192.168.0.2", Hostname: "db-1"},
				{IP: "192.168.0.1", NodeName: &node, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "db-0", UID: "pod-uid"}},
			},
			NotReadyAddresses: []corev1.EndpointAddress{address("192.168.0.3")},
			Ports:             []corev1.EndpointPort{port("pg", 5432)},
		}},
	}
	for _, o := range opts {
		o(ep)
	}
	return ep
}

func subsets(ss ...corev1.EndpointSubset) func(*corev1.Endpoints) {
	return func(ep *corev1.Endpoints) { ep.Subsets = ss }
}

// newClient is a fake clientset that, as the API server does, names EndpointSlices from
// their generateName, gives them a UID and a generation bumped by every update.
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
		s.UID, s.Generation = old.(*discovery.EndpointSlice).UID, old.(*discovery.EndpointSlice).Generation+1
		return false, nil, nil
	})
	return client
}

// harness is a controller whose informers' caches a test fills by hand, synced by calling
// syncEndpoints: no goroutines, no waiting.
type harness struct {
	t        *testing.T
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	c        *Controller
	recorder *events.FakeRecorder
}

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	client := newClient()
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Endpoints(), factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Services())
	c.Recorder = events.NewFakeRecorder(10)
	t.Cleanup(c.queue.ShutDown)
	h := &harness{t: t, client: client, factory: factory, c: c, recorder: c.Recorder.(*events.FakeRecorder)}
	for _, o := range objects {
		h.set(o)
	}
	return h
}

func (h *harness) indexer(obj runtime.Object) cache.Indexer {
	switch obj.(type) {
	case *corev1.Service:
		return h.factory.Core().V1().Services().Informer().GetIndexer()
	case *corev1.Endpoints:
		return h.factory.Core().V1().Endpoints().Informer().GetIndexer()
	}
	h.t.Fatalf("no cache for %T", obj)
	return nil
}

// set puts obj in its informer's cache.
func (h *harness) set(obj runtime.Object) {
	h.t.Helper()
	if err := h.indexer(obj).Update(obj); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) remove(obj runtime.Object) {
	h.t.Helper()
	if err := h.indexer(obj).Delete(obj); err != nil {
		h.t.Fatal(err)
	}
}

// sync syncs ns/name, then copies the API's slices into the cache, as the informer would.
func (h *harness) sync(name string) {
	h.t.Helper()
	h.client.ClearActions()
	if err := h.c.syncEndpoints(context.Background(), ns+"/"+name); err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	h.refresh()
}

func (h *harness) refresh() {
	h.t.Helper()
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

// slices are the API's slices, by name.
func (h *harness) slices() []discovery.EndpointSlice {
	h.t.Helper()
	list, err := h.client.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	slices.SortFunc(list.Items, func(a, b discovery.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	return list.Items
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

// describe is a slice's endpoints as "ip(r|n)" in order, and its ports as "name:port".
func describe(s discovery.EndpointSlice) string {
	var parts []string
	for _, e := range s.Endpoints {
		r := "n"
		if e.Conditions.Ready != nil && *e.Conditions.Ready {
			r = "r"
		}
		parts = append(parts, strings.Join(e.Addresses, "+")+"("+r+")")
	}
	var ports []string
	for _, p := range s.Ports {
		ports = append(ports, fmt.Sprintf("%s:%d", deref(p.Name), deref(p.Port)))
	}
	return string(s.AddressType) + " " + strings.Join(parts, ",") + " " + strings.Join(ports, ",")
}

func TestMirrorsAUsersEndpoints(t *testing.T) {
	h := newHarness(t, newService("db"), newEndpoints("db"))
	h.sync("db")
	if w := h.writes(); len(w) != 1 || w[0] != "create" {
		t.Fatalf("writes %v, want one create", w)
	}
	got := h.slices()
	if len(got) != 1 {
		t.Fatalf("%d slices", len(got))
	}
	s := got[0]
	if want := "IPv4 192.168.0.1(r),192.168.0.2(r),192.168.0.3(n) pg:5432"; describe(s) != want {
		t.Errorf("slice %s, want %s", describe(s), want)
	}
	if !strings.HasPrefix(s.Name, "db-") {
		t.Errorf("name %q", s.Name)
	}
	wantLabels := map[string]string{"team": "db", discovery.LabelServiceName: "db", discovery.LabelManagedBy: ControllerName}
	if fmt.Sprint(s.Labels) != fmt.Sprint(wantLabels) {
		t.Errorf("labels %v, want %v", s.Labels, wantLabels)
	}
	if len(s.Annotations) != 1 || s.Annotations["note"] != "mine" {
		t.Errorf("annotations %v: want the Endpoints' but the trigger time and last applied configuration", s.Annotations)
	}
	owner := metav1.GetControllerOf(&s)
	if owner == nil || owner.APIVersion != "v1" || owner.Kind != "Endpoints" || owner.Name != "db" || owner.UID != "ep-uid-db" {
		t.Errorf("owner %+v", owner)
	}
	e0, e1 := s.Endpoints[0], s.Endpoints[1]
	if e0.NodeName == nil || *e0.NodeName != "n1" || e0.TargetRef == nil || e0.TargetRef.Name != "db-0" || e0.Hostname != nil {
		t.Errorf("endpoint %+v", e0)
	}
	if e1.Hostname == nil || *e1.Hostname != "db-1" || e1.NodeName != nil || e1.TargetRef != nil {
		t.Errorf("endpoint %+v", e1)
	}

	// Nothing changed: nothing written, not even for a new trigger time.
	h.set(newEndpoints("db", func(ep *corev1.Endpoints) {
		ep.ResourceVersion, ep.Annotations[corev1.EndpointsLastChangeTriggerTime] = "2", "2026-02-01T00:00:00Z"
	}))
	h.sync("db")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v for nothing changed", w)
	}

	// A label changes: the slice is updated in place.
	h.set(newEndpoints("db", func(ep *corev1.Endpoints) { ep.Labels["team"] = "ops" }))
	h.sync("db")
	if w := h.writes(); len(w) != 1 || w[0] != "update" {
		t.Fatalf("writes %v, want one update", w)
	}
	if s := h.slices()[0]; s.Labels["team"] != "ops" {
		t.Errorf("labels %v", s.Labels)
	}
}

func TestOneSlicePerSubsetAndFamily(t *testing.T) {
	ep := newEndpoints("db", subsets(
		corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address("192.168.0.1"), address("fd00::1")}, Ports: []corev1.EndpointPort{port("pg", 5432)}},
		corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address("192.168.0.2")}, Ports: []corev1.EndpointPort{port("pg", 6432)}},
	))
	h := newHarness(t, newService("db"), ep)
	h.sync("db")
	var got []string
	for _, s := range h.slices() {
		got = append(got, describe(s))
	}
	slices.Sort(got)
	want := []string{"IPv4 192.168.0.1(r) pg:5432", "IPv4 192.168.0.2(r) pg:6432", "IPv6 fd00::1(r) pg:5432"}
	if !slices.Equal(got, want) {
		t.Errorf("slices %q, want %q", got, want)
	}
	h.sync("db")
	if w := h.writes(); len(w) != 0 {
		t.Errorf("writes %v for nothing changed", w)
	}

	// One subset goes: its slice goes. The other changes ports: its slice is updated.
	h.set(newEndpoints("db", subsets(
		corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address("192.168.0.1")}, Ports: []corev1.EndpointPort{port("pg", 7432)}},
	)))
	h.sync("db")
	if w := h.writes(); !slices.Equal(w, []string{"update", "delete", "delete"}) {
		t.Errorf("writes %v, want a recycled slice and two deletes", w)
	}
	if got := h.slices(); len(got) != 1 || describe(got[0]) != "IPv4 192.168.0.1(r) pg:7432" {
		t.Errorf("slices %v", got)
	}
}

func TestNotMirrored(t *testing.T) {
	tests := []struct {
		name    string
		objects []runtime.Object
	}{
		{"skip-mirror", []runtime.Object{newService("db"), newEndpoints("db", func(ep *corev1.Endpoints) {
			ep.Labels[discovery.LabelSkipMirror] = "true"
		})}},
		{"a leader election record", []runtime.Object{newService("db"), newEndpoints("db", func(ep *corev1.Endpoints) {
			ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey] = "{}"
		})}},
		{"a Service with a selector", []runtime.Object{newService("db", withSelector), newEndpoints("db")}},
		{"no Service", []runtime.Object{newEndpoints("db")}},
		{"no Endpoints", []runtime.Object{newService("db")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, tt.objects...)
			h.sync("db")
			if w := h.writes(); len(w) != 0 {
				t.Errorf("writes %v", w)
			}
		})
	}
}

func TestMirroredSlicesGo(t *testing.T) {
	tests := []struct {
		name   string
		change func(h *harness)
	}{
		{"the Endpoints are labelled skip-mirror", func(h *harness) {
			h.set(newEndpoints("db", func(ep *corev1.Endpoints) { ep.Labels[discovery.LabelSkipMirror] = "true" }))
		}},
		{"the Service gets a selector", func(h *harness) { h.set(newService("db", withSelector)) }},
		{"the Service is deleted", func(h *harness) { h.remove(newService("db")) }},
		{"the Endpoints are deleted", func(h *harness) { h.remove(newEndpoints("db")) }},
		{"the Endpoints lose their addresses", func(h *harness) { h.set(newEndpoints("db", subsets())) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, newService("db"), newEndpoints("db"), newService("other"), newEndpoints("other"))
			h.sync("db")
			h.sync("other")
			tt.change(h)
			h.sync("db")
			got := h.slices()
			if len(got) != 1 || got[0].Labels[discovery.LabelServiceName] != "other" {
				t.Errorf("slices left: %v", got)
			}
		})
	}
}

func TestAtMostMaxAddressesPerSubsetAreMirrored(t *testing.T) {
	var ready []corev1.EndpointAddress
	for i := range MaxEndpointsPerSubset + 5 {
		ready = append(ready, address(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1)))
	}
	h := newHarness(t, newService("db"), newEndpoints("db", subsets(corev1.EndpointSubset{
		Addresses: ready, NotReadyAddresses: []corev1.EndpointAddress{address("10.9.0.1")}, Ports: []corev1.EndpointPort{port("pg", 5432)},
	})))
	h.sync("db")
	got := h.slices()
	if len(got) != 1 || len(got[0].Endpoints) != MaxEndpointsPerSubset {
		t.Fatalf("%d slices, %d endpoints", len(got), len(got[0].Endpoints))
	}
	for _, e := range got[0].Endpoints {
		if !*e.Conditions.Ready {
			t.Fatalf("a not-ready address was mirrored before ready ones: %v", e.Addresses)
		}
	}
	select {
	case e := <-h.recorder.Events:
		if !strings.HasPrefix(e, "Warning TooManyAddressesToMirror") || !strings.Contains(e, "6 addresses were skipped") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the addresses left out")
	}
}

func TestInvalidAddressesAreLeftOut(t *testing.T) {
	m := desiredMirror(newEndpoints("db", subsets(corev1.EndpointSubset{
		Addresses: []corev1.EndpointAddress{address("192.168.0.1"), address("not-an-ip")}, Ports: []corev1.EndpointPort{port("pg", 5432)},
	})), MaxEndpointsPerSubset)
	if m.invalid != 1 || m.tooMany != 0 || len(m.groups) != 1 || len(m.groups[0].endpoints) != 1 {
		t.Errorf("mirror %+v", m)
	}
}

// TestRecreatedEndpointsGetTheirSlicesBack: a slice controlled by earlier Endpoints of the
// same name is rebuilt for the new ones.
func TestRecreatedEndpointsGetTheirSlicesBack(t *testing.T) {
	h := newHarness(t, newService("db"), newEndpoints("db"))
	h.sync("db")
	h.set(newEndpoints("db", func(ep *corev1.Endpoints) { ep.UID = "ep-uid-new" }))
	h.sync("db")
	if w := h.writes(); len(w) != 1 || w[0] != "update" {
		t.Fatalf("writes %v, want one update", w)
	}
	if owner := metav1.GetControllerOf(&h.slices()[0]); owner.UID != "ep-uid-new" {
		t.Errorf("owner %+v", owner)
	}
}

func TestStaleCacheIsRetried(t *testing.T) {
	h := newHarness(t, newService("db"), newEndpoints("db"))
	if err := h.c.syncEndpoints(context.Background(), ns+"/db"); err != nil {
		t.Fatal(err)
	}
	// The cache has not seen the slice just created.
	err := h.c.syncEndpoints(context.Background(), ns+"/db")
	if _, ok := err.(staleCacheError); !ok {
		t.Errorf("sync on a stale cache: %v, want a staleCacheError", err)
	}
	h.refresh()
	if err := h.c.syncEndpoints(context.Background(), ns+"/db"); err != nil {
		t.Errorf("sync once the cache caught up: %v", err)
	}
}

// run runs a controller on the informers of client until the test ends.
func run(t *testing.T, client *fake.Clientset, recorder events.EventRecorder, workers int) context.Context {
	t.Helper()
	oldBackoff := syncBackoff
	syncBackoff = 10 * time.Millisecond
	t.Cleanup(func() { syncBackoff = oldBackoff })
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Core().V1().Endpoints(), factory.Discovery().V1().EndpointSlices(), factory.Core().V1().Services())
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

func waitForSlices(t *testing.T, ctx context.Context, client *fake.Clientset, what string, cond func([]discovery.EndpointSlice) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		return err == nil && cond(list.Items), nil
	})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func sliceOf(name string, items []discovery.EndpointSlice) *discovery.EndpointSlice {
	for i := range items {
		if items[i].Labels[discovery.LabelServiceName] == name {
			return &items[i]
		}
	}
	return nil
}

// TestController: run with informers, the controller mirrors a selectorless Service's
// Endpoints, follows their changes, puts back a slice someone else edited, and deletes the
// slices with the Endpoints.
func TestController(t *testing.T) {
	client := newClient(newService("db"), newEndpoints("db"), newService("web", withSelector), newEndpoints("web"))
	ctx := run(t, client, nil, 2)
	waitForSlices(t, ctx, client, "mirrored", func(items []discovery.EndpointSlice) bool {
		s := sliceOf("db", items)
		return s != nil && len(s.Endpoints) == 3
	})

	ep := newEndpoints("db", subsets(corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{address("192.168.0.7")}, Ports: []corev1.EndpointPort{port("pg", 5432)}}))
	ep.ResourceVersion = "2"
	if _, err := client.CoreV1().Endpoints(ns).Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "an Endpoints change followed", func(items []discovery.EndpointSlice) bool {
		s := sliceOf("db", items)
		return s != nil && len(s.Endpoints) == 1 && s.Endpoints[0].Addresses[0] == "192.168.0.7"
	})

	list, err := client.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	edited := sliceOf("db", list.Items).DeepCopy()
	edited.Endpoints[0].Addresses = []string{"10.66.66.66"}
	if _, err := client.DiscoveryV1().EndpointSlices(ns).Update(ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "an edit undone", func(items []discovery.EndpointSlice) bool {
		s := sliceOf("db", items)
		return s != nil && len(s.Endpoints) == 1 && s.Endpoints[0].Addresses[0] == "192.168.0.7"
	})

	if err := client.CoreV1().Endpoints(ns).Delete(ctx, "db", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSlices(t, ctx, client, "deleted with the Endpoints", func(items []discovery.EndpointSlice) bool { return len(items) == 0 })
}

// TestAPanicInOneEndpointsSyncIsRetried: a panicking sync is recovered, counted, reported on
// the Endpoints and retried; the other Endpoints are served meanwhile.
func TestAPanicInOneEndpointsSyncIsRetried(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, key string) error {
		mu.Lock()
		calls[key]++
		n := calls[key]
		mu.Unlock()
		if key == ns+"/bad" && n <= 2 {
			var ep *corev1.Endpoints
			_ = ep.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, key)
	}
	t.Cleanup(func() { reconcile = orig })

	client := newClient(newService("bad"), newEndpoints("bad"), newService("good"), newEndpoints("good"))
	recorder := events.NewFakeRecorder(10)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))
	ctx := run(t, client, recorder, 2)
	waitForSlices(t, ctx, client, "both mirrored", func(items []discovery.EndpointSlice) bool {
		return sliceOf("good", items) != nil && sliceOf("bad", items) != nil
	})
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/endpointslice-mirroring: recovered from panic") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the panics")
	}
}
