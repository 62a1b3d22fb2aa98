// Package statefulset is berth's StatefulSet controller (kube-controller-manager's
// statefulset-controller): the step of the flow before the scheduler for pods with stable
// identities. For each StatefulSet it keeps spec.replicas pods named "<set>-<ordinal>",
// creating them in ordinal order and each only once its predecessors are Running and Ready
// (OrderedReady), or all at once (Parallel); it deletes pods beyond the range highest
// ordinal first, recreates failed ones under the same name, and rolls pods to a new
// template from the highest ordinal down to the partition, at most maxUnavailable at a
// time, or leaves that to the user (OnDelete). Each template is a ControllerRevision
// (pkg/controllers/history); the pods' controller-revision-hash label and the set's
// status.currentRevision and updateRevision say which pods run which.
//
// berth serves no PersistentVolumeClaims yet: a set with volumeClaimTemplates gets no pods;
// each sync that would create one records a Warning FailedCreate event and the set carries
// a ReplicaFailure condition saying so, until the claims can be made.
//
// The queue holds StatefulSet keys ("namespace/name"). A set is queued when it changes and
// when a pod it controls (or an orphan it selects) is added, changed or deleted; a sync
// reads the caches, plans the sync with planSync (plan.go, pure) and carries it out.
package statefulset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/history"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerKind is the kind of the sets' controller references.
var controllerKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

// controllerName names the controller in logs and berth_recovered_panics_total.
const controllerName = "statefulset"

// reconcile is one set's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).sync

// Controller keeps the pods of StatefulSets.
type Controller struct {
	client  kubernetes.Interface
	sets    appslisters.StatefulSetLister
	pods    corelisters.PodLister
	history *history.History
	// podControl patches pods on adoption and release.
	podControl podcontrol.Interface
	synced     []cache.InformerSynced
	clock      clock.PassiveClock

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets upstream's events on the sets (SuccessfulCreate "Create Pod
	// web-0 in StatefulSet web successful", ...), and FailedSync when a sync panicked.
	Recorder events.EventRecorder
}

// NewStatefulSetController returns a StatefulSet controller fed by the given informers.
// Start the informers and call Run.
func NewStatefulSetController(client kubernetes.Interface, podInformer coreinformers.PodInformer,
	setInformer appsinformers.StatefulSetInformer, revInformer appsinformers.ControllerRevisionInformer) *Controller {
	c := &Controller{
		client:  client,
		sets:    setInformer.Lister(),
		pods:    podInformer.Lister(),
		history: history.NewHistory(client, revInformer),
		clock:   clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "statefulset"}),
	}
	c.podControl = podcontrol.NewDeferred(client, &c.Recorder)
	podReg, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	setReg, _ := setInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, cur any) { c.enqueue(cur) },
		DeleteFunc: c.enqueue,
	})
	c.synced = []cache.InformerSynced{podReg.HasSynced, setReg.HasSynced, revInformer.Informer().HasSynced}
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "stateful set controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("apps/v1", "StatefulSet"),
		Recorder:       c.Recorder,
		KeyName:        "statefulSet",
		FailureMessage: "Error syncing StatefulSet, requeuing",
		Expected: func(err error) (string, bool) {
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return "StatefulSet sync raced another write; retrying", true
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

// resolve is the set ref names, if it is a StatefulSet in the cache with ref's UID.
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.StatefulSet {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	set, err := c.sets.StatefulSets(namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil
	}
	return set
}

// enqueueSelecting queues the sets whose selector matches an orphan pod, which may adopt it.
func (c *Controller) enqueueSelecting(pod *corev1.Pod) {
	sets, err := c.sets.GetPodStatefulSets(pod)
	if err != nil {
		return // none selects it
	}
	for _, set := range sets {
		c.enqueue(set)
	}
}

func (c *Controller) addPod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if set := c.resolve(pod.Namespace, ref); set != nil {
			c.enqueue(set)
		}
		return
	}
	c.enqueueSelecting(pod)
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	pod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || pod.ResourceVersion == oldPod.ResourceVersion {
		return // a resync: nothing changed
	}
	ref, oldRef := metav1.GetControllerOfNoCopy(pod), metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(ref, oldRef)
	if refChanged && oldRef != nil {
		if set := c.resolve(oldPod.Namespace, oldRef); set != nil {
			c.enqueue(set)
		}
	}
	if ref != nil {
		set := c.resolve(pod.Namespace, ref)
		if set == nil {
			return
		}
		c.enqueue(set)
		// A pod that became ready becomes available minReadySeconds later.
		if !podcontrol.IsPodReady(oldPod) && podcontrol.IsPodReady(pod) && set.Spec.MinReadySeconds > 0 {
			key, _ := cache.MetaNamespaceKeyFunc(set)
			c.queue.AddAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(pod.Labels, oldPod.Labels) {
		c.enqueueSelecting(pod)
	}
}

func (c *Controller) deletePod(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if set := c.resolve(pod.Namespace, metav1.GetControllerOfNoCopy(pod)); set != nil {
		c.enqueue(set)
	}
}

// sync brings the set whose key is key in line with its spec.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() { logger.V(4).Info("Finished syncing statefulset", "key", key, "time", c.clock.Since(start)) }()

	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued
	}
	set, err := c.sets.StatefulSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("StatefulSet has been deleted", "key", key)
		return nil
	}
	if err != nil {
		return err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil {
		// Validation refuses such a selector; retrying cannot help.
		utilruntime.HandleErrorWithContext(ctx, err, "Error converting StatefulSet selector", "key", key)
		return nil
	}

	// 1. Claim revisions and pods: adopt matching orphans, release owned pods that no longer
	// match.
	owner := controllerref.Owner{Object: set, Kind: controllerKind, Selector: selector, CanAdopt: c.canAdopt(set),
		Match: func(o metav1.Object) bool { pod, ok := o.(*corev1.Pod); return ok && isMemberOf(set, pod) }}
	listed, err := c.history.List(set, controllerKind, selector)
	if err != nil {
		return err
	}
	revOwner := owner
	revOwner.Match = nil
	revisions, err := c.history.Claim(ctx, revOwner, listed)
	if err != nil {
		return fmt.Errorf("can't adopt ControllerRevisions: %w", err)
	}
	nsPods, err := c.pods.Pods(ns).List(labels.Everything())
	if err != nil {
		return err
	}
	pods, err := controllerref.ClaimPods(ctx, owner, nsPods, c.podControl)
	if err != nil {
		return err
	}

	// 2. Revisions, the plan, its writes, the status.
	return c.syncSet(ctx, set.DeepCopy(), pods, revisions)
}

// canAdopt re-gets set uncached before the first adoption, so that a set deleted (or
// recreated) behind the cache adopts nothing.
func (c *Controller) canAdopt(set *appsv1.StatefulSet) func(context.Context) error {
	return controllerref.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != set.UID {
			return nil, fmt.Errorf("original StatefulSet %v/%v is gone: got uid %v, wanted %v", set.Namespace, set.Name, fresh.UID, set.UID)
		}
		return fresh, nil
	})
}

// syncSet is upstream's UpdateStatefulSet on claimed pods and revisions.
func (c *Controller) syncSet(ctx context.Context, set *appsv1.StatefulSet, pods []*corev1.Pod, revisions []*appsv1.ControllerRevision) error {
	logger := klog.FromContext(ctx)
	if set.Spec.UpdateStrategy.Type == appsv1.RecreateStatefulSetStrategyType {
		// The Recreate strategy is behind an alpha gate upstream, off by default.
		err := fmt.Errorf("statefulset %s/%s uses Recreate strategy but feature gate StatefulSetRecreateStrategy is disabled", set.Namespace, set.Name)
		c.event(set, corev1.EventTypeWarning, "UnknownStrategy", "Sync", "%s", err.Error())
		return err
	}
	history.Sort(revisions)
	current, update, collisionCount, err := chooseRevisions(ctx, c.history, set, revisions)
	if err != nil {
		return err
	}
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return err
	}
	updateSet, err := applyRevision(set, update)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	p := planSync(planInput{set: set, currentSet: currentSet, updateSet: updateSet, currentRevision: current.Name,
		update: update.Name, collisionCount: collisionCount, pods: pods, now: now})

	// 3. The writes, phase by phase; the status is recorded even when one failed.
	rolled, writeErr := c.apply(ctx, set, updateSet, p)
	if p.claims != nil {
		c.event(set, corev1.EventTypeWarning, podcontrol.FailedCreatePodReason, "Create", "%s", claimFailedMessage(set, p.claims))
	}
	status := p.status
	status.CurrentReplicas -= int32(rolled)
	completeUpdate(set, &status)
	statusErr := c.updateStatus(ctx, set, &status)
	if statusErr == nil {
		logger.V(4).Info("Updated status", "statefulSet", klog.KObj(set), "replicas", status.Replicas, "readyReplicas", status.ReadyReplicas,
			"currentReplicas", status.CurrentReplicas, "updatedReplicas", status.UpdatedReplicas)
	}

	// 4. The history beyond revisionHistoryLimit, whatever happened.
	var truncErr error
	for _, r := range revisionsToTruncate(set, pods, revisions, current, update) {
		if err := c.history.Delete(ctx, r); err != nil {
			truncErr = err
			break
		}
	}
	if err := errors.Join(writeErr, statusErr, truncErr); err != nil {
		return err
	}

	// 5. A set whose ready pods are not all available yet is looked at again when the next
	// one will be.
	if set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		next := time.Duration(set.Spec.MinReadySeconds) * time.Second
		if d := podcontrol.NextAvailabilityCheck(pods, set.Spec.MinReadySeconds, now, c.clock); d != nil {
			next = *d
		}
		key, _ := cache.MetaNamespaceKeyFunc(set)
		c.queue.AddAfter(key, next)
	}
	return nil
}

// apply carries out p's phases in order, stopping at the first that failed; it returns how
// many rolling-update deletions succeeded.
func (c *Controller) apply(ctx context.Context, set, updateSet *appsv1.StatefulSet, p plan) (rolled int, err error) {
	for _, ph := range p.phases {
		var done int
		if p.ordered || ph.name == phaseRolling {
			// Rolling deletions go one by one in both modes, as upstream's loop.
			for _, o := range ph.ops {
				if err = c.do(ctx, set, updateSet, o); err != nil {
					break
				}
				done++
			}
		} else {
			var next atomic.Int64
			done, err = podcontrol.SlowStartBatch(ctx, len(ph.ops), podcontrol.SlowStartInitialBatchSize, func() error {
				return c.do(ctx, set, updateSet, ph.ops[next.Add(1)-1])
			})
		}
		if ph.name == phaseRolling {
			rolled = done
		}
		if err != nil {
			return rolled, err
		}
	}
	return rolled, nil
}

// do carries out one op, evented as upstream's StatefulPodControl.
func (c *Controller) do(ctx context.Context, set, updateSet *appsv1.StatefulSet, o op) error {
	logger := klog.FromContext(ctx)
	switch o.kind {
	case opCreate:
		_, err := c.client.CoreV1().Pods(o.pod.Namespace).Create(ctx, o.pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return err // the cache is behind, or the namespace is going: no fault to report
		}
		c.podEvent(set, "Create", o.pod.Name, err)
		return wrap(err, "creating", o.pod)
	case opDelete:
		logger.V(2).Info("Pod of StatefulSet is terminating", "statefulSet", klog.KObj(set), "pod", klog.KObj(o.pod))
		err := c.client.CoreV1().Pods(o.pod.Namespace).Delete(ctx, o.pod.Name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		c.podEvent(set, "Delete", o.pod.Name, err)
		return wrap(err, "deleting", o.pod)
	case opIdentity:
		err := c.updateIdentity(ctx, updateSet, o.pod)
		c.podEvent(set, "Update", o.pod.Name, err)
		return wrap(err, "updating", o.pod)
	}
	return nil
}

func wrap(err error, verb string, pod *corev1.Pod) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s pod %s/%s: %w", verb, pod.Namespace, pod.Name, err)
}

// updateIdentity writes pod with the identity labels of its ordinal in set, retrying
// conflicts on a fresh copy.
func (c *Controller) updateIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	client := c.client.CoreV1().Pods(pod.Namespace)
	pod = pod.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if identityMatches(set, pod) {
			return nil
		}
		updateIdentity(set, pod)
		_, err := client.Update(ctx, pod, metav1.UpdateOptions{})
		if err != nil {
			if fresh, getErr := client.Get(ctx, pod.Name, metav1.GetOptions{}); getErr == nil {
				pod = fresh
			}
		}
		return err
	})
}

// podEvent records upstream's event of a pod write: SuccessfulCreate "Create Pod web-0 in
// StatefulSet web successful", FailedDelete "Delete Pod web-0 in StatefulSet web failed
// error: ...".
func (c *Controller) podEvent(set *appsv1.StatefulSet, verb, pod string, err error) {
	if err == nil {
		c.event(set, corev1.EventTypeNormal, "Successful"+verb, verb, "%s Pod %s in StatefulSet %s successful", verb, pod, set.Name)
		return
	}
	c.event(set, corev1.EventTypeWarning, "Failed"+verb, verb, "%s Pod %s in StatefulSet %s failed error: %s", verb, pod, set.Name, err)
}

// event records on set; a nil Recorder records nothing (unit tests).
func (c *Controller) event(set *appsv1.StatefulSet, eventType, reason, action, note string, args ...any) {
	if c.Recorder != nil {
		c.Recorder.Eventf(set, nil, eventType, reason, action, note, args...)
	}
}

// updateStatus writes status if it differs from set's, retrying conflicts on the cached set.
func (c *Controller) updateStatus(ctx context.Context, set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) error {
	if !statusChanged(set, status) {
		return nil
	}
	set = set.DeepCopy()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		set.Status = *status
		_, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, set, metav1.UpdateOptions{})
		if err != nil {
			if fresh, getErr := c.sets.StatefulSets(set.Namespace).Get(set.Name); getErr == nil {
				set = fresh.DeepCopy()
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("updating the status of StatefulSet %s/%s: %w", set.Namespace, set.Name, err)
	}
	return nil
}

// statusChanged is upstream's inconsistentStatus.
func statusChanged(set *appsv1.StatefulSet, status *appsv1.StatefulSetStatus) bool {
	s := set.Status
	return status.ObservedGeneration > s.ObservedGeneration ||
		status.Replicas != s.Replicas ||
		status.CurrentReplicas != s.CurrentReplicas ||
		status.ReadyReplicas != s.ReadyReplicas ||
		status.UpdatedReplicas != s.UpdatedReplicas ||
		status.CurrentRevision != s.CurrentRevision ||
		status.AvailableReplicas != s.AvailableReplicas ||
		status.UpdateRevision != s.UpdateRevision ||
		!reflect.DeepEqual(s.Conditions, status.Conditions) ||
		!reflect.DeepEqual(s.CollisionCount, status.CollisionCount)
}
