// Package scale serves the scale subresource of the workloads (deployments/scale,
// replicasets/scale, statefulsets/scale, replicationcontrollers/scale): an autoscaling/v1 Scale
// read from and written into the workload's own store, as kube-apiserver's ScaleREST does for
// each of them. `kubectl scale` and the autoscalers talk to it.
//
// In the API server's flow (decode → default → validate → admit → store) a write to it reads the
// stored workload, shows it to the request as a Scale (which a patch is applied to), validates
// the Scale, moves spec.replicas and the resourceVersion precondition back into the workload and
// stores that through the workload's update strategy, which validates it again as a whole.
package scale

import (
	"context"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Workload is an object with a scale subresource.
type Workload interface {
	runtime.Object
	metav1.Object
}

// Target describes one kind of workload: where its replica counts and selector are.
type Target[T Workload] struct {
	// Resource is the workload's resource ("deployments" of "apps"): errors name
	// Resource/scale.
	Resource schema.GroupResource
	// GroupVersion is the workload's served version, whose spec.replicas the managed fields
	// of the Scale map to.
	GroupVersion schema.GroupVersion
	// Replicas returns spec.replicas, status.replicas and the label selector as a string
	// (status.selector), or an error for a selector that cannot be parsed.
	Replicas func(obj T) (spec, status int32, selector string, err error)
	// SetReplicas writes spec.replicas.
	SetReplicas func(obj T, replicas int32)
}

// REST is a workload's scale subresource.
type REST[T Workload] struct {
	store  *genericregistry.Store
	target Target[T]
	table  rest.TableConvertor
}

// NewREST returns the scale subresource of the workloads store keeps.
func NewREST[T Workload](store *genericregistry.Store, target Target[T]) *REST[T] {
	return &REST[T]{store: store, target: target, table: table.NewDefaultTableConvertor()}
}

var (
	_ rest.Patcher                  = &REST[Workload]{}
	_ rest.GroupVersionKindProvider = &REST[Workload]{}
	_ rest.TableConvertor           = &REST[Workload]{}
)

// New returns an empty Scale.
func (r *REST[T]) New() runtime.Object { return &autoscalingv1.Scale{} }

// Destroy does nothing: the workload's store owns the storage.
func (r *REST[T]) Destroy() {}

// GroupVersionKind says that the subresource speaks autoscaling/v1 Scale, whatever the group
// of its workload.
func (r *REST[T]) GroupVersionKind(schema.GroupVersion) schema.GroupVersionKind {
	return autoscalingv1.SchemeGroupVersion.WithKind("Scale")
}

// ConvertToTable prints a Scale as NAME and AGE (upstream has no Scale printer either).
func (r *REST[T]) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.table.ConvertToTable(ctx, object, tableOptions)
}

// Get returns the workload's Scale.
func (r *REST[T]) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	obj, err := r.store.Get(ctx, name, options)
	if err != nil {
		return nil, err
	}
	workload, err := r.cast(obj)
	if err != nil {
		return nil, err
	}
	scale, err := r.scaleOf(workload)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return scale, nil
}

// Update changes the workload's spec.replicas. A Scale with a resourceVersion is a
// precondition the workload's store checks (a conflict is a 409); one with a UID is checked
// here. It never creates a workload.
func (r *REST[T]) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, _ bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	obj, _, err := r.store.Update(ctx, name, &updatedObjectInfo[T]{name: name, request: objInfo, rest: r},
		r.createValidation(createValidation), r.updateValidation(updateValidation), false, options)
	if err != nil {
		return nil, false, err
	}
	workload, err := r.cast(obj)
	if err != nil {
		return nil, false, err
	}
	scale, err := r.scaleOf(workload)
	if err != nil {
		return nil, false, apierrors.NewBadRequest(err.Error())
	}
	return scale, false, nil
}

func (r *REST[T]) subresource() schema.GroupResource {
	return schema.GroupResource{Group: r.target.Resource.Group, Resource: r.target.Resource.Resource + "/scale"}
}

func (r *REST[T]) cast(obj runtime.Object) (T, error) {
	workload, ok := obj.(T)
	if !ok {
		var zero T
		return zero, apierrors.NewBadRequest(fmt.Sprintf("expected a %s object, got %T", r.target.Resource, obj))
	}
	return workload, nil
}

// scaleOf is the workload as a Scale: only the metadata a Scale carries.
func (r *REST[T]) scaleOf(workload T) (*autoscalingv1.Scale, error) {
	spec, status, selector, err := r.target.Replicas(workload)
	if err != nil {
		return nil, err
	}
	return &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name:              workload.GetName(),
			Namespace:         workload.GetNamespace(),
			UID:               workload.GetUID(),
			ResourceVersion:   workload.GetResourceVersion(),
			CreationTimestamp: workload.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status, Selector: selector},
	}, nil
}

// Admission sees the Scale, not the workload, as kube-apiserver's admission does.
func (r *REST[T]) createValidation(f rest.ValidateObjectFunc) rest.ValidateObjectFunc {
	return func(ctx context.Context, obj runtime.Object) error {
		workload, err := r.cast(obj)
		if err != nil {
			return err
		}
		scale, err := r.scaleOf(workload)
		if err != nil {
			return err
		}
		return f(ctx, scale)
	}
}

func (r *REST[T]) updateValidation(f rest.ValidateObjectUpdateFunc) rest.ValidateObjectUpdateFunc {
	return func(ctx context.Context, obj, old runtime.Object) error {
		workload, err := r.cast(obj)
		if err != nil {
			return err
		}
		oldWorkload, err := r.cast(old)
		if err != nil {
			return err
		}
		scale, err := r.scaleOf(workload)
		if err != nil {
			return err
		}
		oldScale, err := r.scaleOf(oldWorkload)
		if err != nil {
			return err
		}
		return f(ctx, scale, oldScale)
	}
}

// ValidateScale checks what a Scale write may change: its managed fields and spec.replicas.
func ValidateScale(scale *autoscalingv1.Scale) field.ErrorList {
	errs := metavalidation.ValidateManagedFields(scale.ManagedFields, field.NewPath("metadata", "managedFields"))
	return append(errs, apivalidation.ValidateNonnegativeField(int64(scale.Spec.Replicas), field.NewPath("spec", "replicas"))...)
}

// updatedObjectInfo turns the stored workload into a Scale, lets the request (a PUT's body or
// a patch) make the new Scale from it, and moves the result back into the workload.
type updatedObjectInfo[T Workload] struct {
	name    string
	request rest.UpdatedObjectInfo
	rest    *REST[T]
}

func (i *updatedObjectInfo[T]) Preconditions() *metav1.Preconditions {
	return i.request.Preconditions()
}

func (i *updatedObjectInfo[T]) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	r := i.rest
	stored, err := r.cast(oldObj.DeepCopyObject())
	if err != nil {
		return nil, err
	}
	// The store hands a zero object when there is none.
	if stored.GetResourceVersion() == "" {
		return nil, apierrors.NewNotFound(r.subresource(), i.name)
	}
	// Server-side apply to the Scale owns spec.replicas in the workload's managed fields.
	managed := managedfields.NewScaleHandler(stored.GetManagedFields(), r.target.GroupVersion,
		managedfields.ResourcePathMappings{r.target.GroupVersion.String(): fieldpath.MakePathOrDie("spec", "replicas")})
	oldScale, err := r.scaleOf(stored)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	if oldScale.ManagedFields, err = managed.ToSubresource(); err != nil {
		return nil, fmt.Errorf("managed fields of %s %q as a Scale: %w", r.target.Resource, i.name, err)
	}
	newObj, err := i.request.UpdatedObject(ctx, oldScale)
	if err != nil {
		return nil, err
	}
	if newObj == nil {
		return nil, apierrors.NewBadRequest("nil update passed to Scale")
	}
	scale, ok := newObj.(*autoscalingv1.Scale)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected input object type to be Scale, but %T", newObj))
	}
	if errs := ValidateScale(scale); len(errs) > 0 {
		return nil, apierrors.NewInvalid(autoscalingv1.SchemeGroupVersion.WithKind("Scale").GroupKind(), stored.GetName(), errs)
	}
	if scale.UID != "" && scale.UID != stored.GetUID() {
		return nil, apierrors.NewConflict(r.subresource(), stored.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, stored.GetUID()))
	}
	r.target.SetReplicas(stored, scale.Spec.Replicas)
	// The store compares it with the stored one: a stale Scale is a conflict.
	stored.SetResourceVersion(scale.ResourceVersion)
	entries, err := managed.ToParent(scale.ManagedFields)
	if err != nil {
		return nil, fmt.Errorf("managed fields of the Scale of %s %q: %w", r.target.Resource, i.name, err)
	}
	stored.SetManagedFields(entries)
	return stored, nil
}
