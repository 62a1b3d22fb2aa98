// Package podcontrol is how the workload controllers (ReplicaSet, ReplicationController,
// Job, StatefulSet, ...) write pods: the step of the flow before the scheduler, where a
// controller turns its pod template into pods in the API server, and removes the pods it no
// longer wants. It is upstream's RealPodControl (pkg/controller/controller_utils.go): a
// create, delete or patch through the client, each evented on the owner with upstream's
// reasons and messages, plus the helpers those controllers share to build pods from a
// template, to batch creates, and to judge and rank the pods they have (pods.go).
package podcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Upstream's reasons of the events on a pod's owner (and, for the failures, of a ReplicaSet's
// ReplicaFailure condition).
const (
	FailedCreatePodReason     = "FailedCreate"
	SuccessfulCreatePodReason = "SuccessfulCreate"
	FailedDeletePodReason     = "FailedDelete"
	SuccessfulDeletePodReason = "SuccessfulDelete"
)

const (
	// BurstReplicas is how many pods a controller creates or deletes in one sync at most
	// (kube-controller-manager's default for ReplicaSets and ReplicationControllers); the
	// rest wait for the next sync, after these were observed.
	BurstReplicas = 500
	// SlowStartInitialBatchSize is the first batch of SlowStartBatch: a create that fails
	// (quota, say) costs one doomed call, not a burst of them.
	SlowStartInitialBatchSize = 1
)

// The events' actions (events.k8s.io requires one).
const (
	actionCreate = "Create"
	actionDelete = "Delete"
)

// Interface writes an owner's pods. owner is the controller object the events are on.
type Interface interface {
	// CreatePod creates pod, in its namespace or, when it has none, the owner's.
	CreatePod(ctx context.Context, pod *corev1.Pod, owner runtime.Object) error
	// DeletePod deletes the pod; a non-empty uid is a precondition, so that a pod recreated
	// under the same name is left alone. A NotFound comes back, unevented, for the caller
	// to treat as done.
	DeletePod(ctx context.Context, namespace, name string, uid types.UID, owner runtime.Object) error
	// PatchPod applies a strategic merge patch to the pod (adoption and release).
	PatchPod(ctx context.Context, namespace, name string, patch []byte) error
}

// control is the Interface on a client.
type control struct {
	client kubernetes.Interface
	// recorder points at where the recorder is read at each event, so that a controller
	// built before the manager set its Recorder field still records (NewDeferred).
	recorder *events.EventRecorder
}

var _ Interface = &control{}

// New returns the Interface writing through client and eventing on recorder; a nil recorder
// records nothing (unit tests).
func New(client kubernetes.Interface, recorder events.EventRecorder) Interface {
	return &control{client: client, recorder: &recorder}
}

// NewDeferred is New with the recorder read from *recorder at each event: a controller's
// constructor passes &c.Recorder, which the manager sets after construction.
func NewDeferred(client kubernetes.Interface, recorder *events.EventRecorder) Interface {
	return &control{client: client, recorder: recorder}
}

func (c *control) eventf(owner runtime.Object, eventType, reason, action, note string, args ...any) {
	if c.recorder == nil || *c.recorder == nil {
		return
	}
	(*c.recorder).Eventf(owner, nil, eventType, reason, action, note, args...)
}

// CreatePod creates pod and events the outcome on owner, as upstream's createPods: a pod
// without labels is refused (its owner could never select it), and a create refused because
// the namespace is terminating is returned without a Warning, that being no fault to report.
func (c *control) CreatePod(ctx context.Context, pod *corev1.Pod, owner runtime.Object) error {
	if len(pod.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	namespace := pod.Namespace
	if namespace == "" {
		if m, err := meta.Accessor(owner); err == nil {
			namespace = m.GetNamespace()
		}
	}
	created, err := c.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			c.eventf(owner, corev1.EventTypeWarning, FailedCreatePodReason, actionCreate, "Error creating: %v", err)
		}
		return err
	}
	klog.FromContext(ctx).V(4).Info("Controller created pod", "controller", ownerName(owner), "pod", klog.KObj(created))
	c.eventf(owner, corev1.EventTypeNormal, SuccessfulCreatePodReason, actionCreate, "Created pod: %v", created.Name)
	return nil
}

// DeletePod deletes the pod and events the outcome on owner, as upstream's DeletePod.
func (c *control) DeletePod(ctx context.Context, namespace, name string, uid types.UID, owner runtime.Object) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Deleting pod", "controller", ownerName(owner), "pod", klog.KRef(namespace, name))
	var opts metav1.DeleteOptions
	if uid != "" {
		opts.Preconditions = metav1.NewUIDPreconditions(string(uid))
	}
	if err := c.client.CoreV1().Pods(namespace).Delete(ctx, name, opts); err != nil {
		if apierrors.IsNotFound(err) {
			logger.V(4).Info("Pod has already been deleted.", "pod", klog.KRef(namespace, name))
			return err
		}
		c.eventf(owner, corev1.EventTypeWarning, FailedDeletePodReason, actionDelete, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	c.eventf(owner, corev1.EventTypeNormal, SuccessfulDeletePodReason, actionDelete, "Deleted pod: %v", name)
	return nil
}

// PatchPod applies a strategic merge patch to the pod.
func (c *control) PatchPod(ctx context.Context, namespace, name string, patch []byte) error {
	_, err := c.client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

func ownerName(owner runtime.Object) string {
	if m, err := meta.Accessor(owner); err == nil {
		return m.GetName()
	}
	return ""
}

// PodFromTemplate returns a new pod of owner from template: its labels, annotations,
// finalizers and spec copied, in owner's namespace, named by the API server from
// "<owner's name>-" (or the bare name when the dash would make the prefix invalid, as
// upstream's getPodsPrefix; the API server truncates a long one), and with ref, when not
// nil, as an owner reference.
func PodFromTemplate(template *corev1.PodTemplateSpec, owner metav1.Object, ref *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    owner.GetNamespace(),
			GenerateName: podsPrefix(owner.GetName()),
			Labels:       copyMap(template.Labels),
			Annotations:  copyMap(template.Annotations),
			Finalizers:   append([]string{}, template.Finalizers...),
		},
		Spec: *template.Spec.DeepCopy(),
	}
	if ref != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *ref)
	}
	return pod
}

func podsPrefix(ownerName string) string {
	prefix := ownerName + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return ownerName
	}
	return prefix
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// SlowStartBatch calls fn count times, in batches of initialBatchSize, then twice that, and
// so on, the calls of one batch running concurrently. It stops after the first batch in
// which a call failed, returning how many calls succeeded and one of the errors: a controller
// whose creates fail (quota, a webhook) makes a handful of doomed calls, not count of them.
// A call that panics is recovered in its own goroutine (the worker's recovery does not reach
// it), counted under controller/podcontrol and returned as that batch's error, so the owner
// is retried with back-off like after any failed create.
func SlowStartBatch(ctx context.Context, count, initialBatchSize int, fn func() error) (successes int, err error) {
	remaining := count
	for batch := min(remaining, initialBatchSize); batch > 0; batch = min(2*batch, remaining) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := panics.Call(ctx, "controller/podcontrol", fn); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
		remaining -= batch
	}
	return successes, nil
}
