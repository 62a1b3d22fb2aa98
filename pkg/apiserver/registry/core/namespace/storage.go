package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of namespaces.
type Storage struct {
	Namespace *REST
	Status    *registry.SubresourceREST
	Finalize  *FinalizeREST
}

// FinalizeREST is namespaces/finalize: as kube-apiserver's, it only takes updates (the
// namespace controller's removal of a finalizer); the namespace is read from namespaces.
type FinalizeREST struct{ sub *registry.SubresourceREST }

func (r *FinalizeREST) New() runtime.Object { return r.sub.New() }
func (r *FinalizeREST) Destroy()            {}
func (r *FinalizeREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.sub.Update(ctx, name, objInfo, createValidation, updateValidation, forceAllowCreate, options)
}
func (r *FinalizeREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.sub.GetResetFields()
}

// REST is the namespaces endpoint. Deleting a namespace is a two-step affair, as in
// Kubernetes: the first delete marks it Terminating; the namespace controller empties it and
// removes its finalizer through namespaces/finalize, and that update deletes it.
type REST struct {
	*registry.Resource
	store *genericregistry.Store
}

// NewStorage returns the namespaces, namespaces/status and namespaces/finalize endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("namespaces"),
		Singular:       "namespace",
		New:            func() runtime.Object { return &corev1.Namespace{} },
		NewList:        func() runtime.Object { return &corev1.NamespaceList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	store.ReturnDeletedObject = true
	store.ShouldDeleteDuringUpdate = shouldDeleteDuringUpdate
	return &Storage{
		Namespace: &REST{Resource: &registry.Resource{Store: store, Short: []string{"ns"}}, store: store},
		Status:    registry.NewSubresourceREST(store, StatusStrategy),
		Finalize:  &FinalizeREST{registry.NewSubresourceREST(store, FinalizeStrategy)},
	}, nil
}

// DeleteCollection hides the store's, whose deletes would skip Delete's termination: as
// kube-apiserver's, the namespaces endpoint has no deletecollection verb (a DELETE of the
// collection is 405 Method Not Allowed), so namespaces only ever go one at a time, emptied
// first. Its signature is not rest.CollectionDeleter's on purpose.
func (r *REST) DeleteCollection() {}

// shouldDeleteDuringUpdate deletes a terminating namespace once the last finalizer is gone.
func shouldDeleteDuringUpdate(ctx context.Context, key string, obj, existing runtime.Object) bool {
	ns, ok := obj.(*corev1.Namespace)
	if !ok {
		return false
	}
	return ns.DeletionTimestamp != nil && len(ns.Spec.Finalizers) == 0 && len(ns.Finalizers) == 0 &&
		genericregistry.ShouldDeleteDuringUpdate(ctx, key, obj, existing)
}

// Delete starts the termination of a namespace, or finishes it when nothing holds it back.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	obj, err := r.store.Get(ctx, name, &metav1.GetOptions{})
	if err != nil {
		return nil, false, err
	}
	ns := obj.(*corev1.Namespace)
	if options == nil {
		options = metav1.NewDeleteOptions(0)
	}
	if options.Preconditions == nil {
		options.Preconditions = &metav1.Preconditions{}
	}
	// Pin the UID, so that a namespace deleted and created again meanwhile is not the one
	// this request terminates.
	if options.Preconditions.UID == nil {
		options.Preconditions.UID = &ns.UID
	} else if *options.Preconditions.UID != ns.UID {
		return nil, false, apierrors.NewConflict(corev1.Resource("namespaces"), name,
			fmt.Errorf("precondition failed: UID in precondition: %v, UID in object meta: %v", *options.Preconditions.UID, ns.UID))
	}
	// Admission (NamespaceLifecycle keeps default, kube-system and kube-public) speaks here.
	if deleteValidation != nil {
		if err := deleteValidation(ctx, ns); err != nil {
			return nil, false, err
		}
	}
	if ns.DeletionTimestamp.IsZero() {
		return r.markTerminating(ctx, name, options)
	}
	if len(ns.Spec.Finalizers) != 0 {
		return ns, false, nil
	}
	return r.store.Delete(ctx, name, deleteValidation, options)
}

func (r *REST) markTerminating(ctx context.Context, name string, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	key, err := r.store.KeyFunc(ctx, name)
	if err != nil {
		return nil, false, err
	}
	preconditions := storage.Preconditions{UID: options.Preconditions.UID, ResourceVersion: options.Preconditions.ResourceVersion}
	out := r.store.NewFunc()
	dryRun := len(options.DryRun) > 0
	err = r.store.Storage.GuaranteedUpdate(ctx, key, out, false, &preconditions,
		storage.SimpleUpdate(func(existing runtime.Object) (runtime.Object, error) {
			ns := existing.(*corev1.Namespace)
			if ns.DeletionTimestamp.IsZero() {
				now := metav1.Now()
				ns.DeletionTimestamp = &now
			}
			ns.Status.Phase = corev1.NamespaceTerminating
			return ns, nil
		}), dryRun, nil)
	if err != nil {
		return nil, false, storeError(err, name)
	}
	return out, false, nil
}

func storeError(err error, name string) error {
	if storage.IsNotFound(err) {
		return apierrors.NewNotFound(corev1.Resource("namespaces"), name)
	}
	if storage.IsConflict(err) {
		return apierrors.NewConflict(corev1.Resource("namespaces"), name, err)
	}
	return err
}
