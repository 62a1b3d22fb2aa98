package registry

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// SubresourceStrategy is the update strategy of a subresource such as status: it keeps
// everything but its own part of the object as it was.
type SubresourceStrategy interface {
	rest.RESTUpdateStrategy
	rest.ResetFieldsStrategy
}

// SubresourceREST serves a subresource (status, finalize) that reads the whole object and
// updates only its own part of it, through the main resource's store.
type SubresourceREST struct {
	store *genericregistry.Store
}

// NewSubresourceREST returns the subresource of main whose updates go through strategy.
func NewSubresourceREST(main *genericregistry.Store, strategy SubresourceStrategy) *SubresourceREST {
	s := *main
	s.CreateStrategy = nil
	s.DeleteStrategy = nil
	s.UpdateStrategy = strategy
	s.ResetFieldsStrategy = strategy
	return &SubresourceREST{store: &s}
}

var (
	_ rest.Patcher             = &SubresourceREST{}
	_ rest.ResetFieldsStrategy = &SubresourceREST{}
	_ rest.TableConvertor      = &SubresourceREST{}
)

// New returns an empty object of the main resource.
func (r *SubresourceREST) New() runtime.Object { return r.store.New() }

// Destroy does nothing: the main resource's store owns the storage.
func (r *SubresourceREST) Destroy() {}

// Get returns the whole object.
func (r *SubresourceREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.store.Get(ctx, name, options)
}

// Update changes the subresource's part of the object. It never creates one, whatever the
// caller asks.
func (r *SubresourceREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.store.Update(ctx, name, objInfo, createValidation, updateValidation, false, options)
}

// GetResetFields lists the fields this endpoint leaves alone.
func (r *SubresourceREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.store.GetResetFields()
}

// ConvertToTable prints the object as the main resource does.
func (r *SubresourceREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.store.ConvertToTable(ctx, object, tableOptions)
}
