// Package servicecidrs is berth's ServiceCIDR controller (kube-controller-manager's
// service-cidr-controller). It stands beside the pod's flow as a client of the API server and
// keeps the networking.k8s.io/v1 ServiceCIDRs that the cluster IP allocator takes Services'
// IPs from:
//
//   - a ServiceCIDR gets the finalizer networking.k8s.io/service-cidr-finalizer and the
//     condition Ready=True;
//   - a ServiceCIDR being deleted keeps its finalizer, with Ready=False (reason Terminating),
//     while an IPAddress of the allocator lies in it that no other ServiceCIDR (one not
//     being deleted itself) covers: deleting it then would orphan that IP. Once none is left,
//     and deletionGracePeriod after the deletion began (so that no allocation that still
//     saw the range is in flight), the finalizer goes and the API server removes it.
//
// The default ServiceCIDR "kubernetes" is one like the others, as upstream: the API server
// creates it and writes Ready=True only while the condition is missing or Unknown, so the
// controller's one rewrite of its reason and message (to upstream's) is not fought.
package servicecidrs

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	networkinginformers "k8s.io/client-go/informers/networking/v1"
	"k8s.io/client-go/kubernetes"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// Kubernetes' names.
const (
	// ProtectionFinalizer holds a ServiceCIDR while it has IPs only it covers.
	ProtectionFinalizer = "networking.k8s.io/service-cidr-finalizer"
	// FieldManager is the field manager of the Ready condition, kube-controller-manager's.
	FieldManager = "service-cidr-controller"
	// ReadyMessage and TerminatingMessage are upstream's messages of the Ready condition;
	// upstream gives Ready=True no reason.
	ReadyMessage       = "Kubernetes Service CIDR is ready"
	TerminatingMessage = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
	// managedByAllocator is the managed-by label value of the IPAddresses the API server's
	// cluster IP allocator creates (upstream's ipallocator.ControllerName); other
	// IPAddresses do not hold a ServiceCIDR.
	managedByAllocator = "ipallocator.k8s.io"
)

// deletionGracePeriod is how long after its deletion began a ServiceCIDR keeps its finalizer
// even when no IP holds it: an allocation that listed the ServiceCIDRs before the deletion
// may still be creating its IPAddress (upstream's 10 seconds).
const deletionGracePeriod = 10 * time.Second

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "service-cidr"

// reconcile is one ServiceCIDR's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncServiceCIDR

// Controller keeps the finalizer and the Ready condition of every ServiceCIDR. Its queue
// holds ServiceCIDR names. A ServiceCIDR is queued when it is added, updated or deleted,
// together with those overlapping it (a new or changed range may cover the IPs that block
// another's deletion), and when an allocator's IPAddress appears or goes, the ServiceCIDRs
// containing it. A sync reads the informers' caches, plans (plan) and writes only what
// differs.
type Controller struct {
	client             kubernetes.Interface
	serviceCIDRs       networkinglisters.ServiceCIDRLister
	ipAddresses        networkinglisters.IPAddressLister
	serviceCIDRsSynced cache.InformerSynced
	ipAddressesSynced  cache.InformerSynced
	queue              workqueue.TypedRateLimitingInterface[string]
	clock              clock.PassiveClock

	// Recorder, when set, gets a Warning event on a ServiceCIDR whose sync panicked or
	// whose Ready condition could not be written.
	Recorder events.EventRecorder
}

// NewController returns a controller fed by the given informers. Start the informers and
// call Run.
func NewController(client kubernetes.Interface, serviceCIDRs networkinginformers.ServiceCIDRInformer, ipAddresses networkinginformers.IPAddressInformer) *Controller {
	c := &Controller{
		client:       client,
		serviceCIDRs: serviceCIDRs.Lister(),
		ipAddresses:  ipAddresses.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "service_cidrs"}),
		clock: clock.RealClock{},
	}
	cidrRegistration, _ := serviceCIDRs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.serviceCIDRChanged,
		UpdateFunc: func(_, obj any) { c.serviceCIDRChanged(obj) },
		DeleteFunc: c.serviceCIDRChanged,
	})
	ipRegistration, _ := ipAddresses.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.ipAddressChanged,
		DeleteFunc: c.ipAddressChanged,
	})
	c.serviceCIDRsSynced = cidrRegistration.HasSynced
	c.ipAddressesSynced = ipRegistration.HasSynced
	return c
}

// serviceCIDRChanged queues the ServiceCIDR and those overlapping it.
func (c *Controller) serviceCIDRChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	sc, ok := obj.(*networkingv1.ServiceCIDR)
	if !ok {
		return
	}
	c.queue.Add(sc.Name)
	all, err := c.serviceCIDRs.List(labels.Everything())
	if err != nil {
		return
	}
	mine := prefixesOf(sc)
	for _, other := range all {
		if other.Name != sc.Name && overlaps(prefixesOf(other), mine) {
			c.queue.Add(other.Name)
		}
	}
}

// ipAddressChanged queues the ServiceCIDRs containing an allocator's IPAddress that appeared
// or went: it may block or unblock their deletion.
func (c *Controller) ipAddressChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	ip, ok := obj.(*networkingv1.IPAddress)
	if !ok || ip.Labels[networkingv1.LabelManagedBy] != managedByAllocator {
		return
	}
	addr, err := netip.ParseAddr(ip.Name)
	if err != nil {
		return
	}
	all, err := c.serviceCIDRs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, sc := range all {
		if containsAddr(prefixesOf(sc), addr) {
			c.queue.Add(sc.Name)
		}
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "ServiceCIDR controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, name string) error { return reconcile(c, ctx, name) },
		Reference:      reference,
		Recorder:       c.Recorder,
		KeyName:        "serviceCIDR",
		FailureMessage: "Syncing a ServiceCIDR failed",
	}
	return w.Run(ctx, workers, c.serviceCIDRsSynced, c.ipAddressesSynced)
}

func reference(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "ServiceCIDR", Name: name}
}

// actions are what a sync does to one ServiceCIDR, in this order.
type actions struct {
	addFinalizer bool
	// ready is the Ready condition to write; nil when the stored one is up to date.
	ready           *metav1.Condition
	removeFinalizer bool
	// recheckAfter, when positive, is when the deletion's grace period ends: sync again then.
	recheckAfter time.Duration
	// blockedBy is an IP that only this ServiceCIDR covers (for the log).
	blockedBy netip.Addr
}

// plan decides the actions on sc, given every ServiceCIDR, the allocator's IPAddresses and
// the time. It does no I/O.
func plan(sc *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress, now time.Time) actions {
	hasFinalizer := slices.Contains(sc.Finalizers, ProtectionFinalizer)
	if sc.DeletionTimestamp == nil {
		return actions{
			addFinalizer: !hasFinalizer,
			ready:        readyUpdate(sc, metav1.ConditionTrue, "", ReadyMessage, now),
		}
	}
	if ip, blocked := orphan(sc, all, ips); blocked {
		return actions{
			ready:     readyUpdate(sc, metav1.ConditionFalse, networkingv1.ServiceCIDRReasonTerminating, TerminatingMessage, now),
			blockedBy: ip,
		}
	}
	if wait := deletionGracePeriod - now.Sub(sc.DeletionTimestamp.Time); wait > 0 {
		return actions{recheckAfter: wait}
	}
	return actions{removeFinalizer: hasFinalizer}
}

// readyUpdate is the Ready condition of status, reason and message to write on sc, or nil
// when sc has it. The transition time moves only when the status changes.
func readyUpdate(sc *networkingv1.ServiceCIDR, status metav1.ConditionStatus, reason, message string, now time.Time) *metav1.Condition {
	current := apimeta.FindStatusCondition(sc.Status.Conditions, networkingv1.ServiceCIDRConditionReady)
	if current != nil && current.Status == status && current.Reason == reason && current.Message == message {
		return nil
	}
	transition := metav1.NewTime(now)
	if current != nil && current.Status == status && !current.LastTransitionTime.IsZero() {
		transition = current.LastTransitionTime
	}
	return &metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: status, Reason: reason, Message: message, LastTransitionTime: transition}
}

// orphan returns an IP the deletion of sc would orphan: one in sc that no other ServiceCIDR
// not being deleted contains. A ServiceCIDR being deleted does not count as a cover (unlike
// upstream, which lets two ServiceCIDRs of one range being deleted together release each
// other and orphan their IPs).
func orphan(sc *networkingv1.ServiceCIDR, all []*networkingv1.ServiceCIDR, ips []*networkingv1.IPAddress) (netip.Addr, bool) {
	mine := prefixesOf(sc)
	var others []netip.Prefix
	for _, o := range all {
		if o.Name != sc.Name && o.DeletionTimestamp == nil {
			others = append(others, prefixesOf(o)...)
		}
	}
	// Each range of sc inside another's: every IP of sc is covered.
	covered := true
	for _, p := range mine {
		if !slices.ContainsFunc(others, func(o netip.Prefix) bool { return o.Bits() <= p.Bits() && o.Overlaps(p) }) {
			covered = false
			break
		}
	}
	if covered {
		return netip.Addr{}, false
	}
	for _, ip := range ips {
		if ip.Labels[networkingv1.LabelManagedBy] != managedByAllocator {
			continue
		}
		addr, err := netip.ParseAddr(ip.Name)
		if err != nil {
			continue
		}
		if containsAddr(mine, addr) && !containsAddr(others, addr) {
			return addr, true
		}
	}
	return netip.Addr{}, false
}

func prefixesOf(sc *networkingv1.ServiceCIDR) []netip.Prefix {
	var out []netip.Prefix
	for _, s := range sc.Spec.CIDRs {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

func overlaps(a, b []netip.Prefix) bool {
	for _, p := range a {
		for _, q := range b {
			if p.Overlaps(q) {
				return true
			}
		}
	}
	return false
}

// containsAddr reports whether a prefix of ps holds addr as an IP a Service may get: not its
// network address, nor for IPv4 its broadcast address (upstream's PrefixContainsIP).
func containsAddr(ps []netip.Prefix, addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range ps {
		if !p.Contains(addr) || addr == p.Addr() {
			continue
		}
		if addr.Is4() && addr == lastAddr(p) {
			continue
		}
		return true
	}
	return false
}

// lastAddr is p's last address (for IPv4, the broadcast address).
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	host := len(b)*8 - p.Bits()
	for i := len(b) - 1; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// syncServiceCIDR plans and carries out the actions on the ServiceCIDR name.
func (c *Controller) syncServiceCIDR(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	sc, err := c.serviceCIDRs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting ServiceCIDR %s from cache: %w", name, err)
	}
	all, err := c.serviceCIDRs.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing ServiceCIDRs from cache: %w", err)
	}
	var ips []*networkingv1.IPAddress
	if sc.DeletionTimestamp != nil {
		ips, err = c.ipAddresses.List(labels.SelectorFromSet(labels.Set{networkingv1.LabelManagedBy: managedByAllocator}))
		if err != nil {
			return fmt.Errorf("listing IPAddresses from cache: %w", err)
		}
	}
	do := plan(sc, all, ips, c.clock.Now())

	// 1. The finalizer of a ServiceCIDR in use.
	if do.addFinalizer {
		if err := c.patchFinalizers(ctx, name, "finalizers"); err != nil {
			return fmt.Errorf("adding the finalizer of ServiceCIDR %s: %w", name, err)
		}
		logger.V(4).Info("Added the protection finalizer", "serviceCIDR", name)
	}
	// 2. The Ready condition.
	if do.ready != nil {
		if do.blockedBy.IsValid() {
			logger.Info("Deleting the ServiceCIDR is blocked by an IP address only it covers", "serviceCIDR", name, "ipAddress", do.blockedBy)
		}
		if err := c.applyReady(ctx, name, do.ready); err != nil {
			if do.ready.Status == metav1.ConditionTrue && c.Recorder != nil {
				c.Recorder.Eventf(sc, nil, corev1.EventTypeWarning, "KubernetesServiceCIDRError", "UpdateStatus", "The ServiceCIDR Status can not be set to Ready=True")
			}
			return fmt.Errorf("setting the Ready condition of ServiceCIDR %s: %w", name, err)
		}
		logger.V(2).Info("Set the Ready condition", "serviceCIDR", name, "status", do.ready.Status, "reason", do.ready.Reason)
	}
	// 3. The end of the deletion grace period.
	if do.recheckAfter > 0 {
		c.queue.AddAfter(name, do.recheckAfter)
	}
	// 4. The deletion: no IP holds the ServiceCIDR any longer.
	if do.removeFinalizer {
		if err := c.patchFinalizers(ctx, name, "$deleteFromPrimitiveList/finalizers"); err != nil {
			return fmt.Errorf("removing the finalizer of ServiceCIDR %s: %w", name, err)
		}
		logger.Info("Released a deleted ServiceCIDR: no IP address only it covers is left", "serviceCIDR", name)
	}
	return nil
}

// patchFinalizers adds (field "finalizers") or removes (field
// "$deleteFromPrimitiveList/finalizers") the finalizer with a strategic merge patch, as
// upstream. A ServiceCIDR gone meanwhile is no error.
func (c *Controller) patchFinalizers(ctx context.Context, name, field string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{field: []string{ProtectionFinalizer}}})
	if err != nil {
		return err
	}
	_, err = c.client.NetworkingV1().ServiceCIDRs().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// applyReady writes cond with server-side apply as FieldManager, forcing, as upstream.
func (c *Controller) applyReady(ctx context.Context, name string, cond *metav1.Condition) error {
	apply := networkingv1ac.ServiceCIDR(name).WithStatus(networkingv1ac.ServiceCIDRStatus().WithConditions(
		metav1ac.Condition().
			WithType(cond.Type).
			WithStatus(cond.Status).
			WithReason(cond.Reason).
			WithMessage(cond.Message).
			WithLastTransitionTime(cond.LastTransitionTime)))
	_, err := c.client.NetworkingV1().ServiceCIDRs().ApplyStatus(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
