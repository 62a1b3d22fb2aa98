// Package mirror is the node agent's mirror pod client. A static pod (from a manifest file
// or URL, seed 000's file and http sources) runs without the API server; so that the cluster
// still sees it, the node agent creates a mirror pod for it: a copy in the API, marked with
// the kubernetes.io/config.mirror annotation and owned by the Node. syncPod creates the
// mirror pod when it is missing and deletes it when it no longer matches the static pod;
// HandlePodCleanups deletes orphaned ones.
package mirror

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// Client creates and deletes mirror pods.
type Client interface {
	// CreateMirrorPod creates the mirror pod of a static pod. A mirror pod of the same
	// static pod (same config hash) already there is success.
	CreateMirrorPod(ctx context.Context, pod *v1.Pod) error
	// DeleteMirrorPod deletes a mirror pod by its full name (name_namespace) at once (grace
	// period 0), only if its UID is *uid when uid is not nil. It reports whether it deleted
	// it; a mirror pod that is gone, or has another UID, is not an error.
	DeleteMirrorPod(ctx context.Context, podFullName string, uid *ktypes.UID) (bool, error)
}

// NewClient returns a Client for nodeName's mirror pods; getNode returns the Node, whose UID
// the mirror pods' owner reference names. A nil client gives a Client that does nothing
// (a node agent without an API server).
func NewClient(client kubernetes.Interface, nodeName string, getNode func() (*v1.Node, error)) Client {
	return &mirrorClient{client: client, nodeName: nodeName, getNode: getNode}
}

type mirrorClient struct {
	client   kubernetes.Interface
	nodeName string
	getNode  func() (*v1.Node, error)
}

func (c *mirrorClient) CreateMirrorPod(ctx context.Context, pod *v1.Pod) error {
	if c.client == nil {
		return nil
	}
	hash := pod.Annotations[types.ConfigHashAnnotationKey]
	mirror := pod.DeepCopy()
	if mirror.Annotations == nil {
		mirror.Annotations = map[string]string{}
	}
	mirror.Annotations[types.ConfigMirrorAnnotationKey] = hash
	// The API server gives the mirror pod its own UID and version.
	mirror.UID = ""
	mirror.ResourceVersion = ""

	node, err := c.getNode()
	if err != nil {
		return fmt.Errorf("failed to get node UID: %w", err)
	}
	if node.UID == "" {
		return fmt.Errorf("failed to get node UID: UID unset for node %s", c.nodeName)
	}
	mirror.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: v1.SchemeGroupVersion.String(),
		Kind:       "Node",
		Name:       c.nodeName,
		UID:        node.UID,
		Controller: ptr.To(true),
	}}

	_, err = c.client.CoreV1().Pods(mirror.Namespace).Create(ctx, mirror, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if apierrors.IsAlreadyExists(err) {
		existing, getErr := c.client.CoreV1().Pods(mirror.Namespace).Get(ctx, mirror.Name, metav1.GetOptions{})
		if getErr == nil && existing.Annotations[types.ConfigMirrorAnnotationKey] == hash {
			return nil
		}
	}
	return fmt.Errorf("creating mirror pod %s/%s: %w", mirror.Namespace, mirror.Name, err)
}

func (c *mirrorClient) DeleteMirrorPod(ctx context.Context, podFullName string, uid *ktypes.UID) (bool, error) {
	if c.client == nil {
		return false, nil
	}
	name, namespace, err := ParsePodFullName(podFullName)
	if err != nil {
		return false, err
	}
	logger := klog.FromContext(ctx)
	var uidValue ktypes.UID
	if uid != nil {
		uidValue = *uid
	}
	logger.V(2).Info("Deleting a mirror pod", "pod", klog.KRef(namespace, name), "podUID", uidValue)

	err = c.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: uid},
	})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		// Gone already, or replaced by another pod of the same name.
		logger.V(4).Info("Mirror pod not deleted", "pod", klog.KRef(namespace, name), "reason", err.Error())
		return false, nil
	default:
		return false, fmt.Errorf("deleting mirror pod %s/%s: %w", namespace, name, err)
	}
}

// ParsePodFullName splits a pod's full name, name_namespace, in two.
func ParsePodFullName(podFullName string) (name, namespace string, err error) {
	parts := strings.Split(podFullName, "_")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", "", fmt.Errorf("failed to parse the pod full name %q", podFullName)
	}
	return parts[0], parts[1], nil
}
