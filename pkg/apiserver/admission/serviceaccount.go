package admission

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// ServiceAccountPluginName is the name Kubernetes gives this plugin.
const ServiceAccountPluginName = "ServiceAccount"

// DefaultServiceAccountName is the account a pod runs as when it names none.
const DefaultServiceAccountName = "default"

// mirrorPodAnnotation marks the API's copy of a node's static pod; such pods may not refer
// to API objects, so they get no service account.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

func registerServiceAccount(plugins *admission.Plugins) {
	plugins.Register(ServiceAccountPluginName, func(io.Reader) (admission.Interface, error) {
		return &serviceAccount{Handler: admission.NewHandler(admission.Create)}, nil
	})
}

// serviceAccount gives a new pod the namespace's default service account and refuses a pod
// whose service account does not exist (yet): that is why clients wait for "default" to
// appear in a new namespace.
type serviceAccount struct {
	*admission.Handler
	lister corelisters.ServiceAccountLister
	client kubernetes.Interface
}

var (
	_ admission.MutationInterface                                  = &serviceAccount{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &serviceAccount{}
	_ genericadmissioninitializer.WantsExternalKubeClientSet       = &serviceAccount{}
)

func (p *serviceAccount) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Core().V1().ServiceAccounts()
	p.lister = informer.Lister()
	p.SetReadyFunc(informer.Informer().HasSynced)
}

func (p *serviceAccount) SetExternalKubeClientSet(c kubernetes.Interface) { p.client = c }

func (p *serviceAccount) ValidateInitialization() error {
	if p.lister == nil || p.client == nil {
		return errors.New("missing service account lister or client")
	}
	return nil
}

func (p *serviceAccount) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		if pod.Spec.ServiceAccountName != "" {
			return admission.NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	if _, err := p.get(ctx, a.GetNamespace(), pod.Spec.ServiceAccountName); err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.GetNamespace(), pod.Spec.ServiceAccountName, err))
	}
	return nil
}

// get reads the account from the informer's cache and, when the cache has not seen it yet
// (it was created a moment ago), from the API.
func (p *serviceAccount) get(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := p.lister.ServiceAccounts(namespace).Get(name)
	if err == nil || !apierrors.IsNotFound(err) {
		return sa, err
	}
	sa, err = p.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		// Kubernetes names the resource in the singular here.
		return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
	}
	return sa, err
}
