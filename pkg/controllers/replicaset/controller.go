// Package replicaset is berth's ReplicaSet controller and replication manager
// (kube-controller-manager's replicaset-controller and replication-controller). They stand
// before the scheduler in the pod's flow: a ReplicaSet (or the Deployment above it) or a
// ReplicationController says how many copies of a pod template should run, and this
// controller creates and deletes pods until that many are active, then reports the count in
// the owner's status. One reconcile serves both kinds: a ReplicationController is converted
// to an apps/v1 ReplicaSet at the edges (kinds.go), as upstream's conversion adapter does.
//
// Per owner key ("namespace/name"), a sync reads the owner and its namespace's pods from the
// shared informers' caches and:
//
//  1. checks its expectations (pkg/controllers/expectations): while creates or deletes it made
//     are not yet seen in the cache, it only recomputes the status;
//  2. claims its pods (pkg/controllers/controllerref): adopts matching orphans, releases owned
//     pods that no longer match;
//  3. when it may, creates the missing pods in slow-start batches (1, 2, 4, ...; at most
//     BurstReplicas a sync) or deletes the surplus, picked by the deletion ranking;
//  4. writes the status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
//     terminatingReplicas, observedGeneration, the ReplicaFailure condition) when it changed;
//  5. with minReadySeconds, requeues itself for when its next ready pod becomes available.
//
// An owner is queued when it is added, changed or deleted, and when a pod it owns (or may
// adopt) is added, changed or deleted; the pod events also record the expected observations.
package replicaset

import (
	"context"
	"fmt"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/expectations"
	"github.com/berth-cluster/berth/pkg/controllers/podcontrol"
	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

// Controller keeps the pods of ReplicaSets, or of ReplicationControllers.
type Controller struct {
	// name names the controller in logs and berth_recovered_panics_total.
	name   string
	client kubernetes.Interface
	kind   kind
	pods   corelisters.PodLister
	synced []cache.InformerSynced

	expectations  *expectations.Expectations
	podControl    podcontrol.Interface
	burstReplicas int
	clock         clock.PassiveClock

	queue workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets the events on the owners: upstream's SuccessfulCreate,
	// FailedCreate, SuccessfulDelete and FailedDelete, and FailedSync on an owner whose sync
	// panicked.
	Recorder events.EventRecorder
}

// NewReplicaSetController returns the ReplicaSet controller fed by the given informers.
// Start the informers and call Run.
func NewReplicaSetController(client kubernetes.Interface, rsInformer appsinformers.ReplicaSetInformer, podInformer coreinformers.PodInformer) *Controller {
	return newController("replicaset", client, replicaSets{client: client, lister: rsInformer.Lister()},
		rsInformer.Informer(), podInformer)
}

// NewReplicationManager returns the ReplicationController controller fed by the given
// informers. Start the informers and call Run.
func NewReplicationManager(client kubernetes.Interface, rcInformer coreinformers.ReplicationControllerInformer, podInformer coreinformers.PodInformer) *Controller {
	return newController("replicationmanager", client, replicationControllers{client: client, lister: rcInformer.Lister()},
		rcInformer.Informer(), podInformer)
}

func newController(name string, client kubernetes.Interface, k kind, owners cache.SharedIndexInformer, podInformer coreinformers.PodInformer) *Controller {
	c := &Controller{
		name:          name,
		client:        client,
		kind:          k,
		pods:          podInformer.Lister(),
		expectations:  expectations.New(),
		burstReplicas: podcontrol.BurstReplicas,
		clock:         clock.RealClock{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: name}),
	}
	// The manager sets Recorder after construction; the pod control reads it at each event.
	c.podControl = podcontrol.NewDeferred(client, &c.Recorder)
	ownerRegistration, _ := owners.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.ownerAdded,
		UpdateFunc: c.ownerUpdated,
		DeleteFunc: c.ownerDeleted,
	})
	podRegistration, _ := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.podAdded,
		UpdateFunc: c.podUpdated,
		DeleteFunc: c.podDeleted,
	})
	c.synced = []cache.InformerSynced{ownerRegistration.HasSynced, podRegistration.HasSynced}
	return c
}

// Run starts workers and blocks until ctx is done, then waits for them to stop.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           c.name,
		Title:          c.name + " controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, key string) error { return reconcile(c, ctx, key) },
		Reference:      c.reference,
		Recorder:       c.Recorder,
		KeyName:        c.kindName(),
		FailureMessage: "Syncing " + c.kindName() + " failed",
		Expected: func(err error) (string, bool) {
			return "Conflict writing status; retrying", apierrors.IsConflict(err)
		},
	}
	return w.Run(ctx, workers, c.synced...)
}

// reconcile is one owner's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).sync

func (c *Controller) kindName() string { return c.kind.gvk().Kind }

func (c *Controller) reference(key string) *corev1.ObjectReference {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	gvk := c.kind.gvk()
	return &corev1.ObjectReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Namespace: ns, Name: name}
}

// ownerOf converts an owner informer object, or a tombstone's, to a ReplicaSet.
func (c *Controller) ownerOf(obj any) (*appsv1.ReplicaSet, bool) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	rs, ok := c.kind.asReplicaSet(obj)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("%s controller: unexpected object %T", c.name, obj))
	}
	return rs, ok
}

func (c *Controller) ownerAdded(obj any) {
	if rs, ok := c.ownerOf(obj); ok {
		c.queue.Add(keyOf(rs))
	}
}

// ownerUpdated queues the owner on every update, not only spec changes, as upstream: that
// retries an owner whose creates failed without a periodic resync.
func (c *Controller) ownerUpdated(old, cur any) {
	oldRS, ok1 := c.ownerOf(old)
	curRS, ok2 := c.ownerOf(cur)
	if !ok1 || !ok2 {
		return
	}
	if oldRS.UID != curRS.UID {
		// Deleted and recreated under the name between two events: forget the old one.
		c.ownerDeleted(cache.DeletedFinalStateUnknown{Key: keyOf(oldRS), Obj: old})
	}
	c.queue.Add(keyOf(curRS))
}

// ownerDeleted forgets the owner's expectations, so that one recreated under the name
// starts clean, and queues it (its sync finds it gone).
func (c *Controller) ownerDeleted(obj any) {
	rs, ok := c.ownerOf(obj)
	if !ok {
		return
	}
	c.expectations.Delete(keyOf(rs))
	c.queue.Add(keyOf(rs))
}

// resolve is the owner a controller reference names, from the cache: nil if it is of
// another kind, gone, or a namesake with another UID.
func (c *Controller) resolve(namespace string, ref *metav1.OwnerReference) *appsv1.ReplicaSet {
	if ref.Kind != c.kindName() {
		return nil
	}
	rs, err := c.kind.get(namespace, ref.Name)
	if err != nil || rs.UID != ref.UID {
		return nil
	}
	return rs
}

// queueSelecting queues every owner whose selector matches pod, so that one adopts it.
func (c *Controller) queueSelecting(pod *corev1.Pod) {
	rss := c.kind.selecting(pod)
	if len(rss) > 1 {
		// The controller references keep this harmless, but it is a user error.
		utilruntime.HandleError(fmt.Errorf("user error! more than one %v is selecting pods with labels: %+v", c.kindName(), pod.Labels))
	}
	for _, rs := range rss {
		c.queue.Add(keyOf(rs))
	}
}

// podAdded observes a creation for the pod's controller, or queues the owners that may
// adopt an orphan (which no controller waits for, so none is observed).
func (c *Controller) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (after a restart, say): not a
		// creation to observe.
		c.podDeleted(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if rs := c.resolve(pod.Namespace, ref); rs != nil {
			c.expectations.CreationObserved(keyOf(rs))
			c.queue.Add(keyOf(rs))
		}
		return
	}
	c.queueSelecting(pod)
}

// podUpdated queues the pod's controllers, old and new. A pod marked for deletion counts as
// deleted at once, so that its replacement is created without waiting for the grace period.
func (c *Controller) podUpdated(old, cur any) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || curPod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	labelsChanged := !reflect.DeepEqual(curPod.Labels, oldPod.Labels)
	if curPod.DeletionTimestamp != nil {
		c.podDeleted(curPod)
		if labelsChanged {
			c.podDeleted(oldPod)
		}
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(curPod), metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if rs := c.resolve(oldPod.Namespace, oldRef); rs != nil {
			c.queue.Add(keyOf(rs))
		}
	}
	if curRef != nil {
		rs := c.resolve(curPod.Namespace, curRef)
		if rs == nil {
			return
		}
		c.queue.Add(keyOf(rs))
		// A pod that just became ready becomes available minReadySeconds later; no event
		// will tell then, so look again at that time.
		if !podcontrol.IsPodReady(oldPod) && podcontrol.IsPodReady(curPod) && rs.Spec.MinReadySeconds > 0 {
			c.queue.AddAfter(keyOf(rs), time.Duration(rs.Spec.MinReadySeconds)*time.Second)
		}
		return
	}
	if labelsChanged || refChanged {
		c.queueSelecting(curPod)
	}
}

// podDeleted observes the deletion for the pod's controller and queues it.
func (c *Controller) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return // no controller cares about an orphan going
	}
	rs := c.resolve(pod.Namespace, ref)
	if rs == nil {
		return
	}
	c.expectations.DeletionObserved(keyOf(rs), pod.UID)
	c.queue.Add(keyOf(rs))
}

// podUIDs is the UIDs of pods.
func podUIDs(pods []*corev1.Pod) []types.UID {
	uids := make([]types.UID, 0, len(pods))
	for _, p := range pods {
		uids = append(uids, p.UID)
	}
	return uids
}
