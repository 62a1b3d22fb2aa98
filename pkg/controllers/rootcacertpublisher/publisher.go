// Package rootcacertpublisher is berth's root CA certificate publisher
// (kube-controller-manager's root-ca-cert-publisher). It stands beside the pod's flow as a
// client of the API server and keeps what a pod's kube-api-access volume reads: the ConfigMap
// kube-root-ca.crt in every namespace, whose ca.crt is the CA bundle that verifies the API
// server. A new namespace gets it at once; a changed or deleted one is put back.
package rootcacertpublisher

import (
	"context"
	"fmt"
	"maps"

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

// Kubernetes' names for the published ConfigMap.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
	// caKey is the bundle's key in the ConfigMap.
	caKey = "ca.crt"
)

// controllerName names the controller in logs, events and berth_recovered_panics_total.
const controllerName = "root-ca-cert-publisher"

// reconcile is one namespace's sync; a variable so that a test can make it panic.
var reconcile = (*Publisher).syncNamespace

// Publisher keeps kube-root-ca.crt in every namespace. Its queue holds namespace names; a
// namespace is queued when it appears or is updated while Active, and when its
// kube-root-ca.crt is updated or deleted. A sync reads the ConfigMap from the informer's
// cache and writes only when it is missing or differs.
type Publisher struct {
	client          kubernetes.Interface
	rootCA          []byte
	configMaps      corelisters.ConfigMapLister
	configMapSynced cache.InformerSynced
	namespaceSynced cache.InformerSynced
	queue           workqueue.TypedRateLimitingInterface[string]

	// Recorder, when set, gets a Warning event on a namespace whose sync panicked.
	Recorder events.EventRecorder
}

// NewPublisher returns a publisher of rootCA fed by the given informers. Start the informers
// and call Run.
func NewPublisher(client kubernetes.Interface, configMaps coreinformers.ConfigMapInformer, namespaces coreinformers.NamespaceInformer, rootCA []byte) *Publisher {
	p := &Publisher{
		client:     client,
		rootCA:     rootCA,
		configMaps: configMaps.Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "root_ca_cert_publisher"}),
	}
	cmRegistration, _ := configMaps.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj any) { p.configMapChanged(obj) },
		DeleteFunc: p.configMapChanged,
	})
	nsRegistration, _ := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: p.namespaceAdded,
		UpdateFunc: func(_, obj any) {
			if ns, ok := obj.(*corev1.Namespace); ok && ns.Status.Phase == corev1.NamespaceActive {
				p.queue.Add(ns.Name)
			}
		},
	})
	p.configMapSynced = cmRegistration.HasSynced
	p.namespaceSynced = nsRegistration.HasSynced
	return p
}

func (p *Publisher) namespaceAdded(obj any) {
	if ns, ok := obj.(*corev1.Namespace); ok {
		p.queue.Add(ns.Name)
	}
}

// configMapChanged queues the namespace of a kube-root-ca.crt that was updated or deleted.
func (p *Publisher) configMapChanged(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	if cm, ok := obj.(*corev1.ConfigMap); ok && cm.Name == ConfigMapName {
		p.queue.Add(cm.Namespace)
	}
}

// Run starts workers and blocks until ctx is done, then waits for them to stop. It fails only
// if the informers never sync while ctx lives.
func (p *Publisher) Run(ctx context.Context, workers int) error {
	w := &recovery.Worker[string]{
		Name:           controllerName,
		Title:          "root CA cert publisher controller",
		Queue:          p.queue,
		Sync:           func(ctx context.Context, ns string) error { return reconcile(p, ctx, ns) },
		Reference:      func(ns string) *corev1.ObjectReference { return recovery.Reference("Namespace", ns) },
		Recorder:       p.Recorder,
		KeyName:        "namespace",
		FailureMessage: "Publishing the root CA failed",
	}
	return w.Run(ctx, workers, p.configMapSynced, p.namespaceSynced)
}

// syncNamespace creates kube-root-ca.crt in ns, or sets its data and description back.
func (p *Publisher) syncNamespace(ctx context.Context, ns string) error {
	data := map[string]string{caKey: string(p.rootCA)}
	cm, err := p.configMaps.ConfigMaps(ns).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		_, err := p.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Annotations: map[string]string{DescriptionAnnotation: Description}},
			Data:       data,
		}, metav1.CreateOptions{})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Published the root CA", "configMap", klog.KRef(ns, ConfigMapName))
			return nil
		// A namespace that is gone or terminating takes nothing: not worth a retry.
		case apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return nil
		default: // AlreadyExists included: the cache was behind, the retry looks again

			return fmt.Errorf("creating %s/%s: %w", ns, ConfigMapName, err)
		}
	case err != nil:
		return fmt.Errorf("getting %s/%s from cache: %w", ns, ConfigMapName, err)
	}
	if maps.Equal(cm.Data, data) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	cm = cm.DeepCopy() // not the cache's
	cm.Data = data
	if cm.Annotations == nil {
		cm.Annotations = map[string]string{}
	}
	cm.Annotations[DescriptionAnnotation] = Description
	if _, err := p.client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s/%s: %w", ns, ConfigMapName, err)
	}
	return nil
}
