// Package disruption is berth's disruption controller (kube-controller-manager's
// disruption-controller). It stands beside the pod's flow, before its end: the eviction API
// (kubectl drain, the scheduler's preemption) lets a pod go only while its
// PodDisruptionBudget's status.disruptionsAllowed is positive, and this controller keeps that
// status true to the pods.
//
// Per budget key ("namespace/name"), a sync reads the budget and the pods it selects from the
// shared informers' caches and:
//
//  1. computes the expected pods and the desired healthy count from minAvailable or
//     maxUnavailable (an integer, or a percentage of the sum of the scales of the pods'
//     controllers: ReplicationControllers, Deployments through their ReplicaSets, ReplicaSets,
//     StatefulSets);
//  2. prunes status.disruptedPods (the pods the eviction API let go) of pods gone, being
//     deleted, or recorded more than DeletionTimeout ago, and counts the ready pods not in it;
//  3. writes currentHealthy, desiredHealthy, expectedPods, disruptionsAllowed, disruptedPods,
//     observedGeneration and the DisruptionAllowed condition (SufficientPods or
//     InsufficientPods) when they changed, and requeues itself for when the next
//     disruptedPods entry times out.
//
// A sync that fails for any reason but a conflict fails safe: it writes disruptionsAllowed 0
// with the condition False, reason SyncFailed, so that no eviction passes on a stale count.
//
// A second queue holds pod keys: a pod not being deleted whose DisruptionTarget condition is
// True (an eviction or preemption that did not go through) has it reset to False once it is
// two minutes old.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	policyinformers "k8s.io/client-go/informers/policy/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs and berth_recovered_panics_total.
const controllerName = "disruption"

// Upstream's event reasons.
const (
	reasonNoPods                  = "NoPods"
	reasonUnmanagedPods           = "UnmanagedPods"
	reasonCalculateExpectedFailed = "CalculateExpectedPodCountFailed"
	reasonNotDeleted              = "NotDeleted"
	reasonMultiplePDBs            = "MultiplePodDisruptionBudgets"
)

// eventAction is the action of this controller's events (events.k8s.io requires one).
const eventAction = "Sync"

// Syncs; variables so that a test can make them panic.
var (
	reconcile      = (*Controller).sync
	reconcileStale = (*Controller).syncStalePodDisruption
)

// Controller keeps the status of PodDisruptionBudgets.
type Controller struct {
	client       kubernetes.Interface
	pdbs         policylisters.PodDisruptionBudgetLister
	pods         corelisters.PodLister
	rcs          corelisters.ReplicationControllerLister
	rss          appslisters.ReplicaSetLister
	deployments  appslisters.DeploymentLister
	statefulSets appslisters.StatefulSetLister
	synced       []cache.InformerSynced
	clock        clock.PassiveClock

	// queue holds budget keys; recheck holds those waiting for a disruptedPods entry to time
	// out, moved to queue when due; stale holds pod keys to reset DisruptionTarget on.
	queue   workqueue.TypedRateLimitingInterface[string]
	recheck workqueue.TypedDelayingInterface[string]
	stale   workqueue.TypedRateLimitingInterface[string]

	// Scales and Mapper, when both are set, count the pods of controllers of other kinds
	// (custom resources) through their scale subresource, as upstream's getScaleController
	// does; without them such a pod fails the sync of a budget that needs its controller's
	// scale ("found no controllers for pod"). The manager builds them from its rest config
	// (scale.NewForConfig with a discovery RESTMapper).
	Scales scale.ScalesGetter
	Mapper apimeta.RESTMapper

	// Recorder, when set, gets upstream's events on budgets (NoPods, UnmanagedPods,
	// CalculateExpectedPodCountFailed) and pods (NotDeleted, MultiplePodDisruptionBudgets),
	// and FailedSync on a budget whose sync panicked.
	Recorder events.EventRecorder
}

// NewController returns a disruption controller fed by the given informers. Start the
// informers and call Run.
func NewController(client kubernetes.Interface, pods coreinformers.PodInformer, pdbs policyinformers.PodDisruptionBudgetInformer,
	rcs coreinformers.ReplicationControllerInformer, rss appsinformers.ReplicaSetInformer,
	deployments appsinformers.DeploymentInformer, statefulSets appsinformers.StatefulSetInformer) *Controller {
	c := &Controller{
		client:       client,
		pdbs:         pdbs.Lister(),
		pods:         pods.Lister(),
		rcs:          rcs.Lister(),
		rss:          rss.Lister(),
		deployments:  deployments.Lister(),
		statefulSets: statefulSets.Lister(),
		clock:        clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "disruption"}),
		recheck: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: "disruption_recheck"}),
		stale: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "stale_pod_disruption"}),
	}
	pdbRegistration, _ := pdbs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	})
	podRegistration, _ := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podChanged,
		UpdateFunc: func(_, cur any) { c.podChanged(cur) },
		DeleteFunc: c.podDeleted,
	})
	c.synced = []cache.InformerSynced{pdbRegistration.HasSynced, podRegistration.HasSynced,
		rcs.Informer().HasSynced, rss.Informer().HasSynced, deployments.Informer().HasSynced, statefulSets.Informer().HasSynced}
	return c
}

// Run starts workers on the budgets, one worker on the stale conditions and the recheck
// mover, and blocks until ctx is done, then waits for all of them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	budgets := &recovery.Worker[string]{
		Name:           controllerName,
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("policy/v1", "PodDisruptionBudget"),
		Recorder:       c.Recorder,
		KeyName:        "podDisruptionBudget",
		FailureMessage: "Error syncing PodDisruptionBudget, requeuing",
		Expected: func(err error) (string, bool) {
			return "Conflict writing the PodDisruptionBudget status; retrying", apierrors.IsConflict(err)
		},
	}
	stale := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "stale pod disruption cleanup",
		Queue:          c.stale,
		Sync:           func(ctx context.Context, key string) error { return reconcileStale(c, ctx, key) },
		KeyName:        "pod",
		FailureMessage: "Error syncing Pod to clear DisruptionTarget condition, requeueing",
	}

	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = budgets.Run(ctx, workers, c.synced...) })
	wg.Go(func() { errs[1] = stale.Run(ctx, 1, c.synced...) })
	wg.Go(c.moveRechecks)
	<-ctx.Done()
	c.recheck.ShutDown()
	wg.Wait()
	return errors.Join(errs...)
}

// moveRechecks moves the budgets whose recheck is due to the main queue, until Run shuts
// the recheck queue down.
func (c *Controller) moveRechecks() {
	for {
		key, shutdown := c.recheck.Get()
		if shutdown {
			return
		}
		c.queue.AddRateLimited(key)
		c.recheck.Done(key)
	}
}

func (c *Controller) eventf(regarding any, eventType, reason, note string, args ...any) {
	if c.Recorder == nil {
		return
	}
	switch obj := regarding.(type) {
	case *policyv1.PodDisruptionBudget:
		c.Recorder.Eventf(obj, nil, eventType, reason, eventAction, note, args...)
	case *corev1.Pod:
		c.Recorder.Eventf(obj, nil, eventType, reason, eventAction, note, args...)
	}
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T: %w", obj, err))
		return
	}
	c.queue.Add(key)
}

// podChanged queues the pod's budget, and the pod itself when it has a DisruptionTarget
// condition to reset.
func (c *Controller) podChanged(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pdb := c.pdbForPod(pod); pdb != nil {
		c.enqueue(pdb)
	}
	if has, after := staleDisruption(pod, c.clock.Now()); has {
		c.stale.AddAfter(pod.Namespace+"/"+pod.Name, after)
	}
}

func (c *Controller) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		if pdb := c.pdbForPod(pod); pdb != nil {
			c.enqueue(pdb)
		}
	}
}

// pdbForPod is one budget selecting pod, or nil; upstream picks the first when several do,
// and warns on the pod.
func (c *Controller) pdbForPod(pod *corev1.Pod) *policyv1.PodDisruptionBudget {
	pdbs, err := c.pdbs.GetPodPodDisruptionBudgets(pod)
	if err != nil || len(pdbs) == 0 {
		return nil // none selects it
	}
	if len(pdbs) > 1 {
		msg := fmt.Sprintf("Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", pod.Namespace, pod.Name, pdbs[0].Name)
		klog.Background().Info(msg)
		c.eventf(pod, corev1.EventTypeWarning, reasonMultiplePDBs, "%s", msg)
	}
	return pdbs[0]
}

// sync reconciles one budget, failing safe on any failure but a conflict.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queues
	}
	pdb, err := c.pdbs.PodDisruptionBudgets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading PodDisruptionBudget %s from the cache: %w", key, err)
	}
	err = c.trySync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		return err
	}
	klog.FromContext(ctx).Error(err, "Failed to sync PDB", "podDisruptionBudget", klog.KObj(pdb))
	return c.failSafe(ctx, pdb, err)
}

// trySync is the steps of the package doc.
func (c *Controller) trySync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	selector, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	var pods []*corev1.Pod
	if err == nil {
		pods, err = c.pods.Pods(pdb.Namespace).List(selector)
	}
	if err != nil {
		c.eventf(pdb, corev1.EventTypeWarning, reasonNoPods, "Failed to get pods: %v", err)
		return err
	}
	if len(pods) == 0 {
		c.eventf(pdb, corev1.EventTypeNormal, reasonNoPods, "No matching pods found")
	}

	// 1. What should be.
	counts, err := expectedCounts(pdb, pods, func(ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
		return c.findScale(ctx, ref, namespace)
	})
	if err != nil {
		c.eventf(pdb, corev1.EventTypeWarning, reasonCalculateExpectedFailed, "Failed to calculate the number of expected pods: %v", err)
		return err
	}
	if len(counts.unmanaged) > 0 {
		// Logged and evented rather than failed, so as not to hot-loop on status writes.
		klog.FromContext(ctx).V(4).Info("Found unmanaged pods associated with this PDB", "pods", counts.unmanaged)
		c.eventf(pdb, corev1.EventTypeWarning, reasonUnmanagedPods, "Pods selected by this PodDisruptionBudget (selector: %v) were found "+
			"to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
			"To account for these pods please set \".spec.minAvailable\" "+
			"field of the PDB to an integer value.", pdb.Spec.Selector)
	}

	// 2. What is.
	now := c.clock.Now()
	d := pruneDisrupted(pdb, pods, now)
	for _, pod := range d.notDeleted {
		klog.FromContext(ctx).V(1).Info("pod was expected to be deleted but it wasn't, updating PDB",
			"pod", klog.KObj(pod), "deletionTime", pdb.Status.DisruptedPods[pod.Name], "podDisruptionBudget", klog.KObj(pdb))
		// Upstream's message names the budget's namespace twice (a slip); berth names it.
		c.eventf(pod, corev1.EventTypeWarning, reasonNotDeleted, "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
	}
	healthy := countHealthy(pods, d.pods, now)

	// 3. Write.
	if next, changed := desiredStatus(pdb, healthy, counts, d.pods); changed {
		if err := c.writeStatus(ctx, next); err != nil {
			return err
		}
	}
	if d.recheck != nil {
		c.recheck.AddAfter(keyOf(pdb), d.recheck.Sub(now))
	}
	return nil
}

func keyOf(pdb *policyv1.PodDisruptionBudget) string { return pdb.Namespace + "/" + pdb.Name }

// failSafe writes disruptionsAllowed 0 with DisruptionAllowed False, reason SyncFailed: if
// this budget's status cannot be computed, evictions wait rather than pass on a stale count.
func (c *Controller) failSafe(ctx context.Context, pdb *policyv1.PodDisruptionBudget, cause error) error {
	next := pdb.DeepCopy()
	next.Status.DisruptionsAllowed = 0
	if next.Status.Conditions == nil {
		next.Status.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: next.Status.ObservedGeneration,
	})
	return c.writeStatus(ctx, next)
}

// writeStatus writes a budget's status once; a failure is retried by the queue.
func (c *Controller) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, err := c.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	if err != nil {
		return fmt.Errorf("updating the status of PodDisruptionBudget %s/%s: %w", pdb.Namespace, pdb.Name, err)
	}
	return nil
}

// The kinds whose scale the finders read, by the groups their references may name.
var (
	kindRC         = scaleKind{"ReplicationController", []string{""}}
	kindRS         = scaleKind{"ReplicaSet", []string{"apps", "extensions"}}
	kindDeployment = scaleKind{"Deployment", []string{"apps", "extensions"}}
	kindSS         = scaleKind{"StatefulSet", []string{"apps"}}
)

type scaleKind struct {
	kind   string
	groups []string
}

// is reports whether ref names this kind; an unparsable apiVersion is an error.
func (k scaleKind) is(ref *metav1.OwnerReference) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, err
	}
	return ref.Kind == k.kind && slices.Contains(k.groups, gv.Group), nil
}

// findScale is the scale of a pod's controller, read from the caches, tried as upstream's
// finders are: a ReplicationController; a ReplicaSet's Deployment; a ReplicaSet without one;
// a StatefulSet; then, when Scales and Mapper are set, any kind's scale subresource.
func (c *Controller) findScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if ok, err := kindRC.is(ref); err != nil || ok {
		if err != nil {
			return "", 0, false, err
		}
		rc, err := c.rcs.ReplicationControllers(namespace).Get(ref.Name)
		if err != nil || rc.UID != ref.UID {
			return "", 0, false, nil
		}
		return rc.UID, replicas(rc.Spec.Replicas), true, nil
	}
	if ok, err := kindRS.is(ref); err != nil || ok {
		if err != nil {
			return "", 0, false, err
		}
		rs, err := c.rss.ReplicaSets(namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return "", 0, false, nil
		}
		owner := metav1.GetControllerOfNoCopy(rs)
		if owner == nil {
			return rs.UID, replicas(rs.Spec.Replicas), true, nil
		}
		if owner.Kind == kindDeployment.kind {
			// A Deployment's ReplicaSet counts as its Deployment, or not at all.
			if ok, err := kindDeployment.is(owner); err != nil || !ok {
				return "", 0, false, err
			}
			d, err := c.deployments.Deployments(namespace).Get(owner.Name)
			if err != nil || d.UID != owner.UID {
				return "", 0, false, nil
			}
			return d.UID, replicas(d.Spec.Replicas), true, nil
		}
		return rs.UID, replicas(rs.Spec.Replicas), true, nil
	}
	if ok, err := kindSS.is(ref); err != nil || ok {
		if err != nil {
			return "", 0, false, err
		}
		ss, err := c.statefulSets.StatefulSets(namespace).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return "", 0, false, nil
		}
		return ss.UID, replicas(ss.Spec.Replicas), true, nil
	}
	return c.findScaleSubresource(ctx, ref, namespace)
}

// findScaleSubresource reads the scale subresource of the controller ref names, as
// upstream's getScaleController: a controller gone (or a namesake) is not found, a kind
// without a scale subresource is an error.
func (c *Controller) findScaleSubresource(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if c.Scales == nil || c.Mapper == nil {
		return "", 0, false, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	mapping, err := c.Mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return "", 0, false, err
	}
	gr := mapping.Resource.GroupResource()
	s, err := c.Scales.Scales(namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Either the controller is gone or its kind has no scale subresource: discovery
		// tells which.
		ok, err := c.implementsScale(mapping.Resource)
		if err != nil {
			return "", 0, false, err
		}
		if !ok {
			return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", gr.String())
		}
		return "", 0, false, nil
	}
	if err != nil {
		return "", 0, false, err
	}
	if s.UID != ref.UID {
		return "", 0, false, nil
	}
	return s.UID, s.Spec.Replicas, true, nil
}

// implementsScale reports whether discovery lists a scale subresource of a Scale kind for gvr.
func (c *Controller) implementsScale(gvr schema.GroupVersionResource) (bool, error) {
	resources, err := c.client.Discovery().ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	for _, r := range resources.APIResources {
		if r.Name != gvr.Resource+"/scale" || r.Kind != "Scale" {
			continue
		}
		for _, scaleGV := range scale.NewScaleConverter().ScaleVersions() {
			if r.Group == scaleGV.Group && r.Version == scaleGV.Version {
				return true, nil
			}
		}
	}
	return false, nil
}

// replicas is a spec's replicas, 1 (the API server's default) when unset.
func replicas(n *int32) int32 {
	if n == nil {
		return 1
	}
	return *n
}

// syncStalePodDisruption resets a pod's stale DisruptionTarget condition to False.
func (c *Controller) syncStalePodDisruption(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := c.pods.Pods(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading pod %s from the cache: %w", key, err)
	}
	has, after := staleDisruption(pod, c.clock.Now())
	if !has {
		return nil
	}
	if after > 0 {
		c.stale.AddAfter(key, after)
		return nil
	}
	next := pod.DeepCopy()
	for i := range next.Status.Conditions {
		cond := &next.Status.Conditions[i]
		if cond.Type == corev1.DisruptionTarget {
			// As upstream's UpdatePodCondition with only type and status: reason and
			// message go, the transition is now.
			*cond = corev1.PodCondition{
				Type:               corev1.DisruptionTarget,
				Status:             corev1.ConditionFalse,
				ObservedGeneration: next.Generation,
				LastTransitionTime: metav1.NewTime(c.clock.Now()),
			}
		}
	}
	if _, err := c.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("resetting the DisruptionTarget condition of pod %s: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Reset stale DisruptionTarget condition to False", "pod", klog.KObj(pod))
	return nil
}
