package admission

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	nodelisters "k8s.io/client-go/listers/node/v1"
)

// RuntimeClassPluginName is the name Kubernetes gives this plugin.
const RuntimeClassPluginName = "RuntimeClass"

func registerRuntimeClass(plugins *admission.Plugins) {
	plugins.Register(RuntimeClassPluginName, func(io.Reader) (admission.Interface, error) {
		return &runtimeClass{Handler: admission.NewHandler(admission.Create)}, nil
	})
}

// runtimeClass gives a new pod the overhead and the scheduling constraints of its
// RuntimeClass, and refuses a pod whose class does not exist or whose overhead differs from
// its class's.
type runtimeClass struct {
	*admission.Handler
	lister nodelisters.RuntimeClassLister
}

var (
	_ admission.MutationInterface                                  = &runtimeClass{}
	_ admission.ValidationInterface                                = &runtimeClass{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &runtimeClass{}
)

func (r *runtimeClass) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Node().V1().RuntimeClasses()
	r.lister = informer.Lister()
	r.SetReadyFunc(informer.Informer().HasSynced)
}

func (r *runtimeClass) ValidateInitialization() error {
	if r.lister == nil {
		return errors.New("missing RuntimeClass lister")
	}
	return nil
}

// class returns the pod and its RuntimeClass (nil when it names none).
func (r *runtimeClass) class(a admission.Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	if !r.WaitForReady() {
		return nil, nil, admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	rc, err := r.lister.Get(*pod.Spec.RuntimeClassName)
	if apierrors.IsNotFound(err) {
		return nil, nil, admission.NewForbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", *pod.Spec.RuntimeClassName))
	}
	return pod, rc, err
}

// Admit sets the pod's overhead and merges the class's node selector and tolerations in.
func (r *runtimeClass) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isPod(a) {
		return nil
	}
	pod, rc, err := r.class(a)
	if err != nil || rc == nil {
		return err
	}
	if rc.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		if pod.Spec.NodeSelector == nil && s.NodeSelector != nil {
			pod.Spec.NodeSelector = map[string]string{}
		}
		for k, v := range s.NodeSelector {
			if pv, ok := pod.Spec.NodeSelector[k]; ok && pv != v {
				return admission.NewForbidden(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, pv))
			}
			pod.Spec.NodeSelector[k] = v
		}
		pod.Spec.Tolerations = mergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate refuses an overhead the class does not define.
func (r *runtimeClass) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isPod(a) {
		return nil
	}
	pod, rc, err := r.class(a)
	if err != nil {
		return err
	}
	switch {
	case rc != nil && rc.Overhead != nil:
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, pod.Spec.Overhead) {
			return admission.NewForbidden(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
	case pod.Spec.Overhead != nil:
		return admission.NewForbidden(a, errors.New("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
	}
	return nil
}

// mergeTolerations adds to first the tolerations of second it does not already cover, as
// upstream's MergeTolerations: an identical one, or one first has that tolerates more.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	out := append([]corev1.Toleration(nil), first...)
	for _, t := range second {
		covered := false
		for _, f := range out {
			if f.MatchToleration(&t) || isSuperset(f, t) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, t)
		}
	}
	return out
}

// isSuperset: a tolerates everything b does (an empty key with Exists tolerates every key;
// an empty effect every effect).
func isSuperset(a, b corev1.Toleration) bool {
	if a.Effect != "" && a.Effect != b.Effect {
		return false
	}
	if a.Operator == corev1.TolerationOpExists {
		if a.Key == "" {
			return a.Effect == "" || a.Effect == b.Effect
		}
		if a.Key != b.Key {
			return false
		}
		return a.TolerationSeconds == nil || (b.TolerationSeconds != nil && *b.TolerationSeconds <= *a.TolerationSeconds)
	}
	return a.Key == b.Key && b.Operator != corev1.TolerationOpExists && a.Value == b.Value &&
		(a.TolerationSeconds == nil || (b.TolerationSeconds != nil && *b.TolerationSeconds <= *a.TolerationSeconds))
}
