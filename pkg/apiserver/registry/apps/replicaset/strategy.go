package replicaset

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/scale"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// Storage holds the endpoints of ReplicaSets.
type Storage struct {
	ReplicaSet *registry.Resource
	Status     *registry.SubresourceREST
	Scale      *scale.REST[*appsv1.ReplicaSet]
}

// NewStorage returns the replicasets endpoint and its status and scale subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       appsv1.Resource("replicasets"),
		Singular:       "replicaset",
		New:            func() runtime.Object { return &appsv1.ReplicaSet{} },
		NewList:        func() runtime.Object { return &appsv1.ReplicaSetList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		ReplicaSet: &registry.Resource{Store: store, Short: []string{"rs"}, InCategories: []string{"all"}},
		Status:     registry.NewSubresourceREST(store, StatusStrategy),
		Scale:      scale.NewREST(store, ScaleTarget),
	}, nil
}

// ScaleTarget is where a ReplicaSet keeps what its Scale shows.
var ScaleTarget = scale.Target[*appsv1.ReplicaSet]{
	Resource:     appsv1.Resource("replicasets"),
	GroupVersion: appsv1.SchemeGroupVersion,
	Replicas: func(rs *appsv1.ReplicaSet) (int32, int32, string, error) {
		selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
		if err != nil {
			return 0, 0, "", err
		}
		return ptr.Deref(rs.Spec.Replicas, 0), rs.Status.Replicas, selector.String(), nil
	},
	SetReplicas: func(rs *appsv1.ReplicaSet, n int32) { rs.Spec.Replicas = &n },
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ReplicaSets.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy deletes a ReplicaSet's pods with it, in the background, as
// upstream does for apps/v1.
func (strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate starts the generation at 1 and clears the status.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	rs.Status = appsv1.ReplicaSetStatus{}
	rs.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	rs.Status = o.Status
	rs.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(rs.Spec, o.Spec) {
		rs.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateReplicaSet(obj.(*appsv1.ReplicaSet))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateReplicaSetUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
}

// WarningsOnCreate warns of a name that is no DNS label, then of the template's warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	rs := obj.(*appsv1.ReplicaSet)
	return workload.CreateWarnings(rs.Name, &rs.Spec.Template)
}

// WarningsOnUpdate warns of the template's warnings when the update changed the spec.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	return workload.UpdateWarnings(rs.Generation != o.Generation, &rs.Spec.Template, &o.Spec.Template)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of replicasets/status, which keeps the spec.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.ReplicaSet).Spec = old.(*appsv1.ReplicaSet).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateReplicaSetStatusUpdate(obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "spec")
}

// Fields are the fields of a ReplicaSet's store, as upstream's: metadata and status.replicas
// (apps/v1 has no field-label conversion for the latter, so clients may name metadata only).
func Fields(obj runtime.Object) fields.Set {
	rs := obj.(*appsv1.ReplicaSet)
	set := generic.ObjectMetaFieldsSet(&rs.ObjectMeta, true)
	set["status.replicas"] = strconv.Itoa(int(rs.Status.Replicas))
	return set
}

// NewTableConvertor returns the columns of `kubectl get replicasets`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*appsv1.ReplicaSet] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
	}, func(rs *appsv1.ReplicaSet, now time.Time) metav1.TableRow {
		names, images := workload.ContainerCells(rs.Spec.Template.Spec.Containers)
		return metav1.TableRow{Cells: []any{
			rs.Name, int64(ptr.Deref(rs.Spec.Replicas, 0)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas),
			table.Age(rs, now), names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
		}}
	})
}
