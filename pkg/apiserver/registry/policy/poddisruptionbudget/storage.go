package poddisruptionbudget

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
)

// Storage holds the endpoints of budgets.
type Storage struct {
	PodDisruptionBudget *registry.Resource
	Status              *registry.SubresourceREST
}

// NewStorage returns the poddisruptionbudgets and poddisruptionbudgets/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       policyv1.Resource("poddisruptionbudgets"),
		Singular:       "poddisruptionbudget",
		New:            func() runtime.Object { return &policyv1.PodDisruptionBudget{} },
		NewList:        func() runtime.Object { return &policyv1.PodDisruptionBudgetList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		PodDisruptionBudget: &registry.Resource{Store: store, Short: []string{"pdb"}},
		Status:              registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// Budgets is the view of the store that pods/eviction needs: a namespace's budgets, one
// budget, and a write of its status through the status strategy (so that the write is
// validated and conflicts on a stale resourceVersion). It reads and writes the store
// directly, in the eviction's request, rather than through a loopback client.
type Budgets struct {
	store  rest.StandardStorage
	status rest.Updater
}

// Budgets returns the storage's view for evictions.
func (s *Storage) Budgets() *Budgets {
	return &Budgets{store: s.PodDisruptionBudget.Store, status: s.Status}
}

// List returns the budgets of namespace.
func (b *Budgets) List(ctx context.Context, namespace string) ([]policyv1.PodDisruptionBudget, error) {
	obj, err := b.store.List(genericapirequest.WithNamespace(ctx, namespace), &metainternalversion.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing the PodDisruptionBudgets of %s: %w", namespace, err)
	}
	list, ok := obj.(*policyv1.PodDisruptionBudgetList)
	if !ok {
		return nil, fmt.Errorf("listing the PodDisruptionBudgets of %s: got %T", namespace, obj)
	}
	return list.Items, nil
}

// Get returns one budget. Its errors are the API's (NotFound), unwrapped.
func (b *Budgets) Get(ctx context.Context, namespace, name string) (*policyv1.PodDisruptionBudget, error) {
	obj, err := b.store.Get(genericapirequest.WithNamespace(ctx, namespace), name, &metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	pdb, ok := obj.(*policyv1.PodDisruptionBudget)
	if !ok {
		return nil, fmt.Errorf("getting PodDisruptionBudget %s/%s: got %T", namespace, name, obj)
	}
	return pdb, nil
}

// UpdateStatus writes pdb's status from the resourceVersion pdb carries. Its errors are the
// API's (Conflict, which the caller retries on), unwrapped.
func (b *Budgets) UpdateStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget) error {
	_, _, err := b.status.Update(genericapirequest.WithNamespace(ctx, pdb.Namespace), pdb.Name,
		rest.DefaultUpdatedObjectInfo(pdb), rest.ValidateAllObjectFunc, rest.ValidateAllObjectUpdateFunc, false, &metav1.UpdateOptions{})
	return err
}
