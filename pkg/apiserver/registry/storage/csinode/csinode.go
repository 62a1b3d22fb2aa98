// Package csinode is the registry of storage.k8s.io/v1 CSINodes: their validation,
// strategy, table and storage, and the status subresource. A node's CSINode, named after
// the node, lists the CSI drivers registered on it with their node IDs, topology keys and
// volume limits.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/storage.k8s.io/v1/csinodes and csinodes/status.
//
// The gates upstream consults stand as in Kubernetes 1.37: MutableCSINodeAllocatableCount
// on (a driver's allocatable count may change), CSIVolumeHealth off (status.storageHealth
// is dropped unless already stored).
package csinode

import (
	"context"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of CSINodes.
type Storage struct {
	CSINode *registry.Resource
	Status  *registry.SubresourceREST
}

// NewStorage returns the csinodes and csinodes/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("csinodes"),
		Singular:       "csinode",
		New:            func() runtime.Object { return &storagev1.CSINode{} },
		NewList:        func() runtime.Object { return &storagev1.CSINodeList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		CSINode: &registry.Resource{Store: store},
		Status:  registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// dropStorageHealth clears status.storageHealth, which CSIVolumeHealth (alpha, off) guards,
// unless the stored object already has it.
func dropStorageHealth(n, old *storagev1.CSINode) {
	if old == nil || len(old.Status.StorageHealth) == 0 {
		n.Status.StorageHealth = nil
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of CSINodes. The main resource never
// writes status; an update must name the version it changes.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	n := obj.(*storagev1.CSINode)
	n.Status = storagev1.CSINodeStatus{}
	dropStorageHealth(n, nil)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, oldN := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
	n.Status = oldN.Status
	dropStorageHealth(n, oldN)
}

func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCSINode(obj.(*storagev1.CSINode))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateCSINodeUpdate(obj.(*storagev1.CSINode), old.(*storagev1.CSINode))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of csinodes/status: only status changes, and the
// metadata a status writer has no business with stays as stored.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	n, oldN := obj.(*storagev1.CSINode), old.(*storagev1.CSINode)
	n.Spec = oldN.Spec
	metav1.ResetObjectMetaForStatus(&n.ObjectMeta, &oldN.ObjectMeta)
	dropStorageHealth(n, oldN)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateCSINodeStatusUpdate(obj.(*storagev1.CSINode), old.(*storagev1.CSINode))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(storagev1.SchemeGroupVersion, "metadata", "spec")
}

// Fields are the fields CSINodes can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.CSINode).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get csinodes`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagev1.CSINode] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		table.AgeColumn(),
	}, func(n *storagev1.CSINode, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{n.Name, int64(len(n.Spec.Drivers)), table.Age(n, now)}}
	})
}
