// Package pvcprotection is berth's PVC protection controller (kube-controller-manager's
// pvc-protection controller). It stands at the end of a PersistentVolumeClaim's flow: the API
// server's StorageObjectInUseProtection admission gives every new claim the
// kubernetes.io/pvc-protection finalizer, so that deleting a claim only marks it; this
// controller removes the finalizer once no pod uses the claim, and the API server then
// deletes it. Without it a deleted claim, and the namespace holding it, would stay
// Terminating for ever.
//
// Its queue holds claim keys. A claim is queued when it is added or updated while being
// deleted with the finalizer (or when it lacks the finalizer, which it then gets, as
// upstream); the claims a pod names are queued when the pod is deleted, terminates or is
// unscheduled. A sync asks the pod informer's cache first (a pod there using the claim keeps
// it); when the cache finds none, it lists the namespace's pods from the API server, since a
// pod just created may not be in the cache yet, and removes the finalizer only if that list
// finds none either.
package pvcprotection

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "pvc-protection"

// podClaimIndex indexes pods by the "<namespace>/<claim>" keys of the claims they name.
const podClaimIndex = "pod-pvc-index"

// Controller removes the protection finalizer from deleted claims no pod uses.
type Controller struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	pods   cache.Indexer
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a FailedSync event on a claim whose sync panicked (upstream's
	// controller records no events of its own).
	Recorder events.EventRecorder
}

// NewController returns a PVC protection controller fed by the claim and pod informers.
// Start the informers and call Run.
func NewController(client kubernetes.Interface, claimInformer coreinformers.PersistentVolumeClaimInformer, podInformer coreinformers.PodInformer) *Controller {
	c := &Controller{
		client: client,
		claims: claimInformer.Lister(),
		pods:   podInformer.Informer().GetIndexer(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvcprotection"}),
	}
	addPodClaimIndex(podInformer.Informer())
	claimReg, _ := claimInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.claimChanged,
		UpdateFunc: func(_, cur any) { c.claimChanged(cur) },
	})
	podReg, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.podChanged(nil, obj, false) },
		UpdateFunc: func(old, cur any) { c.podChanged(old, cur, false) },
		DeleteFunc: func(obj any) { c.podChanged(nil, obj, true) },
	})
	c.synced = []cache.InformerSynced{claimReg.HasSynced, podReg.HasSynced}
	return c
}

// addPodClaimIndex adds the claim index to the shared pod informer unless it has it: a
// controller rebuilt by its supervisor finds the informer started and its index there.
func addPodClaimIndex(inf cache.SharedIndexInformer) {
	if _, ok := inf.GetIndexer().GetIndexers()[podClaimIndex]; ok {
		return
	}
	err := inf.AddIndexers(cache.Indexers{podClaimIndex: func(obj any) ([]string, error) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, nil
		}
		names := claimNames(pod)
		keys := make([]string, len(names))
		for i, n := range names {
			keys[i] = pod.Namespace + "/" + n
		}
		return keys, nil
	}})
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("adding the PVC protection controller's pod index: %w", err))
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "PVC protection controller",
		Queue:          c.queue,
		Sync:           c.sync,
		Reference:      recovery.ReferenceByKey("v1", "PersistentVolumeClaim"),
		Recorder:       c.Recorder,
		KeyName:        "PVC",
		FailureMessage: "Failed to process PVC, will retry",
		Expected: func(err error) (string, bool) {
			return "Conflict on the PVC's finalizers, will retry", apierrors.IsConflict(err)
		},
	}
	return w.Run(ctx, workers, c.synced...)
}

// claimChanged queues a claim that has something to be done to it.
func (c *Controller) claimChanged(obj any) {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok || decide(pvc) == keep {
		return
	}
	c.queue.Add(pvc.Namespace + "/" + pvc.Name)
}

// podChanged queues the claims of a pod whose change may free them. An update may hide the
// deletion of one pod and the creation of another of the same name: the old one's claims
// are queued as a deleted pod's.
func (c *Controller) podChanged(old, cur any, deleted bool) {
	pod := asPod(cur)
	if pod == nil {
		return
	}
	c.queuePodClaims(pod, deleted)
	if oldPod := asPod(old); oldPod != nil && oldPod.UID != pod.UID {
		c.queuePodClaims(oldPod, true)
	}
}

func (c *Controller) queuePodClaims(pod *corev1.Pod, deleted bool) {
	if !mayFreeClaims(pod, deleted) {
		return
	}
	for _, name := range claimNames(pod) {
		c.queue.Add(pod.Namespace + "/" + name)
	}
}

// asPod is obj as a pod, through a deletion's tombstone; nil if it is none.
func asPod(obj any) *corev1.Pod {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, _ := obj.(*corev1.Pod)
	return pod
}

// sync does to the claim key names what decide says.
func (c *Controller) sync(ctx context.Context, key string) error {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key this controller queued: nothing to retry
	}
	logger.V(4).Info("Processing PVC", "PVC", klog.KRef(ns, name))
	pvc, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PVC not found, ignoring", "PVC", klog.KRef(ns, name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting PVC %s from the cache: %w", key, err)
	}
	switch decide(pvc) {
	case checkUse:
		used, err := c.isUsed(ctx, pvc)
		if err != nil {
			return err
		}
		if used {
			logger.V(2).Info("Keeping PVC because it is being used", "PVC", klog.KObj(pvc))
			return nil
		}
		return c.writeFinalizers(ctx, pvc, slices.DeleteFunc(slices.Clone(pvc.Finalizers), func(f string) bool { return f == Finalizer }))
	case addFinalizer:
		return c.writeFinalizers(ctx, pvc, append(slices.Clone(pvc.Finalizers), Finalizer))
	}
	return nil
}

// isUsed reports whether a pod uses pvc: one in the informer's cache, or, when the cache has
// none, one in a live list of the namespace's pods (the cache may not have a new pod yet).
func (c *Controller) isUsed(ctx context.Context, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	logger := klog.FromContext(ctx)
	objs, err := c.pods.ByIndex(podClaimIndex, pvc.Namespace+"/"+pvc.Name)
	if err != nil {
		// The live list decides instead.
		logger.Error(err, "Cache-based list of pods failed", "PVC", klog.KObj(pvc))
	}
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok && podUsesClaim(pod, pvc) {
			logger.V(2).Info("Pod uses PVC", "pod", klog.KObj(pod), "PVC", klog.KObj(pvc))
			return true, nil
		}
	}
	logger.V(4).Info("No Pod using PVC was found in the Informer's cache", "PVC", klog.KObj(pvc))

	pods, err := c.client.CoreV1().Pods(pvc.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return false, fmt.Errorf("live list of pods failed: %w", err)
	}
	for i := range pods.Items {
		if podUsesClaim(&pods.Items[i], pvc) {
			logger.V(2).Info("Pod uses PVC", "pod", klog.KObj(&pods.Items[i]), "PVC", klog.KObj(pvc))
			return true, nil
		}
	}
	logger.V(2).Info("PVC is unused", "PVC", klog.KObj(pvc))
	return false, nil
}

// writeFinalizers updates pvc with finalizers as its only change. The update carries the
// cached resourceVersion, so a claim changed since fails with a conflict and is synced again.
func (c *Controller) writeFinalizers(ctx context.Context, pvc *corev1.PersistentVolumeClaim, finalizers []string) error {
	logger := klog.FromContext(ctx)
	clone := pvc.DeepCopy()
	clone.Finalizers = finalizers
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pvc.Namespace).Update(ctx, clone, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the finalizers of PVC %s/%s: %w", pvc.Namespace, pvc.Name, err)
	}
	if slices.Contains(finalizers, Finalizer) {
		logger.V(3).Info("Added protection finalizer to PVC", "PVC", klog.KObj(pvc))
	} else {
		logger.V(3).Info("Removed protection finalizer from PVC", "PVC", klog.KObj(pvc))
	}
	return nil
}
