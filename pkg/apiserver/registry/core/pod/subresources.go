package pod

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	storeerr "k8s.io/apiserver/pkg/storage/errors"
)

// BindingREST serves pods/binding: the scheduler's last step, which gives a pod its node.
// A pod is bound once; binding a bound, gated or deleted pod is a conflict.
type BindingREST struct {
	store *genericregistry.Store
}

var _ rest.NamedCreater = &BindingREST{}

// New returns an empty Binding.
func (r *BindingREST) New() runtime.Object { return &corev1.Binding{} }

// Destroy does nothing: the pods store owns the storage.
func (r *BindingREST) Destroy() {}

// Create binds the pod named in the URL to the binding's target node.
func (r *BindingREST) Create(ctx context.Context, name string, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding object: %T", obj))
	}
	if name != binding.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	if errs := ValidateBinding(binding); len(errs) > 0 {
		return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Binding").GroupKind(), binding.Name, errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, binding.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	err := r.assign(ctx, binding, len(options.DryRun) > 0)
	if err != nil {
		err = storeerr.InterpretGetError(err, corev1.Resource("pods"), name)
		err = storeerr.InterpretUpdateError(err, corev1.Resource("pods"), name)
		if _, ok := err.(*apierrors.StatusError); !ok {
			err = apierrors.NewConflict(corev1.Resource("pods/binding"), name, err)
		}
		return nil, err
	}
	return &metav1.Status{Status: metav1.StatusSuccess, Code: 201}, nil
}

func (r *BindingREST) assign(ctx context.Context, b *corev1.Binding, dryRun bool) error {
	key, err := r.store.KeyFunc(ctx, b.Name)
	if err != nil {
		return err
	}
	return r.store.Storage.GuaranteedUpdate(ctx, key, &corev1.Pod{}, false, nil,
		storage.SimpleUpdate(func(obj runtime.Object) (runtime.Object, error) {
			pod := obj.(*corev1.Pod)
			switch {
			case pod.DeletionTimestamp != nil:
				return nil, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name)
			case pod.Spec.NodeName != "":
				return nil, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName)
			case len(pod.Spec.SchedulingGates) != 0:
				return nil, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name)
			case b.UID != "" && pod.UID != b.UID:
				return nil, fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID)
			case b.ResourceVersion != "" && pod.ResourceVersion != b.ResourceVersion:
				return nil, fmt.Errorf("precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", b.ResourceVersion, pod.ResourceVersion)
			}
			pod.Spec.NodeName = b.Target.Name
			for k, v := range b.Annotations {
				if pod.Annotations == nil {
					pod.Annotations = map[string]string{}
				}
				pod.Annotations[k] = v
			}
			SetCondition(&pod.Status, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
			return pod, nil
		}), dryRun, nil)
}

// SetCondition sets a condition on a pod status: a change of status moves lastTransitionTime,
// a repeat keeps it.
func SetCondition(status *corev1.PodStatus, c corev1.PodCondition) {
	now := metav1.Now()
	for i := range status.Conditions {
		existing := &status.Conditions[i]
		if existing.Type != c.Type {
			continue
		}
		if existing.Status != c.Status {
			existing.LastTransitionTime = now
		}
		existing.Status, existing.Reason, existing.Message = c.Status, c.Reason, c.Message
		return
	}
	c.LastTransitionTime = now
	status.Conditions = append(status.Conditions, c)
}

// LegacyBindingREST serves the old top-level /namespaces/{ns}/bindings resource, which does
// what pods/binding does with the pod named in the body.
type LegacyBindingREST struct {
	binding *BindingREST
}

var (
	_ rest.Creater              = &LegacyBindingREST{}
	_ rest.Scoper               = &LegacyBindingREST{}
	_ rest.SingularNameProvider = &LegacyBindingREST{}
)

// New returns an empty Binding.
func (r *LegacyBindingREST) New() runtime.Object { return &corev1.Binding{} }

// Destroy does nothing: the pods store owns the storage.
func (r *LegacyBindingREST) Destroy() {}

// NamespaceScoped is true: bindings live in their pod's namespace.
func (r *LegacyBindingREST) NamespaceScoped() bool { return true }

// GetSingularName names one binding in discovery.
func (r *LegacyBindingREST) GetSingularName() string { return "binding" }

// Create binds the pod the binding names.
func (r *LegacyBindingREST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, options *metav1.CreateOptions) (runtime.Object, error) {
	binding, ok := obj.(*corev1.Binding)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a Binding object: %T", obj))
	}
	return r.binding.Create(ctx, binding.Name, obj, createValidation, options)
}
