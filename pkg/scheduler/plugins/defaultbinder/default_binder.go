// Package defaultbinder is the Bind step of seed 003's binding cycle: after WaitOnPermit and
// PreBind, it POSTs a Binding (pods/binding) so that the API server sets spec.nodeName and the
// node's agent, watching spec.nodeName=<me>, picks the pod up.
package defaultbinder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in kube-scheduler's configuration.
const Name = "DefaultBinder"

// Plugin binds pods through the API.
type Plugin struct {
	handle framework.Handle
}

var _ framework.BindPlugin = &Plugin{}

// New builds the plugin; it has no arguments.
func New(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &Plugin{handle: h}, nil
}

// Name returns Name.
func (b *Plugin) Name() string { return Name }

// Bind posts the binding of pod to nodeName. The pod's UID goes in the binding's metadata so
// that the API server refuses to bind a pod recreated under the same name.
func (b *Plugin) Bind(ctx context.Context, _ *framework.CycleState, pod *v1.Pod, nodeName string) *framework.Status {
	klog.FromContext(ctx).V(3).Info("Attempting to bind pod to node", "pod", klog.KObj(pod), "node", klog.KRef("", nodeName))
	binding := NewBinding(pod, nodeName)
	return framework.AsStatus(BindPod(ctx, b.handle.ClientSet().CoreV1().Pods(binding.Namespace).Bind, binding))
}

// NewBinding is the Binding that puts pod on nodeName.
func NewBinding(pod *v1.Pod, nodeName string) *v1.Binding {
	return &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: nodeName},
	}
}

// BindPod calls bind, retrying (as kube-scheduler does) only errors that say the API server
// was briefly unreachable or overloaded; a conflict or a missing pod fails at once.
func BindPod(ctx context.Context, bind func(context.Context, *v1.Binding, metav1.CreateOptions) error, binding *v1.Binding) error {
	return retry.OnError(retry.DefaultBackoff, retriable, func() error {
		return bind(ctx, binding, metav1.CreateOptions{})
	})
}

func retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) || utilnet.IsConnectionRefused(err)
}
