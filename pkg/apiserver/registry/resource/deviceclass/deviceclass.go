// Package deviceclass is the registry of resource.k8s.io/v1 DeviceClasses: their strategy,
// table and storage (validation is the resource/validation package's). A DeviceClass names
// a kind of device (by CEL selectors over the devices drivers publish, with configuration
// for the driver) that claims ask for by name.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /apis/resource.k8s.io/v1/deviceclasses.
package deviceclass

import (
	"context"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the deviceclasses endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resourcev1.Resource("deviceclasses"),
		Singular:       "deviceclass",
		New:            func() runtime.Object { return &resourcev1.DeviceClass{} },
		NewList:        func() runtime.Object { return &resourcev1.DeviceClassList{} },
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

// Strategy is the create, update and delete strategy of DeviceClasses. The generation
// counts changes of the spec, as for any object with one.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*resourcev1.DeviceClass).Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	class, oldClass := obj.(*resourcev1.DeviceClass), old.(*resourcev1.DeviceClass)
	if !apiequality.Semantic.DeepEqual(class.Spec, oldClass.Spec) {
		class.Generation = oldClass.Generation + 1
	}
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateDeviceClass(ctx, obj.(*resourcev1.DeviceClass), nil)
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateDeviceClass(ctx, obj.(*resourcev1.DeviceClass), old.(*resourcev1.DeviceClass))
}

// Fields are the fields DeviceClasses can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*resourcev1.DeviceClass).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get deviceclasses`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*resourcev1.DeviceClass] {
	return table.New(clk, []metav1.TableColumnDefinition{table.NameColumn(), table.AgeColumn()},
		func(c *resourcev1.DeviceClass, now time.Time) metav1.TableRow {
			return metav1.TableRow{Cells: []any{c.Name, table.Age(c, now)}}
		})
}
