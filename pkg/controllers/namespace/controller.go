// Package namespace is berth's namespace controller, the second half of deleting a namespace.
// It stands beside the pod's flow as a client of the API server: `kubectl delete namespace`
// makes the API server mark the namespace Terminating (deletionTimestamp set, NamespaceLifecycle
// admission refusing new content); this controller watches for that, deletes everything in the
// namespace (pods first, then every other namespaced resource discovery names), waits for what
// is still going away (pods their node agent is stopping, objects held by finalizers) while
// explaining the wait in the namespace's status conditions, and finally removes the
// "kubernetes" finalizer through namespaces/{name}/finalize, which lets the API server delete
// the namespace. It behaves like kube-controller-manager's namespace controller.
package namespace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
)

const (
	// deletionGracePeriod delays the first pass over a namespace marked for deletion, so that
	// every API server's NamespaceLifecycle admission has seen it Terminating and no object is
	// created behind the controller's back. Kubernetes waits 5s, sized for HA API servers
	// behind lagging etcd followers; berth's API servers read etcd linearizably and watch it
	// with millisecond lag, and `kubectl delete namespace` waits for this.
	deletionGracePeriod = time.Second

	// maxContentWait caps how long to wait before looking again at content that is still
	// going away. Nothing about the namespace changes when a pod finally goes, so the
	// controller polls; the cap keeps the namespace from lingering long after it is empty.
	maxContentWait = 5 * time.Second
)

// Controller empties namespaces that are being deleted and then finalizes them.
//
// A namespace goes through it like this:
//
//	Active ─DELETE─► Terminating ─(grace)─► delete content ─► content left? ─yes─► conditions, wait, again
//	                                                                        └─no──► finalize ─► gone
//
// Each pass reads the namespace afresh from the API server, so passes are idempotent and any
// number of workers (never two on one namespace: the queue sees to that) can run them.
type Controller struct {
	client    kubernetes.Interface
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	synced    cache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	clock     clock.PassiveClock

	// deletionGracePeriod is a field so that tests need not wait.
	deletionGracePeriod time.Duration

	// Recorder, when set, gets a Warning event on a namespace whose pass panicked.
	Recorder events.EventRecorder
}

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "namespace"

// NewController returns a namespace controller that watches namespaces through the given
// informer, deletes namespaced content through the metadata client (which needs no types) and
// learns which resources exist from discovery. Start the informer and call Run.
func NewController(client kubernetes.Interface, metadataClient metadata.Interface, discovery discovery.DiscoveryInterface, namespaces coreinformers.NamespaceInformer) *Controller {
	c := &Controller{
		client:    client,
		metadata:  metadataClient,
		discovery: discovery,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(rateLimiter(),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "namespace"}),
		clock:               clock.RealClock{},
		deletionGracePeriod: deletionGracePeriod,
	}
	// No periodic resync: every pass that does not finish requeues its namespace itself.
	registration, _ := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueue,
		UpdateFunc: func(_, obj any) { c.enqueue(obj) },
	})
	c.synced = registration.HasSynced
	return c
}

// rateLimiter retries failures faster than the usual controller default and never waits more
// than a minute, as Kubernetes does for namespaces: there are few of them, and a namespace
// stuck in Terminating is something a user is waiting on.
func rateLimiter() workqueue.TypedRateLimiter[string] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
		&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
	)
}

// enqueue queues a namespace that is being deleted; others are none of this controller's business.
func (c *Controller) enqueue(obj any) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns.DeletionTimestamp == nil {
		return
	}
	c.queue.AddAfter(ns.Name, c.deletionGracePeriod)
}

// Run starts workers that process namespaces and blocks until ctx is done, then waits for
// them to stop. It fails only if the informer never syncs while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "namespace controller",
		Queue:          c.queue,
		Sync:           c.pass,
		Reference:      func(name string) *corev1.ObjectReference { return recovery.Reference("Namespace", name) },
		Recorder:       c.Recorder,
		KeyName:        "namespace",
		FailureMessage: "Deleting namespace failed",
	}
	return w.Run(ctx, workers, c.synced)
}

// pass syncs one namespace and decides when to look at it again. Content still going away
// is waiting, not failing: the namespace is looked at again when it should be gone, with its
// back-off reset (the Worker forgets it).
func (c *Controller) pass(ctx context.Context, name string) error {
	err := c.syncNamespace(ctx, name)
	var waiting *contentRemainingError
	if errors.As(err, &waiting) {
		after := waiting.requeueAfter()
		klog.FromContext(ctx).V(4).Info("Content remaining in namespace", "namespace", name, "wait", after)
		c.queue.AddAfter(name, after)
		return nil
	}
	return err
}

// contentRemainingError says a pass deleted everything it could, but some content is still
// going away on its own.
type contentRemainingError struct {
	estimate time.Duration
}

func (e *contentRemainingError) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %s before it is removed", e.estimate)
}

// requeueAfter looks again halfway through the estimate, as Kubernetes does, but no later
// than maxContentWait.
func (e *contentRemainingError) requeueAfter() time.Duration {
	return min(e.estimate/2+time.Second, maxContentWait)
}

// syncNamespace makes one pass over a namespace: if it is being deleted, empty it, and once
// it is empty remove the "kubernetes" finalizer.
func (c *Controller) syncNamespace(ctx context.Context, name string) error {
	logger := klog.FromContext(ctx)
	start := c.clock.Now()
	defer func() {
		logger.V(4).Info("Finished syncing namespace", "namespace", name, "duration", c.clock.Since(start))
	}()

	// Read the namespace live rather than from the cache: other clients edit it while it
	// terminates, and its finalizers must not be removed on a stale view.
	namespaces := c.client.CoreV1().Namespaces()
	ns, err := namespaces.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s: %w", name, err)
	}
	if ns.DeletionTimestamp == nil {
		return nil
	}
	if ns, err = c.markTerminating(ctx, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("marking namespace %s terminating: %w", name, err)
	}
	// Other finalizers may still be at work; the content is this controller's once any
	// finalizer is left, as in Kubernetes.
	if len(ns.Spec.Finalizers) == 0 {
		return nil
	}

	report := c.deleteAllContent(ctx, ns)
	if mergeConditions(&ns.Status, conditionsFor(report), metav1.NewTime(c.clock.Now())) {
		// A failure here only delays the explanation, not the deletion: log and go on.
		if updated, err := namespaces.UpdateStatus(ctx, ns, metav1.UpdateOptions{}); err != nil {
			utilruntime.HandleErrorWithContext(ctx, err, "Couldn't update status conditions of namespace", "namespace", name)
		} else {
			ns = updated
		}
	}
	if err := report.err(); err != nil {
		return fmt.Errorf("deleting content of namespace %s: %w", name, err)
	}
	if len(report.remaining) > 0 {
		return &contentRemainingError{estimate: report.estimate}
	}

	if err := c.finalize(ctx, ns); err != nil {
		return fmt.Errorf("finalizing namespace %s: %w", name, err)
	}
	logger.V(2).Info("Finalized namespace", "namespace", name)
	return nil
}

// markTerminating sets phase Terminating on a namespace with a deletionTimestamp. berth's
// API server already does so on DELETE; this covers namespaces that reached deletion any
// other way.
func (c *Controller) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	return c.updateNamespace(ctx, ns, func(ns *corev1.Namespace) (*corev1.Namespace, error) {
		if ns.DeletionTimestamp == nil || ns.Status.Phase == corev1.NamespaceTerminating {
			return ns, nil
		}
		ns = ns.DeepCopy()
		ns.Status.Phase = corev1.NamespaceTerminating
		return c.client.CoreV1().Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})
	})
}

// finalize removes this controller's finalizer, "kubernetes", from spec.finalizers through
// the finalize subresource; the API server deletes the namespace when none is left.
func (c *Controller) finalize(ctx context.Context, ns *corev1.Namespace) error {
	_, err := c.updateNamespace(ctx, ns, func(ns *corev1.Namespace) (*corev1.Namespace, error) {
		if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
			return ns, nil
		}
		ns = ns.DeepCopy()
		ns.Spec.Finalizers = slices.DeleteFunc(ns.Spec.Finalizers, func(f corev1.FinalizerName) bool {
			return f == corev1.FinalizerKubernetes
		})
		return c.client.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})
	})
	if apierrors.IsNotFound(err) {
		return nil // someone else finished the job
	}
	return err
}

// updateNamespace applies update to ns, and on a conflict to a fresh copy of the same
// namespace; a namespace deleted and recreated under the same name is left alone.
func (c *Controller) updateNamespace(ctx context.Context, ns *corev1.Namespace, update func(*corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	current := ns
	var result *corev1.Namespace
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var err error
		result, err = update(current)
		if !apierrors.IsConflict(err) {
			return err
		}
		latest, getErr := c.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if getErr != nil {
			return getErr
		}
		if latest.UID != ns.UID {
			return fmt.Errorf("namespace %s was recreated (uid %s, was %s)", ns.Name, latest.UID, ns.UID)
		}
		current = latest
		return err
	})
	return result, err
}
