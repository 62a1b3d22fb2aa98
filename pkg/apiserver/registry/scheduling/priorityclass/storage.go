package priorityclass

import (
	"context"
	"errors"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// REST is the priorityclasses endpoint. The built-in classes cannot be deleted: pods of the
// system depend on them.
type REST struct {
	*registry.Resource
}

// NewREST returns the priorityclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*REST, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       schedulingv1.Resource("priorityclasses"),
		Singular:       "priorityclass",
		New:            func() runtime.Object { return &schedulingv1.PriorityClass{} },
		NewList:        func() runtime.Object { return &schedulingv1.PriorityClassList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &REST{&registry.Resource{Store: store, Short: []string{"pc"}}}, nil
}

// Delete refuses to delete a built-in class.
func (r *REST) Delete(ctx context.Context, name string, deleteValidation rest.ValidateObjectFunc, options *metav1.DeleteOptions) (runtime.Object, bool, error) {
	for _, pc := range SystemPriorityClasses() {
		if pc.Name == name {
			return nil, false, apierrors.NewForbidden(schedulingv1.Resource("priorityclasses"), name,
				errSystemClass)
		}
	}
	return r.Resource.Delete(ctx, name, deleteValidation, options)
}

var errSystemClass = errors.New("this is a system priority class and cannot be deleted")
