// Package pvprotection is berth's PV protection controller (kube-controller-manager's
// pv-protection controller). It stands at the end of a PersistentVolume's flow: the API
// server's StorageObjectInUseProtection admission gives every new volume the
// kubernetes.io/pv-protection finalizer, so that deleting a volume only marks it; this
// controller removes the finalizer once the volume is not bound to a claim (upstream's test of
// use is status.phase Bound), and the API server then deletes it.
//
// Its queue holds volume names: a volume is queued when it is added or updated while being
// deleted with the finalizer, or when it lacks the finalizer (it then gets it, as upstream,
// for volumes created while admission did not add it).
package pvprotection

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// Finalizer is what StorageObjectInUseProtection admission puts on every volume.
const Finalizer = "kubernetes.io/pv-protection"

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "pv-protection"

// Controller removes the protection finalizer from deleted volumes that are not bound.
type Controller struct {
	client  kubernetes.Interface
	volumes corelisters.PersistentVolumeLister
	synced  cache.InformerSynced
	queue   workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a FailedSync event on a volume whose sync panicked (upstream's
	// controller records no events of its own).
	Recorder events.EventRecorder
}

// NewController returns a PV protection controller fed by the volume informer. Start the
// informer and call Run.
func NewController(client kubernetes.Interface, volumeInformer coreinformers.PersistentVolumeInformer) *Controller {
	c := &Controller{
		client:  client,
		volumes: volumeInformer.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "pvprotection"}),
	}
	reg, _ := volumeInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.volumeChanged,
		UpdateFunc: func(_, cur any) { c.volumeChanged(cur) },
	})
	c.synced = reg.HasSynced
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "PV protection controller",
		Queue:          c.queue,
		Sync:           c.sync,
		Reference:      func(name string) *corev1.ObjectReference { return recovery.Reference("PersistentVolume", name) },
		Recorder:       c.Recorder,
		KeyName:        "PV",
		FailureMessage: "Failed to process PV, will retry",
		Expected: func(err error) (string, bool) {
			return "Conflict on the PV's finalizers, will retry", apierrors.IsConflict(err)
		},
	}
	return w.Run(ctx, workers, c.synced)
}

// finalizers is the finalizer list pv should have, and whether that differs from its own.
func finalizers(pv *corev1.PersistentVolume) ([]string, bool) {
	has := slices.Contains(pv.Finalizers, Finalizer)
	switch {
	case pv.DeletionTimestamp != nil && has && !isUsed(pv):
		return slices.DeleteFunc(slices.Clone(pv.Finalizers), func(f string) bool { return f == Finalizer }), true
	case pv.DeletionTimestamp == nil && !has:
		return append(slices.Clone(pv.Finalizers), Finalizer), true
	}
	return pv.Finalizers, false
}

// isUsed is upstream's test: a volume is in use while it is bound to a claim.
func isUsed(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeBound
}

// volumeChanged queues a volume being deleted with the finalizer, or one lacking it.
func (c *Controller) volumeChanged(obj any) {
	pv, ok := obj.(*corev1.PersistentVolume)
	if !ok {
		return
	}
	has := slices.Contains(pv.Finalizers, Finalizer)
	if (pv.DeletionTimestamp != nil && has) || (pv.DeletionTimestamp == nil && !has) {
		c.queue.Add(pv.Name)
	}
}

// sync writes the finalizers the cached volume name should have, if they differ.
func (c *Controller) sync(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Processing PV", "PV", klog.KRef("", name))
	pv, err := c.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("PV not found, ignoring", "PV", klog.KRef("", name))
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting PV %s from the cache: %w", name, err)
	}
	want, changed := finalizers(pv)
	if !changed {
		if pv.DeletionTimestamp != nil {
			logger.V(4).Info("Keeping PV because it is being used", "PV", klog.KObj(pv))
		}
		return nil
	}
	// The update carries the cached resourceVersion: a volume changed since (bound, say)
	// fails with a conflict and is decided again on its new state.
	clone := pv.DeepCopy()
	clone.Finalizers = want
	if _, err := c.client.CoreV1().PersistentVolumes().Update(ctx, clone, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("updating the finalizers of PV %s: %w", name, err)
	}
	if slices.Contains(want, Finalizer) {
		logger.V(3).Info("Added protection finalizer to PV", "PV", klog.KObj(pv))
	} else {
		logger.V(3).Info("Removed protection finalizer from PV", "PV", klog.KObj(pv))
	}
	return nil
}
