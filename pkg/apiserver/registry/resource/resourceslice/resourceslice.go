// Package resourceslice is the registry of resource.k8s.io/v1 ResourceSlices: their
// defaults, strategy, table and storage. A driver publishes the devices of a pool in one
// or more slices (a node's local devices, or devices reachable from several nodes); the
// scheduler allocates claims from them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /apis/resource.k8s.io/v1/resourceslices.
package resourceslice

import (
	"context"
	"fmt"
	"strings"
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
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/devicetaintrule"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the resourceslices endpoint. The watch cache indexes slices by node, as
// each node's agent watches the slices of its node.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resourcev1.Resource("resourceslices"),
		Singular:       "resourceslice",
		New:            func() runtime.Object { return &resourcev1.ResourceSlice{} },
		NewList:        func() runtime.Object { return &resourcev1.ResourceSliceList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
		Indexed:        map[string]func(runtime.Object) string{resourcev1.ResourceSliceSelectorNodeName: nodeName},
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

// SetDefaults stamps each device taint with the time it was added.
func SetDefaults(s *resourcev1.ResourceSlice) {
	for i := range s.Spec.Devices {
		for j := range s.Spec.Devices[i].Taints {
			devicetaintrule.SetTaintDefaults(&s.Spec.Devices[i].Taints[j])
		}
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ResourceSlices. The generation
// counts changes of the spec.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*resourcev1.ResourceSlice)
	s.Generation = 1
	validation.DropAlphaSliceFields(&s.Spec, nil)
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, oldSlice := obj.(*resourcev1.ResourceSlice), old.(*resourcev1.ResourceSlice)
	if !apiequality.Semantic.DeepEqual(s.Spec, oldSlice.Spec) {
		s.Generation = oldSlice.Generation + 1
	}
	validation.DropAlphaSliceFields(&s.Spec, &oldSlice.Spec)
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateSlice(ctx, obj.(*resourcev1.ResourceSlice), nil)
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateSlice(ctx, obj.(*resourcev1.ResourceSlice), old.(*resourcev1.ResourceSlice))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return driverCaseWarning(obj.(*resourcev1.ResourceSlice))
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return driverCaseWarning(obj.(*resourcev1.ResourceSlice))
}

// driverCaseWarning: upper case is accepted in a driver's name, for the drivers that used
// it, but the name should be lower case.
func driverCaseWarning(s *resourcev1.ResourceSlice) []string {
	if d := s.Spec.Driver; d != strings.ToLower(d) {
		return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", d)}
	}
	return nil
}

func nodeName(obj runtime.Object) string {
	if n := obj.(*resourcev1.ResourceSlice).Spec.NodeName; n != nil {
		return *n
	}
	return ""
}

// Fields are the fields ResourceSlices can be selected by: metadata, spec.nodeName (empty
// for slices of no single node), spec.driver and spec.pool.name.
func Fields(obj runtime.Object) fields.Set {
	s := obj.(*resourcev1.ResourceSlice)
	set := fields.Set{
		resourcev1.ResourceSliceSelectorNodeName: nodeName(s),
		resourcev1.ResourceSliceSelectorDriver:   s.Spec.Driver,
		resourcev1.ResourceSliceSelectorPoolName: s.Spec.Pool.Name,
	}
	return generic.AddObjectMetaFieldsSet(set, &s.ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get resourceslices`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*resourcev1.ResourceSlice] {
	spec := resourcev1.ResourceSliceSpec{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Node", Type: "string", Description: spec["nodeName"]},
		{Name: "Driver", Type: "string", Description: spec["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		table.AgeColumn(),
	}, func(s *resourcev1.ResourceSlice, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{s.Name, nodeName(s), s.Spec.Driver, s.Spec.Pool.Name, table.Age(s, now)}}
	})
}
