package node

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// apiObjects gives a container's env and envFrom their ConfigMaps and Secrets, read from the
// API server when the container is created (the kubelet's configMapManager and secretManager
// with the Get strategy; a container's environment is fixed at its start, so nothing needs
// watching for it).
type apiObjects struct {
	client kubernetes.Interface
}

// GetConfigMap reads a ConfigMap; a missing one is `configmap "name" not found`, in the
// kubelet's words.
func (o apiObjects) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	cm, err := o.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(v1.Resource("configmap"), name)
	}
	return cm, err
}

// GetSecret reads a Secret; a missing one is `secret "name" not found`.
func (o apiObjects) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	s, err := o.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, apierrors.NewNotFound(v1.Resource("secret"), name)
	}
	return s, err
}
