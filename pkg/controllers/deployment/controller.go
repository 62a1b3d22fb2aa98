// Package deployment is berth's Deployment controller (kube-controller-manager's
// deployment-controller). It stands at the head of a workload's flow, before the ReplicaSet
// controller: "kubectl apply (Deployment) ─► this controller ─► ReplicaSets ─► ReplicaSet
// controller ─► pods ─► scheduler ─► node agent". A Deployment never creates pods; it keeps
// one ReplicaSet per pod template it has had, and sizes them.
//
// A Deployment's ReplicaSets are those it controls (claimed through pkg/controllers/
// controllerref: matching orphans adopted, non-matching ones released). The one whose
// template equals the Deployment's but for the pod-template-hash label is the new
// ReplicaSet; it is named "<deployment>-<hash>" and labelled and selected by
// pod-template-hash=<hash>, the hash being upstream's ComputeHash so that names match
// Kubernetes'. A template change is a rollout:
//
//	template changed ─► new ReplicaSet (revision = highest + 1) ─┬─ RollingUpdate: grow the new one within maxSurge,
//	                                                            │   shrink the old ones within maxUnavailable,
//	                                                            │   as the ReplicaSets report pods available
//	                                                            └─ Recreate: old ones to 0, wait for their pods
//	                                                                to go, then the new one to full size
//	─► complete (all replicas updated and available) ─► old ReplicaSets past revisionHistoryLimit deleted
//
// A template equal to an old ReplicaSet's (`kubectl rollout undo` patches one back) makes that
// ReplicaSet the new one again: its revision becomes the highest + 1 and the revision it had
// goes into its revision-history annotation. The deprecated rollback annotation
// (deprecated.deployment.rollback.to) is served too, as upstream. A change of replicas alone
// is a scaling event, shared among the active ReplicaSets in proportion (desired-replicas and
// max-replicas annotations tell it from a rollout step); a paused Deployment is only scaled.
//
// Status follows the ReplicaSets: replicas, updated, ready, available, unavailable and
// terminating counts, observedGeneration, and the conditions Available, Progressing (with
// progressDeadlineSeconds: NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated,
// NewReplicaSetAvailable, ProgressDeadlineExceeded, DeploymentPaused, DeploymentResumed) and
// ReplicaFailure (the ReplicaSets'). `kubectl rollout status` reads them.
//
// Its queue holds Deployment keys. A Deployment is queued when it changes, when a ReplicaSet
// it controls (or might adopt) changes, when a pod of a Recreate Deployment goes, and after
// its progress deadline, to see whether it passed.
package deployment

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs and berth_recovered_panics_total.
const controllerName = "deployment"

// Event reasons, as upstream.
const (
	ScalingReplicaSetReason   = "ScalingReplicaSet"
	SelectingAllReason        = "SelectingAll"
	RollbackRevisionNotFound  = "DeploymentRollbackRevisionNotFound"
	RollbackTemplateUnchanged = "DeploymentRollbackTemplateUnchanged"
	RollbackDone              = "DeploymentRollback"
)

var (
	controllerKind = appsv1.SchemeGroupVersion.WithKind("Deployment")
	rsKind         = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
)

// reconcile is one Deployment's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncDeployment

// Controller rolls Deployments out through their ReplicaSets.
type Controller struct {
	client      kubernetes.Interface
	deployments appslisters.DeploymentLister
	replicaSets appslisters.ReplicaSetLister
	pods        corelisters.PodLister
	synced      []cache.InformerSynced
	clock       clock.Clock

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the Deployment's events (ScalingReplicaSet and the others,
	// with upstream's reasons and messages) and FailedSync on one whose sync panicked.
	Recorder events.EventRecorder
}

// NewDeploymentController returns a Deployment controller fed by the given informers. Start
// the informers and call Run.
func NewDeploymentController(client kubernetes.Interface, dInformer appsinformers.DeploymentInformer,
	rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer) *Controller {
	c := &Controller{
		client:      client,
		deployments: dInformer.Lister(),
		replicaSets: rsInformer.Lister(),
		pods:        podInformer.Lister(),
		clock:       clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "deployment"}),
	}
	dReg, _ := dInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	})
	rsReg, _ := rsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addReplicaSet,
		UpdateFunc: c.updateReplicaSet,
		DeleteFunc: c.deleteReplicaSet,
	})
	podReg, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.deletePod,
	})
	c.synced = []cache.InformerSynced{dReg.HasSynced, rsReg.HasSynced, podReg.HasSynced}
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("apps/v1", "Deployment"),
		Recorder:       c.Recorder,
		KeyName:        "deployment",
		FailureMessage: "Syncing a deployment failed",
		Expected: func(err error) (string, bool) {
			switch {
			case apierrors.IsConflict(err):
				return "Deployment or ReplicaSet changed behind the cache; retrying", true
			case errors.Is(err, errHashCollision):
				return "Hash collision; retrying with a new collision count", true
			}
			return "", false
		},
	}
	return w.Run(ctx, workers, c.synced...)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("couldn't get the key of %T: %w", obj, err))
		return
	}
	c.queue.Add(key)
}

func (c *Controller) enqueueAfter(d *appsv1.Deployment, after time.Duration) {
	c.queue.AddAfter(d.Namespace+"/"+d.Name, after)
}

// replicaSetFrom unwraps a ReplicaSet from an informer event, tombstones included.
func replicaSetFrom(obj any) *appsv1.ReplicaSet {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	rs, _ := obj.(*appsv1.ReplicaSet)
	return rs
}

// addReplicaSet queues the Deployment controlling rs, or, for an orphan, every Deployment
// that might adopt it.
func (c *Controller) addReplicaSet(obj any) {
	rs := replicaSetFrom(obj)
	if rs == nil {
		return
	}
	if rs.DeletionTimestamp != nil {
		c.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
		return
	}
	for _, d := range c.deploymentsSelecting(rs) {
		c.enqueue(d)
	}
}

// updateReplicaSet queues the Deployments that controlled rs before and control it now; an
// orphan whose labels or owner changed goes to every Deployment that might adopt it.
func (c *Controller) updateReplicaSet(old, cur any) {
	oldRS, curRS := replicaSetFrom(old), replicaSetFrom(cur)
	if oldRS == nil || curRS == nil || curRS.ResourceVersion == oldRS.ResourceVersion {
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(curRS), metav1.GetControllerOfNoCopy(oldRS)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := c.resolveControllerRef(oldRS.Namespace, oldRef); d != nil {
			c.enqueue(d)
		}
	}
	if curRef != nil {
		if d := c.resolveControllerRef(curRS.Namespace, curRef); d != nil {
			c.enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(curRS.Labels, oldRS.Labels) {
		for _, d := range c.deploymentsSelecting(curRS) {
			c.enqueue(d)
		}
	}
}

// deleteReplicaSet queues the Deployment that controlled rs (orphans are nobody's concern).
func (c *Controller) deleteReplicaSet(obj any) {
	rs := replicaSetFrom(obj)
	if rs == nil {
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := c.resolveControllerRef(rs.Namespace, ref); d != nil {
			c.enqueue(d)
		}
	}
}

// deletePod queues the Recreate Deployment whose ReplicaSet's pod went: it waits for every
// old pod to go before it creates the new ones.
func (c *Controller) deletePod(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != rsKind.Kind {
		return
	}
	rs, err := c.replicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	rsRef := metav1.GetControllerOfNoCopy(rs)
	if rsRef == nil {
		return
	}
	if d := c.resolveControllerRef(rs.Namespace, rsRef); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		c.enqueue(d)
	}
}

// resolveControllerRef is the cached Deployment ref names, if it is the same object (UID).
func (c *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != controllerKind.Kind {
		return nil
	}
	d, err := c.deployments.Deployments(namespace).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// deploymentsSelecting is the Deployments whose (non-empty) selector matches rs's labels.
func (c *Controller) deploymentsSelecting(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	all, err := c.deployments.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range all {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	return out
}

// syncDeployment brings the Deployment whose key is key one step further in its rollout.
func (c *Controller) syncDeployment(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing deployment", "deployment", key, "duration", c.clock.Since(start))
	}()
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}

	// 1. The Deployment, with the API's defaults wherever the cache lacks them.
	cached, err := c.deployments.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(2).Info("Deployment has been deleted", "deployment", key)
		return nil
	}
	if err != nil {
		return err
	}
	d := cached.DeepCopy()
	setDefaults(d)

	// A Deployment selecting everything would claim every ReplicaSet of its namespace.
	if selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil && selector.Empty() {
		c.event(d, nil, corev1.EventTypeWarning, SelectingAllReason, "Sync", "This deployment is selecting all pods. A non-empty selector is required.")
		if d.Status.ObservedGeneration < d.Generation {
			d.Status.ObservedGeneration = d.Generation
			return c.updateStatus(ctx, d)
		}
		return nil
	}

	// 2. Its ReplicaSets, adopted and released.
	rsList, err := c.claimReplicaSets(ctx, d)
	if err != nil {
		return err
	}

	// 3. The step the Deployment's state calls for. In a terminating namespace every create
	// fails and the namespace's deletion removes everything: nothing to retry, as upstream.
	err = c.step(ctx, d, rsList)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		logger.V(4).Info("Namespace terminating; not retrying", "deployment", key)
		return nil
	}
	return err
}

// step takes the one step d's state calls for: a status update while it is being deleted,
// scaling while paused or scaled, a rollback when one is asked for, else a step of its
// strategy's rollout.
func (c *Controller) step(ctx context.Context, d *appsv1.Deployment, rsList []*appsv1.ReplicaSet) error {
	if d.DeletionTimestamp != nil {
		return c.syncStatusOnly(ctx, d, rsList)
	}
	if pausedCondition(d, c.clock.Now()) {
		if err := c.updateStatus(ctx, d); err != nil {
			return err
		}
	}
	if d.Spec.Paused {
		return c.sync(ctx, d, rsList)
	}
	if rollbackTo(d) != nil {
		return c.rollback(ctx, d, rsList)
	}
	scaling, err := c.isScalingEvent(ctx, d, rsList)
	if err != nil {
		return err
	}
	if scaling {
		return c.sync(ctx, d, rsList)
	}
	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		return c.rolloutRecreate(ctx, d, rsList)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return c.rolloutRolling(ctx, d, rsList)
	}
	return fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type)
}

// setDefaults fills what the API server defaults in apps/v1 and a cache (or a client that
// skipped the API server) may lack, so that the arithmetic need not check.
func setDefaults(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = new(int32(1))
	}
	if d.Spec.Strategy.Type == "" {
		d.Spec.Strategy.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType && d.Spec.Strategy.RollingUpdate == nil {
		quarter := intstr.FromString("25%")
		d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}
	}
}

// claimReplicaSets is the ReplicaSets d controls, after adopting the orphans its selector
// matches and releasing those it no longer does. Each has spec.replicas set.
func (c *Controller) claimReplicaSets(ctx context.Context, d *appsv1.Deployment) ([]*appsv1.ReplicaSet, error) {
	all, err := c.replicaSets.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("deployment %s/%s has invalid label selector: %w", d.Namespace, d.Name, err)
	}
	owner := controllerref.Owner{
		Object:   d,
		Kind:     controllerKind,
		Selector: selector,
		CanAdopt: controllerref.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
			fresh, err := c.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			if fresh.UID != d.UID {
				return nil, fmt.Errorf("original Deployment %v/%v is gone: got uid %v, wanted %v", d.Namespace, d.Name, fresh.UID, d.UID)
			}
			return fresh, nil
		}),
	}
	// The sync goes on from the adopted ReplicaSets as patched: a write from the cached copy
	// would conflict (or, without a resource version, undo the adoption).
	patched := map[types.UID]*appsv1.ReplicaSet{}
	claimed, err := controllerref.Claim(ctx, owner, all, func(ctx context.Context, rs *appsv1.ReplicaSet, patch []byte) error {
		out, err := c.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err == nil {
			patched[rs.UID] = out
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	for i, rs := range claimed {
		if p, ok := patched[rs.UID]; ok {
			rs = p
		}
		claimed[i] = withReplicas(rs)
	}
	return claimed, nil
}

// podsByReplicaSet is the pods of rss from the cache, by the UID of the ReplicaSet
// controlling each.
func (c *Controller) podsByReplicaSet(d *appsv1.Deployment, rss []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	byUID := make(map[types.UID][]*corev1.Pod, len(rss))
	for _, rs := range rss {
		byUID[rs.UID] = nil
	}
	pods, err := c.pods.Pods(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, pod := range pods {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			if _, ok := byUID[ref.UID]; ok {
				byUID[ref.UID] = append(byUID[ref.UID], pod)
			}
		}
	}
	return byUID, nil
}

// event records an event on d; a nil Recorder records nothing (unit tests).
func (c *Controller) event(d *appsv1.Deployment, related *appsv1.ReplicaSet, eventType, reason, action, note string, args ...any) {
	if c.Recorder == nil {
		return
	}
	if related != nil {
		c.Recorder.Eventf(d, related, eventType, reason, action, note, args...)
		return
	}
	c.Recorder.Eventf(d, nil, eventType, reason, action, note, args...)
}
