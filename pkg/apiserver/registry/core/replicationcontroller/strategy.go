package replicationcontroller

import (
	"context"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
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

// Storage holds the endpoints of ReplicationControllers.
type Storage struct {
	ReplicationController *registry.Resource
	Status                *registry.SubresourceREST
	Scale                 *scale.REST[*corev1.ReplicationController]
}

// NewStorage returns the replicationcontrollers endpoint and its status and scale
// subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("replicationcontrollers"),
		Singular:       "replicationcontroller",
		New:            func() runtime.Object { return &corev1.ReplicationController{} },
		NewList:        func() runtime.Object { return &corev1.ReplicationControllerList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		ReplicationController: &registry.Resource{Store: store, Short: []string{"rc"}, InCategories: []string{"all"}},
		Status:                registry.NewSubresourceREST(store, StatusStrategy),
		Scale:                 scale.NewREST(store, ScaleTarget),
	}, nil
}

// ScaleTarget is where an RC keeps what its Scale shows; its selector is a map, shown as a
// label selector.
var ScaleTarget = scale.Target[*corev1.ReplicationController]{
	Resource:     corev1.Resource("replicationcontrollers"),
	GroupVersion: corev1.SchemeGroupVersion,
	Replicas: func(rc *corev1.ReplicationController) (int32, int32, string, error) {
		return ptr.Deref(rc.Spec.Replicas, 0), rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String(), nil
	},
	SetReplicas: func(rc *corev1.ReplicationController, n int32) { rc.Spec.Replicas = &n },
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of ReplicationControllers.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy orphans an RC's pods unless the client asks otherwise, as
// upstream keeps for core/v1's backward compatibility (kubectl asks for background deletion).
func (strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.OrphanDependents
}

// PrepareForCreate starts the generation at 1 and clears the status.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	rc.Status = corev1.ReplicationControllerStatus{}
	rc.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rc, o := obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController)
	rc.Status = o.Status
	rc.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(rc.Spec, o.Spec) {
		rc.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateReplicationController(obj.(*corev1.ReplicationController))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateReplicationControllerUpdate(obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController))
}

// WarningsOnCreate warns of a name that is no DNS label, then of the template's warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	rc := obj.(*corev1.ReplicationController)
	return workload.CreateWarnings(rc.Name, rc.Spec.Template)
}

// WarningsOnUpdate warns of the template's warnings when the update changed the spec.
// (Upstream's v1.37 passes the old template where the new one belongs, and so warns of what
// the update replaced; berth warns of the new template, as every other workload does.)
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	rc, o := obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController)
	return workload.UpdateWarnings(rc.Generation != o.Generation, rc.Spec.Template, o.Spec.Template)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of replicationcontrollers/status, which keeps the
// spec.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*corev1.ReplicationController).Spec = old.(*corev1.ReplicationController).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateReplicationControllerStatusUpdate(obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(corev1.SchemeGroupVersion, "spec")
}

// Fields are the fields RCs can be selected by: metadata and status.replicas.
func Fields(obj runtime.Object) fields.Set {
	rc := obj.(*corev1.ReplicationController)
	set := generic.ObjectMetaFieldsSet(&rc.ObjectMeta, true)
	set["status.replicas"] = strconv.Itoa(int(rc.Status.Replicas))
	return set
}

// NewTableConvertor returns the columns of `kubectl get replicationcontrollers`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.ReplicationController] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]},
	}, func(rc *corev1.ReplicationController, now time.Time) metav1.TableRow {
		var containers []corev1.Container
		if rc.Spec.Template != nil {
			containers = rc.Spec.Template.Spec.Containers
		}
		names, images := workload.ContainerCells(containers)
		return metav1.TableRow{Cells: []any{
			rc.Name, int64(ptr.Deref(rc.Spec.Replicas, 0)), int64(rc.Status.Replicas), int64(rc.Status.ReadyReplicas),
			table.Age(rc, now), names, images, labels.FormatLabels(rc.Spec.Selector),
		}}
	})
}
