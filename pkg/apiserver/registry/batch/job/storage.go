package job

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of Jobs.
type Storage struct {
	Job    *REST
	Status *registry.SubresourceREST
}

// REST is the jobs endpoint: the store, which warns when a delete orphans the Job's pods by
// default.
type REST struct {
	*registry.Resource
}

// NewStorage returns the jobs and jobs/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       batchv1.Resource("jobs"),
		Singular:       "job",
		New:            func() runtime.Object { return &batchv1.Job{} },
		NewList:        func() runtime.Object { return &batchv1.JobList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		Job:    &REST{&registry.Resource{Store: store, InCategories: []string{"all"}}},
		Status: registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// orphanWarning is upstream's warning, word for word.
const orphanWarning = "child pods are preserved by default when jobs are deleted; " +
	"set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"

// Delete deletes a Job, warning when its pods stay behind only because the client did not say.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	warnIfOrphaningByDefault(ctx, options)
	return r.Store.Delete(ctx, name, deleteValidation, options)
}

// DeleteCollection deletes Jobs, with Delete's warning.
func (r *REST) DeleteCollection(ctx context.Context, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions, listOptions *metainternalversion.ListOptions) (runtime.Object, error) {
	warnIfOrphaningByDefault(ctx, options)
	return r.Store.DeleteCollection(ctx, deleteValidation, options, listOptions)
}

func warnIfOrphaningByDefault(ctx context.Context, options *metav1.DeleteOptions) {
	//nolint:staticcheck // OrphanDependents is deprecated but still honoured, as upstream.
	if options != nil && options.PropagationPolicy == nil && options.OrphanDependents == nil &&
		Strategy.DefaultGarbageCollectionPolicy(ctx) == rest.OrphanDependents {
		warning.AddWarning(ctx, "", orphanWarning)
	}
}
