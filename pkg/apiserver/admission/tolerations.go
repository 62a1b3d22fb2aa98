package admission

import (
	"context"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
)

// DefaultTolerationSecondsPluginName is the name Kubernetes gives this plugin.
const DefaultTolerationSecondsPluginName = "DefaultTolerationSeconds"

// DefaultTolerationSeconds is how long a pod stays on a node that is not ready or unreachable
// before the NoExecute taint evicts it.
const DefaultTolerationSeconds int64 = 300

func registerDefaultTolerationSeconds(plugins *admission.Plugins) {
	plugins.Register(DefaultTolerationSecondsPluginName, func(io.Reader) (admission.Interface, error) {
		return &defaultTolerationSeconds{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

// defaultTolerationSeconds gives every pod the tolerations of the not-ready and unreachable
// NoExecute taints for 300 s, unless it tolerates them already.
type defaultTolerationSeconds struct {
	*admission.Handler
}

var _ admission.MutationInterface = &defaultTolerationSeconds{}

func (p *defaultTolerationSeconds) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isPod(a) {
		return nil
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		noExecute := t.Effect == corev1.TaintEffectNoExecute || t.Effect == ""
		if noExecute && (t.Key == corev1.TaintNodeNotReady || t.Key == "") {
			notReady = true
		}
		if noExecute && (t.Key == corev1.TaintNodeUnreachable || t.Key == "") {
			unreachable = true
		}
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, defaultToleration(corev1.TaintNodeNotReady))
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, defaultToleration(corev1.TaintNodeUnreachable))
	}
	return nil
}

func defaultToleration(key string) corev1.Toleration {
	seconds := DefaultTolerationSeconds
	return corev1.Toleration{
		Key: key, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds,
	}
}
