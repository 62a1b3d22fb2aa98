package admission

import (
	"context"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/admission"
	genericadmissioninitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/client-go/informers"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
)

// PriorityPluginName is the name Kubernetes gives this plugin.
const PriorityPluginName = "Priority"

func registerPriority(plugins *admission.Plugins) {
	plugins.Register(PriorityPluginName, func(io.Reader) (admission.Interface, error) {
		return &priority{Handler: admission.NewHandler(admission.Create, admission.Update)}, nil
	})
}

// priority resolves a new pod's priorityClassName (or the global default class) into
// spec.priority and spec.preemptionPolicy, and keeps a second global default class out.
type priority struct {
	*admission.Handler
	lister schedulinglisters.PriorityClassLister
}

var (
	_ admission.MutationInterface                                  = &priority{}
	_ admission.ValidationInterface                                = &priority{}
	_ genericadmissioninitializer.WantsExternalKubeInformerFactory = &priority{}
)

func (p *priority) SetExternalKubeInformerFactory(f informers.SharedInformerFactory) {
	informer := f.Scheduling().V1().PriorityClasses()
	p.lister = informer.Lister()
	p.SetReadyFunc(informer.Informer().HasSynced)
}

func (p *priority) ValidateInitialization() error {
	if p.lister == nil {
		return errors.New("missing priority class lister")
	}
	return nil
}

// Admit sets a new pod's priority; on update it keeps the one the pod has.
func (p *priority) Admit(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if !isPod(a) {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	pod, ok := a.GetObject().(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected *v1.Pod but got %T", a.GetObject()))
	}
	if a.GetOperation() == admission.Update {
		if old, ok := a.GetOldObject().(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	}
	name, value, policy, err := p.resolve(a, pod.Spec.PriorityClassName)
	if err != nil {
		return err
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return admission.NewForbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.PriorityClassName = name
	pod.Spec.Priority = &value
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return admission.NewForbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		p := *policy
		pod.Spec.PreemptionPolicy = &p
	}
	return nil
}

// resolve returns the class a pod gets, its value and its preemption policy.
func (p *priority) resolve(a admission.Attributes, className string) (string, int32, *corev1.PreemptionPolicy, error) {
	if className == "" {
		def, err := p.globalDefault()
		if err != nil {
			return "", 0, nil, fmt.Errorf("error occurred while retrieving default priority class: %w", err)
		}
		if def == nil {
			policy := corev1.PreemptLowerPriority
			return "", 0, &policy, nil
		}
		return def.Name, def.Value, def.PreemptionPolicy, nil
	}
	pc, err := p.lister.Get(className)
	if apierrors.IsNotFound(err) {
		return "", 0, nil, admission.NewForbidden(a, fmt.Errorf("no PriorityClass with name %v was found", className))
	}
	if err != nil {
		return "", 0, nil, fmt.Errorf("failed to resolve PriorityClass with name %s: %w", className, err)
	}
	return className, pc.Value, pc.PreemptionPolicy, nil
}

// globalDefault returns the default class; of several, the lowest, as Kubernetes picks.
func (p *priority) globalDefault() (*schedulingv1.PriorityClass, error) {
	list, err := p.lister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, pc := range list {
		if pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}

// Validate keeps a second class from becoming the global default.
func (p *priority) Validate(_ context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetResource().GroupResource() != schedulingv1.Resource("priorityclasses") || a.GetSubresource() != "" {
		return nil
	}
	pc, ok := a.GetObject().(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	if !p.WaitForReady() {
		return admission.NewForbidden(a, errors.New("not yet ready to handle request"))
	}
	def, err := p.globalDefault()
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	if def != nil && (a.GetOperation() == admission.Create || def.Name != pc.Name) {
		return admission.NewForbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}
