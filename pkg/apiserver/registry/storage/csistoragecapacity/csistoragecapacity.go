// Package csistoragecapacity is the registry of storage.k8s.io/v1 CSIStorageCapacities:
// their validation, strategy, table and storage. A CSI driver's external provisioner
// publishes one per storage class and topology segment, with the capacity there, for the
// scheduler's volume binding.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/storage.k8s.io/v1/namespaces/NS/csistoragecapacities.
package csistoragecapacity

import (
	"context"
	"fmt"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/storage/storageclass"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the csistoragecapacities endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("csistoragecapacities"),
		Singular:       "csistoragecapacity",
		New:            func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
		NewList:        func() runtime.Object { return &storagev1.CSIStorageCapacityList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of CSIStorageCapacities; an update
// must name the version it changes.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (strategy) AllowUnconditionalUpdate(context.Context) bool                    { return false }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateCSIStorageCapacity(obj.(*storagev1.CSIStorageCapacity), false)
}

// ValidateUpdate keeps accepting a node topology label value today's rules refuse when the
// stored object already had it.
func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	c, oldC := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
	allowInvalid := len(metavalidation.ValidateLabelSelector(oldC.NodeTopology, metavalidation.LabelSelectorValidationOptions{}, nil)) > 0
	return append(ValidateCSIStorageCapacity(c, allowInvalid), ValidateCSIStorageCapacityUpdate(c, oldC)...)
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return Warnings(obj.(*storagev1.CSIStorageCapacity))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return Warnings(obj.(*storagev1.CSIStorageCapacity))
}

// Warnings are upstream's: deprecated node labels in the node topology.
func Warnings(c *storagev1.CSIStorageCapacity) []string {
	sel := c.NodeTopology
	if sel == nil {
		return nil
	}
	var warnings []string
	p := field.NewPath("nodeTopology")
	for i, expr := range sel.MatchExpressions {
		if msg, ok := storageclass.DeprecatedNodeLabels[expr.Key]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s is %s", p.Child("matchExpressions").Index(i).Child("key"), expr.Key, msg))
		}
	}
	for label := range sel.MatchLabels {
		if msg, ok := storageclass.DeprecatedNodeLabels[label]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: %s", p.Child("matchLabels").Child(label), msg))
		}
	}
	return warnings
}

// ValidateCSIStorageCapacity validates a new capacity, and the new state of an updated one.
func ValidateCSIStorageCapacity(c *storagev1.CSIStorageCapacity, allowInvalidLabelValue bool) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(c.Finalizers, meta.Child("finalizers"))...)
	opts := metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	errs = append(errs, metavalidation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))...)
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		errs = append(errs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), apivalidation.IsNegativeErrorMsg))
	}
	return errs
}

// ValidateCSIStorageCapacityUpdate validates an update: the node topology and the storage
// class are what the capacity was asked for, so they are fixed.
func ValidateCSIStorageCapacityUpdate(c, old *storagev1.CSIStorageCapacity) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if !apiequality.Semantic.DeepEqual(c.NodeTopology, old.NodeTopology) {
		errs = append(errs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, apivalidation.FieldImmutableErrorMsg))
	}
	if c.StorageClassName != old.StorageClassName {
		errs = append(errs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// Fields are the fields CSIStorageCapacities can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.CSIStorageCapacity).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get csistoragecapacities` (no AGE, as
// upstream's).
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagev1.CSIStorageCapacity] {
	doc := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "StorageClassName", Type: "string", Description: doc["storageClassName"]},
		{Name: "Capacity", Type: "string", Description: doc["capacity"]},
	}, func(c *storagev1.CSIStorageCapacity, _ time.Time) metav1.TableRow {
		capacity := "<unset>"
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return metav1.TableRow{Cells: []any{c.Name, c.StorageClassName, capacity}}
	})
}
