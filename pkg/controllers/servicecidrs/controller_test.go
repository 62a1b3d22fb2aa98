package servicecidrs

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	networkingv1 "k8s.io/api/networking/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// scBuilder builds a ServiceCIDR fixture.
type scBuilder struct{ sc *networkingv1.ServiceCIDR }

func makeCIDR(name string, cidrs ...string) scBuilder {
	return scBuilder{&networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: cidrs}}}
}

func (b scBuilder) finalizer() scBuilder {
	b.sc.Finalizers = append(b.sc.Finalizers, ProtectionFinalizer)
	return b
}

// deleting marks it deleted ago before now.
func (b scBuilder) deleting(ago time.Duration) scBuilder {
	t := metav1.NewTime(now.Add(-ago))
	b.sc.DeletionTimestamp = &t
	return b
}

func (b scBuilder) ready(status metav1.ConditionStatus, reason, message string) scBuilder {
	b.sc.Status.Conditions = append(b.sc.Status.Conditions, metav1.Condition{
		Type: networkingv1.ServiceCIDRConditionReady, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Hour)),
	})
	return b
}

func (b scBuilder) obj() *networkingv1.ServiceCIDR { return b.sc }

// ipAddress is an IPAddress of the API server's allocator.
func ipAddress(ip string) *networkingv1.IPAddress {
	return &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip, Labels: map[string]string{networkingv1.LabelManagedBy: managedByAllocator}},
		Spec:       networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "web"}},
	}
}

// The API server's condition on the default ServiceCIDR (pkg/apiserver/kubernetesservice).
const apiServerReason, apiServerMessage = "Ready", "Kubernetes default Service CIDR is ready"

var (
	readyTrue   = &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Message: ReadyMessage, LastTransitionTime: metav1.NewTime(now)}
	terminating = &metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: "Terminating", Message: TerminatingMessage, LastTransitionTime: metav1.NewTime(now)}
)

func TestPlan(t *testing.T) {
	hourAgo := metav1.NewTime(now.Add(-time.Hour))
	tests := []struct {
		name   string
		sc     *networkingv1.ServiceCIDR
		others []*networkingv1.ServiceCIDR
		ips    []*networkingv1.IPAddress
		want   actions
	}{
		{
			name: "a new ServiceCIDR gets the finalizer and Ready",
			sc:   makeCIDR("extra", "10.1.0.0/24").obj(),
			want: actions{addFinalizer: true, ready: readyTrue},
		},
		{
			name: "up to date",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).obj(),
		},
		{
			name: "the default ServiceCIDR as the API server left it: upstream's reason and message, its transition time kept",
			sc:   makeCIDR("kubernetes", "10.96.0.0/12").ready(metav1.ConditionTrue, apiServerReason, apiServerMessage).obj(),
			want: actions{addFinalizer: true, ready: &metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Message: ReadyMessage, LastTransitionTime: hourAgo}},
		},
		{
			name: "Ready Unknown becomes True",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionUnknown, "Pending", "").obj(),
			want: actions{ready: readyTrue},
		},
		{
			name: "IPs do not matter while it is not deleted",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
		},
		{
			name: "deleted, no IP: the finalizer goes",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("10.2.0.5")},
			want: actions{removeFinalizer: true},
		},
		{
			name: "deleted, no IP, within the grace period: wait for its end",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(3 * time.Second).obj(),
			want: actions{recheckAfter: 7 * time.Second},
		},
		{
			name: "deleted without the finalizer: nothing to remove",
			sc:   makeCIDR("extra", "10.1.0.0/24").deleting(time.Minute).obj(),
		},
		{
			name: "deleted with an IP inside: Ready=False, Terminating",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).deleting(time.Minute).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("10.2.0.5"), ipAddress("10.1.0.5")},
			want: actions{ready: terminating, blockedBy: netip.MustParseAddr("10.1.0.5")},
		},
		{
			name: "deleted with an IP inside, already Terminating",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionFalse, "Terminating", TerminatingMessage).deleting(time.Minute).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
			want: actions{blockedBy: netip.MustParseAddr("10.1.0.5")},
		},
		{
			name: "an IPv6 IP of a dual-stack ServiceCIDR holds it",
			sc:   makeCIDR("extra", "10.1.0.0/24", "fd00:1::/112").finalizer().deleting(time.Minute).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("fd00:1::ffff")},
			want: actions{ready: terminating, blockedBy: netip.MustParseAddr("fd00:1::ffff")},
		},
		{
			name: "another ServiceCIDR of the same range covers the IPs",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{
				makeCIDR("same", "10.1.0.0/24").obj(),
			},
			ips:  []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
			want: actions{removeFinalizer: true},
		},
		{
			name:   "a wider ServiceCIDR covers the IPs",
			sc:     makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("wide", "10.0.0.0/8").obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
			want:   actions{removeFinalizer: true},
		},
		{
			name:   "a narrower ServiceCIDR covers the one IP",
			sc:     makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("narrow", "10.1.0.0/28").obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
			want:   actions{removeFinalizer: true},
		},
		{
			name:   "a narrower ServiceCIDR not covering the IP",
			sc:     makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("narrow", "10.1.0.0/28").obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.5"), ipAddress("10.1.0.200")},
			want:   actions{ready: terminating, blockedBy: netip.MustParseAddr("10.1.0.200")},
		},
		{
			name:   "the narrower ServiceCIDR's broadcast address is not covered by it",
			sc:     makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("narrow", "10.1.0.0/28").obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.15")},
			want:   actions{ready: terminating, blockedBy: netip.MustParseAddr("10.1.0.15")},
		},
		{
			name:   "a covering ServiceCIDR being deleted too does not count",
			sc:     makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("same", "10.1.0.0/24").finalizer().deleting(time.Minute).obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.5")},
			want:   actions{ready: terminating, blockedBy: netip.MustParseAddr("10.1.0.5")},
		},
		{
			name:   "covered in one family only",
			sc:     makeCIDR("extra", "10.1.0.0/24", "fd00:1::/112").finalizer().deleting(time.Minute).obj(),
			others: []*networkingv1.ServiceCIDR{makeCIDR("v4", "10.1.0.0/16").obj()},
			ips:    []*networkingv1.IPAddress{ipAddress("10.1.0.5"), ipAddress("fd00:1::5")},
			want:   actions{ready: terminating, blockedBy: netip.MustParseAddr("fd00:1::5")},
		},
		{
			name: "an IPAddress not of the allocator does not hold it",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			ips: []*networkingv1.IPAddress{{ObjectMeta: metav1.ObjectMeta{Name: "10.1.0.5",
				Labels: map[string]string{networkingv1.LabelManagedBy: "someone-else"}}}},
			want: actions{removeFinalizer: true},
		},
		{
			name: "the network and broadcast addresses are not in the range",
			sc:   makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(time.Minute).obj(),
			ips:  []*networkingv1.IPAddress{ipAddress("10.1.0.0"), ipAddress("10.1.0.255")},
			want: actions{removeFinalizer: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all := append([]*networkingv1.ServiceCIDR{tt.sc}, tt.others...)
			got := plan(tt.sc, all, tt.ips, now)
			if got.addFinalizer != tt.want.addFinalizer || got.removeFinalizer != tt.want.removeFinalizer ||
				got.recheckAfter != tt.want.recheckAfter || got.blockedBy != tt.want.blockedBy {
				t.Errorf("plan = %+v, want %+v", got, tt.want)
			}
			if (got.ready == nil) != (tt.want.ready == nil) || got.ready != nil && *got.ready != *tt.want.ready {
				t.Errorf("Ready to write %+v, want %+v", got.ready, tt.want.ready)
			}
		})
	}
}

// newController builds a controller on a fake clientset holding the objects, with its caches
// filled but no informer running, its clock at now.
func newController(t *testing.T, cidrs []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress) (*Controller, *fake.Clientset) {
	t.Helper()
	var objs []runtime.Object
	for _, o := range cidrs {
		objs = append(objs, o)
	}
	for _, o := range ips {
		objs = append(objs, o)
	}
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Networking().V1().ServiceCIDRs(), factory.Networking().V1().IPAddresses())
	c.clock = clocktesting.NewFakePassiveClock(now)
	t.Cleanup(c.queue.ShutDown)
	for _, o := range cidrs {
		if err := factory.Networking().V1().ServiceCIDRs().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, o := range ips {
		if err := factory.Networking().V1().IPAddresses().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	client.ClearActions()
	return c, client
}

// calls are the API calls made, as "verb resource/subresource (patch type)".
func calls(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		s := a.GetVerb() + " " + a.GetResource().Resource
		if a.GetSubresource() != "" {
			s += "/" + a.GetSubresource()
		}
		if p, ok := a.(clienttesting.PatchAction); ok {
			s += " (" + string(p.GetPatchType()) + ")"
		}
		out = append(out, s)
	}
	return out
}

const (
	smp   = " (" + string(types.StrategicMergePatchType) + ")"
	apply = " (" + string(types.ApplyPatchType) + ")"
)

func get(t *testing.T, client *fake.Clientset, name string) *networkingv1.ServiceCIDR {
	t.Helper()
	sc, err := client.NetworkingV1().ServiceCIDRs().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// TestSync: the writes a sync makes, and what they leave stored.
func TestSync(t *testing.T) {
	tests := []struct {
		name       string
		cidrs      []*networkingv1.ServiceCIDR
		ips        []*networkingv1.IPAddress
		sync       string
		wantCalls  []string
		wantFinal  bool                   // the finalizer is there afterwards
		wantStatus metav1.ConditionStatus // the Ready status afterwards
		wantReason string                 // and its reason
		wantMsg    string                 // and its message
	}{
		{
			name:      "a new ServiceCIDR",
			cidrs:     []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").obj()},
			sync:      "extra",
			wantCalls: []string{"patch servicecidrs" + smp, "patch servicecidrs/status" + apply},
			wantFinal: true, wantStatus: metav1.ConditionTrue, wantMsg: ReadyMessage,
		},
		{
			name:      "the default ServiceCIDR as the API server created it",
			cidrs:     []*networkingv1.ServiceCIDR{makeCIDR("kubernetes", "10.96.0.0/12").ready(metav1.ConditionTrue, apiServerReason, apiServerMessage).obj()},
			sync:      "kubernetes",
			wantCalls: []string{"patch servicecidrs" + smp, "patch servicecidrs/status" + apply},
			wantFinal: true, wantStatus: metav1.ConditionTrue, wantMsg: ReadyMessage,
		},
		{
			name:      "up to date",
			cidrs:     []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).obj()},
			sync:      "extra",
			wantFinal: true, wantStatus: metav1.ConditionTrue, wantMsg: ReadyMessage,
		},
		{
			name:      "gone",
			sync:      "extra",
			wantCalls: nil,
		},
		{
			name:      "deleted, blocked by an IP",
			cidrs:     []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).deleting(time.Minute).obj()},
			ips:       []*networkingv1.IPAddress{ipAddress("10.1.0.9")},
			sync:      "extra",
			wantCalls: []string{"patch servicecidrs/status" + apply},
			wantFinal: true, wantStatus: metav1.ConditionFalse, wantReason: "Terminating", wantMsg: TerminatingMessage,
		},
		{
			name: "deleted, the IP covered by another",
			cidrs: []*networkingv1.ServiceCIDR{
				makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionFalse, "Terminating", TerminatingMessage).deleting(time.Minute).obj(),
				makeCIDR("wide", "10.0.0.0/8").finalizer().obj(),
			},
			ips:        []*networkingv1.IPAddress{ipAddress("10.1.0.9")},
			sync:       "extra",
			wantCalls:  []string{"patch servicecidrs" + smp},
			wantStatus: metav1.ConditionFalse, wantReason: "Terminating", wantMsg: TerminatingMessage,
		},
		{
			name:       "deleted, within the grace period",
			cidrs:      []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").finalizer().ready(metav1.ConditionTrue, "", ReadyMessage).deleting(time.Second).obj()},
			sync:       "extra",
			wantFinal:  true,
			wantStatus: metav1.ConditionTrue, wantMsg: ReadyMessage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Another finalizer keeps the object in the fake after ours goes.
			for _, sc := range tt.cidrs {
				sc.Finalizers = append(sc.Finalizers, "example.com/keep")
			}
			c, client := newController(t, tt.cidrs, tt.ips)
			if err := c.syncServiceCIDR(context.Background(), tt.sync); err != nil {
				t.Fatalf("sync: %v", err)
			}
			if got := calls(client); !slices.Equal(got, tt.wantCalls) {
				t.Fatalf("API calls %q, want %q", got, tt.wantCalls)
			}
			if len(tt.cidrs) == 0 {
				return
			}
			sc := get(t, client, tt.sync)
			if got := slices.Contains(sc.Finalizers, ProtectionFinalizer); got != tt.wantFinal {
				t.Errorf("finalizers %v, want ours %v", sc.Finalizers, tt.wantFinal)
			}
			if !slices.Contains(sc.Finalizers, "example.com/keep") {
				t.Errorf("another finalizer was dropped: %v", sc.Finalizers)
			}
			cond := apimeta.FindStatusCondition(sc.Status.Conditions, "Ready")
			if cond == nil || cond.Status != tt.wantStatus || cond.Reason != tt.wantReason || cond.Message != tt.wantMsg {
				t.Errorf("Ready %+v, want %s %q %q", cond, tt.wantStatus, tt.wantReason, tt.wantMsg)
			}
		})
	}
}

// TestSyncApplyOptions: the condition is kube-controller-manager's: its field manager,
// forced.
func TestSyncApplyOptions(t *testing.T) {
	c, client := newController(t, []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").finalizer().obj()}, nil)
	var opts metav1.PatchOptions
	client.PrependReactor("patch", "servicecidrs", func(a clienttesting.Action) (bool, runtime.Object, error) {
		opts = a.(clienttesting.PatchActionImpl).PatchOptions
		return false, nil, nil
	})
	if err := c.syncServiceCIDR(context.Background(), "extra"); err != nil {
		t.Fatal(err)
	}
	if opts.FieldManager != FieldManager || opts.Force == nil || !*opts.Force {
		t.Errorf("apply options %+v, want field manager %s, forced", opts, FieldManager)
	}
}

// TestSyncGracePeriod: a deletion too recent to release is synced again when the grace
// period ends.
func TestSyncGracePeriod(t *testing.T) {
	c, client := newController(t, []*networkingv1.ServiceCIDR{makeCIDR("extra", "10.1.0.0/24").finalizer().deleting(4 * time.Second).obj()}, nil)
	clk := clocktesting.NewFakeClock(now)
	c.queue.ShutDown()
	c.queue = workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})
	t.Cleanup(c.queue.ShutDown)
	if err := c.syncServiceCIDR(context.Background(), "extra"); err != nil {
		t.Fatal(err)
	}
	if got := calls(client); len(got) != 0 {
		t.Errorf("API calls %q within the grace period", got)
	}
	if c.queue.Len() != 0 {
		t.Fatal("queued at once")
	}
	clk.Step(5 * time.Second)
	if c.queue.Len() != 0 {
		t.Fatal("queued before the grace period ended")
	}
	clk.Step(time.Second)
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return c.queue.Len() == 1, nil
	})
	if err != nil {
		t.Fatalf("not queued at the end of the grace period: %v", err)
	}
}

// harness runs the controller on informers over a fake clientset.
type harness struct {
	t      *testing.T
	ctx    context.Context
	client *fake.Clientset
	c      *Controller
	done   chan error
}

func start(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	client := fake.NewClientset(objects...)
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Networking().V1().ServiceCIDRs(), factory.Networking().V1().IPAddresses())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	h := &harness{t: t, ctx: ctx, client: client, c: c, done: make(chan error, 1)}
	factory.Start(ctx.Done())
	go func() { h.done <- c.Run(ctx, 2) }()
	t.Cleanup(func() {
		cancel()
		if err := <-h.done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	})
	return h
}

func (h *harness) waitFor(name, what string, cond func(*networkingv1.ServiceCIDR) bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		sc, err := h.client.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
		return err == nil && cond(sc), nil
	})
	if err != nil {
		h.t.Fatalf("ServiceCIDR %s: %s: %v", name, what, err)
	}
}

// markDeleted is what the API server does on a delete of an object with finalizers (the
// fake clientset would remove it at once).
func (h *harness) markDeleted(name string) {
	h.t.Helper()
	sc := get(h.t, h.client, name)
	t := metav1.NewTime(time.Now().Add(-time.Minute)) // past the grace period
	sc.DeletionTimestamp = &t
	if _, err := h.client.NetworkingV1().ServiceCIDRs().Update(h.ctx, sc, metav1.UpdateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

func isReady(sc *networkingv1.ServiceCIDR) bool {
	c := apimeta.FindStatusCondition(sc.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.Message == ReadyMessage &&
		slices.Contains(sc.Finalizers, ProtectionFinalizer)
}

func isTerminating(sc *networkingv1.ServiceCIDR) bool {
	c := apimeta.FindStatusCondition(sc.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Terminating" &&
		slices.Contains(sc.Finalizers, ProtectionFinalizer)
}

func isReleased(sc *networkingv1.ServiceCIDR) bool {
	return !slices.Contains(sc.Finalizers, ProtectionFinalizer)
}

// TestReleasedWhenTheIPGoes: a ServiceCIDR deleted while a Service's IP is in it stays,
// Terminating, until the IPAddress is deleted.
func TestReleasedWhenTheIPGoes(t *testing.T) {
	h := start(t)
	sc := makeCIDR("extra", "10.1.0.0/24").obj()
	sc.Finalizers = []string{"example.com/keep"} // keeps it in the fake once ours goes
	if _, err := h.client.NetworkingV1().ServiceCIDRs().Create(h.ctx, sc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("extra", "Ready with the finalizer", isReady)
	if _, err := h.client.NetworkingV1().IPAddresses().Create(h.ctx, ipAddress("10.1.0.9"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The informer must have the IP before the deletion is seen, as in a real cluster where
	// the IP was there long before.
	if err := wait.PollUntilContextTimeout(h.ctx, 5*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		_, err := h.c.ipAddresses.Get("10.1.0.9")
		return err == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	h.markDeleted("extra")
	h.waitFor("extra", "Terminating", isTerminating)
	// It stays so.
	time.Sleep(100 * time.Millisecond)
	if sc := get(t, h.client, "extra"); !isTerminating(sc) {
		t.Fatalf("released with the IP still there: %+v", sc)
	}
	if err := h.client.NetworkingV1().IPAddresses().Delete(h.ctx, "10.1.0.9", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("extra", "released once the IP is gone", isReleased)
}

// TestReleasedWhenAnotherCovers: a ServiceCIDR blocked by an IP is released once another
// ServiceCIDR covering that IP is created.
func TestReleasedWhenAnotherCovers(t *testing.T) {
	deleted := makeCIDR("extra", "10.1.0.0/24").finalizer().obj()
	deleted.Finalizers = append(deleted.Finalizers, "example.com/keep")
	deletedAt := metav1.NewTime(time.Now().Add(-time.Minute)) // past the grace period
	deleted.DeletionTimestamp = &deletedAt
	h := start(t, deleted, ipAddress("10.1.0.9"))
	h.waitFor("extra", "Terminating", isTerminating)
	if _, err := h.client.NetworkingV1().ServiceCIDRs().Create(h.ctx, makeCIDR("wide", "10.1.0.0/16").obj(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("extra", "released once another ServiceCIDR covers its IP", isReleased)
	h.waitFor("wide", "Ready", isReady)
}

// TestTheDefaultServiceCIDR: the API server's "kubernetes" ServiceCIDR gets the finalizer
// and upstream's Ready message; then the writes stop. (A sync that reads the cache between
// the two writes of the first may apply the same condition once more: idempotent.)
func TestTheDefaultServiceCIDR(t *testing.T) {
	def := makeCIDR("kubernetes", "10.96.0.0/12").ready(metav1.ConditionTrue, apiServerReason, apiServerMessage).obj()
	h := start(t, def)
	h.waitFor("kubernetes", "Ready with the finalizer", isReady)
	writes := func() (finalizers, status int) {
		for _, c := range calls(h.client) {
			switch c {
			case "patch servicecidrs" + smp:
				finalizers++
			case "patch servicecidrs/status" + apply:
				status++
			default:
				if !strings.HasPrefix(c, "list ") && !strings.HasPrefix(c, "watch ") && !strings.HasPrefix(c, "get ") {
					t.Errorf("unexpected call %q", c)
				}
			}
		}
		return finalizers, status
	}
	time.Sleep(100 * time.Millisecond)
	f1, s1 := writes()
	time.Sleep(300 * time.Millisecond)
	f2, s2 := writes()
	if f1 != 1 || s1 < 1 || s1 > 2 || f2 != f1 || s2 != s1 {
		t.Errorf("finalizer patches %d then %d, status applies %d then %d; want 1 and 1 or 2, then no more", f1, f2, s1, s2)
	}
	if sc := get(t, h.client, "kubernetes"); !isReady(sc) || sc.Status.Conditions[0].LastTransitionTime.Time.Unix() != now.Add(-time.Hour).Unix() {
		t.Errorf("Ready %+v: want upstream's message and the API server's transition time", sc.Status.Conditions)
	}
}

// TestAPanicInOneSyncIsRetried: a panicking sync is recovered, counted, reported on the
// ServiceCIDR and retried; the other ServiceCIDRs are served meanwhile.
func TestAPanicInOneSyncIsRetried(t *testing.T) {
	var mu sync.Mutex
	callsOf := map[string]int{}
	orig := reconcile
	reconcile = func(c *Controller, ctx context.Context, name string) error {
		mu.Lock()
		callsOf[name]++
		n := callsOf[name]
		mu.Unlock()
		if name == "bad" && n <= 2 {
			var sc *networkingv1.ServiceCIDR
			_ = sc.Name // a controller bug: nil dereference
		}
		return orig(c, ctx, name)
	}
	t.Cleanup(func() { reconcile = orig })

	client := fake.NewClientset(makeCIDR("bad", "10.1.0.0/24").obj(), makeCIDR("good", "10.2.0.0/24").obj())
	factory := informers.NewSharedInformerFactory(client, 0)
	c := NewController(client, factory.Networking().V1().ServiceCIDRs(), factory.Networking().V1().IPAddresses())
	recorder := events.NewFakeRecorder(10)
	c.Recorder = recorder
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName)))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	done := make(chan error)
	go func() { done <- c.Run(ctx, 2) }()
	for _, name := range []string{"good", "bad"} {
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			sc, err := client.NetworkingV1().ServiceCIDRs().Get(ctx, name, metav1.GetOptions{})
			return err == nil && isReady(sc), nil
		})
		if err != nil {
			t.Fatalf("ServiceCIDR %s did not become Ready: %v", name, err)
		}
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component(controllerName))); got != before+2 {
		t.Errorf("berth_recovered_panics_total = %v, want %v", got, before+2)
	}
	select {
	case e := <-recorder.Events:
		if !strings.HasPrefix(e, "Warning FailedSync internal error in controller/service-cidr: recovered from panic") {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no event for the panics")
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}

// TestLastAddr: the last address of a prefix, the broadcast address for IPv4.
func TestLastAddr(t *testing.T) {
	for prefix, want := range map[string]string{
		"10.1.0.0/24":  "10.1.0.255",
		"10.1.0.0/28":  "10.1.0.15",
		"10.96.0.0/12": "10.111.255.255",
		"10.1.0.7/32":  "10.1.0.7",
		"fd00::/64":    "fd00::ffff:ffff:ffff:ffff",
		"fd00::/113":   "fd00::7fff",
	} {
		if got := lastAddr(netip.MustParsePrefix(prefix)); got.String() != want {
			t.Errorf("lastAddr(%s) = %v, want %s", prefix, got, want)
		}
	}
}
