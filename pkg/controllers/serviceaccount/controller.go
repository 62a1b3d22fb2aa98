// Package serviceaccount is berth's service account controller. It stands beside the pod's
// flow as a client of the API server and makes the flow's first step possible in a new
// namespace: a pod runs as a service account, "default" unless it names one, and the API
// server refuses pods whose service account does not exist. So as soon as a namespace is
// created (or comes back Active) and whenever its "default" service account is deleted, this
// controller creates "default" in it, as kube-controller-manager's serviceaccounts controller
// does. Terminating namespaces are left alone.
package serviceaccount

import (
	"context"
	"fmt"

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

// DefaultName is the service account every active namespace gets.
const DefaultName = "default"

// Controller keeps a "default" service account in every active namespace. Its queue holds
// namespace names; a sync creates what is missing, reading both namespaces and service
// accounts from the informers' caches, so that a namespace needs only one API call (the
// create) before its pods are accepted.
type Controller struct {
	client           kubernetes.Interface
	namespaces       corelisters.NamespaceLister
	serviceAccounts  corelisters.ServiceAccountLister
	namespacesSynced cache.InformerSynced
	accountsSynced   cache.InformerSynced
	queue            workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a Warning event on a namespace whose sync panicked.
	Recorder events.EventRecorder
}

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "serviceaccount"

// reconcile is one namespace's sync; a variable so that a test can make it panic.
var reconcile = (*Controller).syncNamespace

// NewController returns a service account controller fed by the given informers. Start the
// informers and call Run.
func NewController(client kubernetes.Interface, namespaces coreinformers.NamespaceInformer, serviceAccounts coreinformers.ServiceAccountInformer) *Controller {
	c := &Controller{
		client:          client,
		namespaces:      namespaces.Lister(),
		serviceAccounts: serviceAccounts.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "serviceaccount"}),
	}
	nsRegistration, _ := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueNamespace,
		UpdateFunc: func(_, obj any) { c.enqueueNamespace(obj) },
	})
	saRegistration, _ := serviceAccounts.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.serviceAccountDeleted,
	})
	c.namespacesSynced = nsRegistration.HasSynced
	c.accountsSynced = saRegistration.HasSynced
	return c
}

func (c *Controller) enqueueNamespace(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		c.queue.Add(ns.Name)
	}
}

// serviceAccountDeleted queues the namespace of a deleted "default" so that it is recreated.
func (c *Controller) serviceAccountDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if sa, ok := obj.(*corev1.ServiceAccount); ok && sa.Name == DefaultName {
		c.queue.Add(sa.Namespace)
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (c *Controller) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "service account controller",
		Queue:          c.queue,
		Sync:           func(ctx context.Context, name string) error { return reconcile(c, ctx, name) },
		Reference:      func(name string) *corev1.ObjectReference { return recovery.Reference("Namespace", name) },
		Recorder:       c.Recorder,
		KeyName:        "namespace",
		FailureMessage: "Ensuring the default service account failed",
	}
	return w.Run(ctx, workers, c.namespacesSynced, c.accountsSynced)
}

// syncNamespace creates the "default" service account in the namespace if the namespace is
// active and the account is missing.
func (c *Controller) syncNamespace(ctx context.Context, name string) error {
	ns, err := c.namespaces.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("getting namespace %s from cache: %w", name, err)
	}
	// Nothing may be created in a terminating namespace, and its content is being deleted.
	if ns.Status.Phase != corev1.NamespaceActive || ns.DeletionTimestamp != nil {
		return nil
	}

	switch _, err := c.serviceAccounts.ServiceAccounts(name).Get(DefaultName); {
	case err == nil:
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("getting service account %s/%s from cache: %w", name, DefaultName, err)
	}

	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: DefaultName, Namespace: name}}
	_, err = c.client.CoreV1().ServiceAccounts(name).Create(ctx, sa, metav1.CreateOptions{})
	switch {
	case err == nil:
		klog.FromContext(ctx).V(2).Info("Created service account", "serviceAccount", klog.KObj(sa))
		return nil
	case apierrors.IsAlreadyExists(err):
		return nil // the cache was behind
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause), apierrors.IsNotFound(err):
		return nil // the cache was behind: the namespace is going or gone
	default:
		return fmt.Errorf("creating service account %s/%s: %w", name, DefaultName, err)
	}
}
