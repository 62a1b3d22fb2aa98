// Package volumeattributesclass is the registry of storage.k8s.io/v1 VolumeAttributesClasses:
// their validation, strategy, table and storage. A VolumeAttributesClass holds the mutable
// attributes (IOPS, throughput) a CSI driver applies to the volumes of claims that name it;
// the driver and its parameters are fixed at creation.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/storage.k8s.io/v1/volumeattributesclasses.
package volumeattributesclass

import (
	"context"
	"reflect"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// NewREST returns the volumeattributesclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       storagev1.Resource("volumeattributesclasses"),
		Singular:       "volumeattributesclass",
		New:            func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		NewList:        func() runtime.Object { return &storagev1.VolumeAttributesClassList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"vac"}}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of VolumeAttributesClasses.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return false }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateVolumeAttributesClass(obj.(*storagev1.VolumeAttributesClass))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateVolumeAttributesClassUpdate(obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass))
}

// ValidateVolumeAttributesClass validates a new class, and the new state of an updated one:
// a driver named as a StorageClass's provisioner, and at least one parameter.
func ValidateVolumeAttributesClass(vac *storagev1.VolumeAttributesClass) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&vac.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(vac.Finalizers, meta.Child("finalizers"))...)
	errs = append(errs, storageclass.ValidateProvisioner(vac.DriverName, field.NewPath("driverName"))...)
	return append(errs, storageclass.ValidateParameters(vac.Parameters, false, field.NewPath("parameters"))...)
}

// ValidateVolumeAttributesClassUpdate validates an update: the driver and the parameters
// are fixed.
func ValidateVolumeAttributesClassUpdate(vac, old *storagev1.VolumeAttributesClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&vac.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if vac.DriverName != old.DriverName {
		errs = append(errs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !reflect.DeepEqual(old.Parameters, vac.Parameters) {
		errs = append(errs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return append(errs, ValidateVolumeAttributesClass(vac)...)
}

// Fields are the fields VolumeAttributesClasses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*storagev1.VolumeAttributesClass).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get volumeattributesclasses`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*storagev1.VolumeAttributesClass] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
		table.AgeColumn(),
	}, func(vac *storagev1.VolumeAttributesClass, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{vac.Name, vac.DriverName, table.Age(vac, now)}}
	})
}
