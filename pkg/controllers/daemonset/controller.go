// Package daemonset is berth's DaemonSet controller (kube-controller-manager's
// daemon-set-controller): the step of the flow before the scheduler for pods that run once
// per node. For each DaemonSet it keeps one pod on every node its node selector, required
// node affinity and tolerations (plus the daemon tolerations every daemon pod gets) accept.
// Pods are placed through the scheduler: each carries a required node affinity on
// metadata.name, so that the scheduler accounts for its resources. It deletes excess pods,
// pods on nodes that no longer want them, and failed pods (with a per-node back-off), and
// rolls pods to a new template within maxUnavailable, or maxSurge, or leaves that to the
// user (OnDelete). Templates are ControllerRevisions (pkg/controllers/history's index), named
// by upstream's pod template hash.
//
// The queue holds DaemonSet keys. A DaemonSet is queued when it changes, when a pod or
// revision it controls (or an orphan it selects) changes, and when a node is added or its
// labels or taints change in a way that matters to it: the node handler reads the pods on
// that node through a node-name index, so that a thousand nodes' heartbeats cost no sync. A
// sync reads the caches, plans with plan.go (pure) and writes; it waits for the creations
// and deletions it made to be observed (expectations) before planning again, and creates in
// slow-start batches.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/controllerref"
	"github.com/berth-cluster/berth/pkg/controllers/expectations"
	"github.com/berth-cluster/berth/pkg/controllers/history"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

var controllerKind = appsv1.SchemeGroupVersion.WithKind("DaemonSet")

const controllerName = "daemonset"

// Upstream's event reasons.
const (
	SelectingAllReason       = "SelectingAll"
	FailedDaemonPodReason    = "FailedDaemonPod"
	SucceededDaemonPodReason = "SucceededDaemonPod"
)

// Pod indexes on the shared pod informer: by node name (for node events) and by controller
// UID, orphans under "<namespace>/" (for a DaemonSet's own pods).
const (
	NodeNameIndex   = "spec.nodeName"
	controllerIndex = "daemonset.berth/controllerUID"
)

// Failed-pod back-off per node, upstream's: 1s doubling to 15 minutes.
var (
	failedPodBackoff    = time.Second
	maxFailedPodBackoff = 15 * time.Minute
)

// reconcile is one DaemonSet's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).sync

// Controller keeps the daemon pods of DaemonSets.
type Controller struct {
	client     kubernetes.Interface
	sets       appslisters.DaemonSetLister
	nodes      corelisters.NodeLister
	podIndexer cache.Indexer
	history    *history.History
	podControl podcontrol.Interface
	// expect holds each DaemonSet's pending creations (key+"/create") and deletions
	// (key+"/delete"): the shared Expectations keep one kind per key.
	expect  *expectations.Expectations
	backoff *flowcontrol.Backoff
	clock   clock.PassiveClock
	synced  []cache.InformerSynced
	burst   int

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the events on DaemonSets: the pod events of
	// pkg/controllers/podcontrol ("Created pod: NAME"), FailedDaemonPod, SucceededDaemonPod,
	// SelectingAll, and FailedSync when a sync panicked.
	Recorder events.EventRecorder
}

// NewDaemonSetsController returns a DaemonSet controller fed by the given informers. Start
// the informers and call Run.
func NewDaemonSetsController(client kubernetes.Interface, dsInformer appsinformers.DaemonSetInformer,
	revInformer appsinformers.ControllerRevisionInformer, podInformer coreinformers.PodInformer,
	nodeInformer coreinformers.NodeInformer) *Controller {
	c := &Controller{
		client:  client,
		sets:    dsInformer.Lister(),
		nodes:   nodeInformer.Lister(),
		history: history.NewHistory(client, revInformer),
		expect:  expectations.New(),
		backoff: flowcontrol.NewBackOff(failedPodBackoff, maxFailedPodBackoff),
		clock:   clock.RealClock{},
		burst:   podcontrol.BurstReplicas,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "daemonset"}),
	}
	c.podControl = podcontrol.NewDeferred(client, &c.Recorder)
	addPodIndexes(podInformer.Informer())
	c.podIndexer = podInformer.Informer().GetIndexer()

	dsReg, _ := dsInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: c.updateDaemonSet,
		DeleteFunc: c.deleteDaemonSet,
	})
	revReg, _ := revInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.ownedChanged(nil, obj) },
		UpdateFunc: c.ownedChanged,
		DeleteFunc: c.ownedDeleted,
	})
	podReg, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	nodeReg, _ := nodeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.nodeChanged(nil, obj) },
		UpdateFunc: c.nodeChanged,
	})
	c.synced = []cache.InformerSynced{dsReg.HasSynced, revReg.HasSynced, podReg.HasSynced, nodeReg.HasSynced}
	return c
}

// addPodIndexes adds the node-name and controller indexes, unless another controller on
// the shared informer already did.
func addPodIndexes(inf cache.SharedIndexInformer) {
	add := cache.Indexers{}
	existing := inf.GetIndexer().GetIndexers()
	if _, ok := existing[NodeNameIndex]; !ok {
		add[NodeNameIndex] = func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				return nil, nil
			}
			return []string{pod.Spec.NodeName}, nil
		}
	}
	if _, ok := existing[controllerIndex]; !ok {
		add[controllerIndex] = func(obj any) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, nil
			}
			return []string{controllerKey(pod.Namespace, metav1.GetControllerOfNoCopy(pod))}, nil
		}
	}
	if len(add) > 0 {
		if err := inf.AddIndexers(add); err != nil {
			utilruntime.HandleError(fmt.Errorf("adding the DaemonSet controller's pod indexes: %w", err))
		}
	}
}

func controllerKey(namespace string, ref *metav1.OwnerReference) string {
	if ref == nil {
		return namespace + "/"
	}
	return string(ref.UID)
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "daemon sets controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      recovery.ReferenceByKey("apps/v1", "DaemonSet"),
		Recorder:       c.Recorder,
		KeyName:        "daemonset",
		FailureMessage: "Error syncing DaemonSet, requeuing",
		Expected: func(err error) (string, bool) {
			if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
				return "DaemonSet sync raced another write; retrying", true
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

func (c *Controller) enqueueAfter(ds *appsv1.DaemonSet, after time.Duration) {
	if key, err := cache.MetaNamespaceKeyFunc(ds); err == nil {
		c.queue.AddAfter(key, after)
	}
}

func (c *Controller) updateDaemonSet(old, cur any) {
	if o, ok := old.(*appsv1.DaemonSet); ok {
		if n, ok := cur.(*appsv1.DaemonSet); ok && o.UID != n.UID {
			c.deleteDaemonSet(o) // recreated under its name: forget the old one
		}
	}
	c.enqueue(cur)
}

func (c *Controller) deleteDaemonSet(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		c.expect.Delete(key + "/create")
		c.expect.Delete(key + "/delete")
		c.queue.Add(key)
	}
}

func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.DaemonSet {
	if ref == nil || ref.Kind != controllerKind.Kind {
		return nil
	}
	ds, err := c.sets.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil
	}
	return ds
}

// ownedChanged queues the DaemonSet of a revision changed, or those selecting an orphan
// revision added or changed. A revision added with a controller does not queue it, as
// upstream's addHistory: the controller wrote it itself, and a sync for it would dedup a
// revision someone else wrote with the same template at once (the ControllerRevision
// conformance test writes one and counts two).
func (c *Controller) ownedChanged(old, cur any) {
	cr, ok := cur.(*appsv1.ControllerRevision)
	if !ok {
		return
	}
	if o, ok := old.(*appsv1.ControllerRevision); ok {
		if o.ResourceVersion == cr.ResourceVersion {
			return
		}
		if oldRef := metav1.GetControllerOfNoCopy(o); !reflect.DeepEqual(oldRef, metav1.GetControllerOfNoCopy(cr)) {
			if ds := c.resolve(o.Namespace, oldRef); ds != nil {
				c.enqueue(ds)
			}
		}
	}
	if ref := metav1.GetControllerOfNoCopy(cr); ref != nil {
		if ds := c.resolve(cr.Namespace, ref); ds != nil && old != nil {
			c.enqueue(ds)
		}
		return
	}
	if sets, err := c.sets.GetHistoryDaemonSets(cr); err == nil {
		for _, ds := range sets {
			c.enqueue(ds)
		}
	}
}

func (c *Controller) ownedDeleted(obj any) {
	if cr, ok := unwrap(obj).(*appsv1.ControllerRevision); ok {
		if ds := c.resolve(cr.Namespace, metav1.GetControllerOfNoCopy(cr)); ds != nil {
			c.enqueue(ds)
		}
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
		if ds := c.resolve(pod.Namespace, ref); ds != nil {
			key, _ := cache.MetaNamespaceKeyFunc(ds)
			c.expect.CreationObserved(key + "/create")
			c.queue.Add(key)
		}
		return
	}
	c.enqueueSelecting(pod)
}

func (c *Controller) enqueueSelecting(pod *corev1.Pod) {
	if sets, err := c.sets.GetPodDaemonSets(pod); err == nil {
		for _, ds := range sets {
			c.enqueue(ds)
		}
	}
}

func (c *Controller) updatePod(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	pod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || pod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	ref, oldRef := metav1.GetControllerOfNoCopy(pod), metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(ref, oldRef)
	if refChanged && oldRef != nil {
		if ds := c.resolve(oldPod.Namespace, oldRef); ds != nil {
			c.enqueue(ds)
		}
	}
	if ref != nil {
		ds := c.resolve(pod.Namespace, ref)
		if ds == nil {
			return
		}
		c.enqueue(ds)
		if !podcontrol.IsPodReady(oldPod) && podcontrol.IsPodReady(pod) && ds.Spec.MinReadySeconds > 0 {
			c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(pod.Labels, oldPod.Labels) {
		c.enqueueSelecting(pod)
	}
}

func (c *Controller) deletePod(obj any) {
	pod, ok := unwrap(obj).(*corev1.Pod)
	if !ok {
		return
	}
	ds := c.resolve(pod.Namespace, metav1.GetControllerOfNoCopy(pod))
	if ds == nil {
		return
	}
	key, _ := cache.MetaNamespaceKeyFunc(ds)
	c.expect.DeletionObserved(key+"/delete", pod.UID)
	c.queue.Add(key)
}

// nodeChanged queues the DaemonSets a new node, or a node whose labels or taints changed,
// matters to: those that should run there and have no pod there, those with a pod there that
// should not stay, and those with misscheduled pods (upstream's syncNodeUpdate).
func (c *Controller) nodeChanged(old, cur any) {
	node, ok := cur.(*corev1.Node)
	if !ok {
		return
	}
	if o, ok := old.(*corev1.Node); ok &&
		apiequality.Semantic.DeepEqual(o.Labels, node.Labels) && apiequality.Semantic.DeepEqual(o.Spec.Taints, node.Spec.Taints) {
		return // a heartbeat or status change: nothing a DaemonSet decides on
	}
	sets, err := c.sets.List(labels.Everything())
	if err != nil || len(sets) == 0 {
		return
	}
	onNode, err := c.podIndexer.ByIndex(NodeNameIndex, node.Name)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing the pods on node %s: %w", node.Name, err))
		return
	}
	scheduled := map[types.UID]bool{}
	for _, obj := range onNode {
		if pod, ok := obj.(*corev1.Pod); ok {
			if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == controllerKind.Kind {
				scheduled[ref.UID] = true
			}
		}
	}
	for _, ds := range sets {
		run, stay := newEligibility(ds).shouldRun(node)
		has := scheduled[ds.UID]
		if (run && !has) || (!stay && has) || (has && ds.Status.NumberMisscheduled > 0) {
			c.enqueue(ds)
		}
	}
}

// claimPods returns the pods ds controls, after adopting matching orphans and releasing
// owned pods that no longer match.
func (c *Controller) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	var candidates []*corev1.Pod
	for _, key := range []string{controllerKey(ds.Namespace, controllerref.NewRef(ds, controllerKind)), controllerKey(ds.Namespace, nil)} {
		objs, err := c.podIndexer.ByIndex(controllerIndex, key)
		if err != nil {
			return nil, fmt.Errorf("listing the pods of DaemonSet %s/%s: %w", ds.Namespace, ds.Name, err)
		}
		for _, obj := range objs {
			if pod, ok := obj.(*corev1.Pod); ok {
				candidates = append(candidates, pod)
			}
		}
	}
	owner := controllerref.Owner{Object: ds, Kind: controllerKind, Selector: selector, CanAdopt: c.canAdopt(ds)}
	return controllerref.ClaimPods(ctx, owner, candidates, c.podControl)
}

func (c *Controller) canAdopt(ds *appsv1.DaemonSet) func(context.Context) error {
	return controllerref.RecheckDeletionTimestamp(func(ctx context.Context) (metav1.Object, error) {
		fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if fresh.UID != ds.UID {
			return nil, fmt.Errorf("original DaemonSet %v/%v is gone: got uid %v, wanted %v", ds.Namespace, ds.Name, fresh.UID, ds.UID)
		}
		return fresh, nil
	})
}

func (c *Controller) satisfied(key string) bool {
	return c.expect.Satisfied(key+"/create") && c.expect.Satisfied(key+"/delete")
}

// sync brings the DaemonSet whose key is key in line with its nodes.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing daemon set", "daemonset", key, "time", c.clock.Since(start))
	}()

	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	ds, err := c.sets.DaemonSets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(3).Info("Daemon set has been deleted", "daemonset", key)
		c.expect.Delete(key + "/create")
		c.expect.Delete(key + "/delete")
		return nil
	}
	if err != nil {
		return err
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("couldn't get list of nodes when syncing daemon set %s: %w", key, err)
	}
	if ds.Spec.Selector == nil || reflect.DeepEqual(*ds.Spec.Selector, metav1.LabelSelector{}) {
		c.event(ds, corev1.EventTypeWarning, SelectingAllReason, "This daemon set is selecting all pods. A non-empty selector is required.")
		return nil
	}
	if ds.DeletionTimestamp != nil {
		return nil // the garbage collector removes its pods
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Error converting DaemonSet selector", "daemonset", key)
		return nil
	}

	// 1. Revisions: the current one's hash labels new pods.
	cur, old, err := c.constructHistory(ctx, ds, selector)
	if err != nil {
		return fmt.Errorf("failed to construct revisions of DaemonSet: %w", err)
	}
	hash := cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]

	// 2. Pods, by node.
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return err
	}
	now := c.clock.Now()
	v := newView(ds, nodes, pods, hash, now)

	// 3. Unless earlier writes are still to be observed: the core loop, else the rolling
	// update, then the history.
	observed := ds.Status.ObservedGeneration
	var writeErr error
	if c.satisfied(key) {
		observed = ds.Generation
		writeErr = c.update(ctx, ds, key, v, pods, old)
	}

	// 4. Status, from the same snapshot.
	status := planStatus(v, max(observed, ds.Status.ObservedGeneration), ds.Status.CollisionCount)
	statusErr := c.updateStatus(ctx, ds, status)
	if err := errors.Join(writeErr, statusErr); err != nil {
		return err
	}
	if ds.Spec.MinReadySeconds > 0 && status.NumberReady != status.NumberAvailable {
		c.enqueueAfter(ds, time.Duration(ds.Spec.MinReadySeconds)*time.Second)
	}
	return nil
}

// update is upstream's updateDaemonSet: manage, then (if that had nothing to do) the rolling
// update, then the history clean-up.
func (c *Controller) update(ctx context.Context, ds *appsv1.DaemonSet, key string, v view, pods []*corev1.Pod, old []*appsv1.ControllerRevision) error {
	m := planManage(v)
	deletes := append([]*corev1.Pod(nil), m.delete...)
	for _, pod := range m.succeeded {
		c.event(ds, corev1.EventTypeNormal, SucceededDaemonPodReason,
			fmt.Sprintf("Found succeeded daemon pod %s/%s on node %s, will try to delete it", pod.Namespace, pod.Name, pod.Spec.NodeName))
	}
	for _, pod := range m.failed {
		if d, ok := c.failedPodAllowed(ds, pod); !ok {
			c.enqueueAfter(ds, d)
			continue
		}
		c.event(ds, corev1.EventTypeWarning, FailedDaemonPodReason,
			fmt.Sprintf("Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, pod.Spec.NodeName))
		deletes = append(deletes, pod)
	}
	if err := c.syncNodes(ctx, ds, key, deletes, m.create, v.hash); err != nil {
		return err
	}
	if len(deletes) == 0 && len(m.create) == 0 && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		r, err := planRolling(v)
		if err != nil {
			return fmt.Errorf("couldn't get unavailable numbers: %w", err)
		}
		if err := c.syncNodes(ctx, ds, key, r.delete, r.create, v.hash); err != nil {
			return err
		}
	}
	for _, r := range revisionsToClean(ds, pods, old) {
		if err := c.history.Delete(ctx, r); err != nil {
			return fmt.Errorf("failed to clean up revisions of DaemonSet: %w", err)
		}
	}
	return nil
}

// failedPodAllowed reports whether the failed pod's node is out of back-off (and starts the
// next one), else how long it still holds: a pod that fails at once is not recreated in a
// hot loop.
func (c *Controller) failedPodAllowed(ds *appsv1.DaemonSet, pod *corev1.Pod) (time.Duration, bool) {
	key := fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, pod.Spec.NodeName)
	now := c.backoff.Clock.Now()
	if c.backoff.IsInBackOffSinceUpdate(key, now) {
		return c.backoff.Get(key), false
	}
	c.backoff.Next(key, now)
	return 0, true
}

// syncNodes creates a daemon pod for each node of create and deletes deletes, at most burst
// of each, expecting to observe them (upstream's syncNodes).
func (c *Controller) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, key string, deletes []*corev1.Pod, create []string, hash string) error {
	logger := klog.FromContext(ctx)
	if len(create) > c.burst {
		create = create[:c.burst]
	}
	if len(deletes) > c.burst {
		deletes = deletes[:c.burst]
	}
	uids := make([]types.UID, len(deletes))
	for i, p := range deletes {
		uids[i] = p.UID
	}
	c.expect.ExpectCreations(key+"/create", len(create))
	c.expect.ExpectDeletions(key+"/delete", uids)

	var (
		mu   sync.Mutex
		errs []error
		next int
	)
	template := podTemplate(ds, hash)
	ref := controllerref.NewRef(ds, controllerKind)
	_, err := podcontrol.SlowStartBatch(ctx, len(create), podcontrol.SlowStartInitialBatchSize, func() error {
		mu.Lock()
		node := create[next]
		next++
		mu.Unlock()
		t := template.DeepCopy()
		t.Spec.Affinity = withNodeAffinity(t.Spec.Affinity, node)
		err := c.podControl.CreatePod(ctx, podcontrol.PodFromTemplate(t, ds, ref), ds)
		if err != nil {
			c.expect.CreationObserved(key + "/create")
			if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				return nil // the namespace is going; nothing to retry
			}
			return fmt.Errorf("creating the daemon pod for node %s: %w", node, err)
		}
		return nil
	})
	if err != nil {
		errs = append(errs, err)
		// The creates never attempted will never be observed.
		if skipped := len(create) - next; skipped > 0 {
			logger.V(2).Info("Slow-start failure. Skipping creation pods, decrementing expectations for daemon set", "skippedPods", skipped, "daemonset", klog.KObj(ds))
			c.expect.LowerCreations(key+"/create", skipped)
		}
	}

	var wg sync.WaitGroup
	for _, pod := range deletes {
		wg.Go(func() {
			// Outside the worker's panic boundary: a panic is this deletion's error.
			err := recovery.Sync(ctx, controllerName, func() error { return c.podControl.DeletePod(ctx, pod.Namespace, pod.Name, pod.UID, ds) })
			if err == nil {
				return
			}
			c.expect.DeletionObserved(key+"/delete", pod.UID)
			if !apierrors.IsNotFound(err) {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// updateStatus writes status when it differs from ds's (upstream's storeDaemonSetStatus).
func (c *Controller) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, status appsv1.DaemonSetStatus) error {
	s := ds.Status
	if s.DesiredNumberScheduled == status.DesiredNumberScheduled && s.CurrentNumberScheduled == status.CurrentNumberScheduled &&
		s.NumberMisscheduled == status.NumberMisscheduled && s.NumberReady == status.NumberReady &&
		s.UpdatedNumberScheduled == status.UpdatedNumberScheduled && s.NumberAvailable == status.NumberAvailable &&
		s.NumberUnavailable == status.NumberUnavailable && s.ObservedGeneration >= status.ObservedGeneration {
		return nil
	}
	client := c.client.AppsV1().DaemonSets(ds.Namespace)
	toUpdate := ds.DeepCopy()
	var err error
	for i := 0; ; i++ {
		// The collision count and conditions are the stored ones: another writer (a
		// collision bump) may have raised them.
		cc, conds := toUpdate.Status.CollisionCount, toUpdate.Status.Conditions
		toUpdate.Status = status
		toUpdate.Status.CollisionCount, toUpdate.Status.Conditions = cc, conds
		if _, err = client.UpdateStatus(ctx, toUpdate, metav1.UpdateOptions{}); err == nil {
			return nil
		}
		if i >= 1 {
			break
		}
		fresh, getErr := client.Get(ctx, ds.Name, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("error storing status for daemon set %s/%s: %w", ds.Namespace, ds.Name, getErr)
		}
		toUpdate = fresh
	}
	return fmt.Errorf("error storing status for daemon set %s/%s: %w", ds.Namespace, ds.Name, err)
}

// event records on ds; a nil Recorder records nothing (unit tests).
func (c *Controller) event(ds *appsv1.DaemonSet, eventType, reason, note string) {
	if c.Recorder != nil {
		c.Recorder.Eventf(ds, nil, eventType, reason, "Sync", "%s", note)
	}
}
