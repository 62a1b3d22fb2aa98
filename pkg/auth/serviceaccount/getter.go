package serviceaccount

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// cachedGetter reads from the API server's informers and, on any miss (an object created a
// moment ago, or caches not yet synced), from the API, as kube-apiserver's token getter does.
type cachedGetter struct {
	serviceAccounts corelisters.ServiceAccountLister
	pods            corelisters.PodLister
	secrets         corelisters.SecretLister
	nodes           corelisters.NodeLister
	client          kubernetes.Interface
}

// NewGetter returns a Getter reading through f's informers (it registers them: f must be
// started afterwards) with client for misses.
func NewGetter(f informers.SharedInformerFactory, client kubernetes.Interface) Getter {
	core := f.Core().V1()
	g := &cachedGetter{
		serviceAccounts: core.ServiceAccounts().Lister(),
		pods:            core.Pods().Lister(),
		secrets:         core.Secrets().Lister(),
		nodes:           core.Nodes().Lister(),
		client:          client,
	}
	// Listers alone do not make the factory start an informer.
	core.ServiceAccounts().Informer()
	core.Pods().Informer()
	core.Secrets().Informer()
	core.Nodes().Informer()
	return g
}

func (g *cachedGetter) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, err := g.serviceAccounts.ServiceAccounts(namespace).Get(name); err == nil {
		return sa, nil
	}
	return g.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g *cachedGetter) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	if pod, err := g.pods.Pods(namespace).Get(name); err == nil {
		return pod, nil
	}
	return g.client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g *cachedGetter) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if secret, err := g.secrets.Secrets(namespace).Get(name); err == nil {
		return secret, nil
	}
	return g.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

func (g *cachedGetter) Node(ctx context.Context, name string) (*corev1.Node, error) {
	if node, err := g.nodes.Get(name); err == nil {
		return node, nil
	}
	return g.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
}
