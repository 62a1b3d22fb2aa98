package deployment

import (
	"context"
	"fmt"
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

// Storage holds the endpoints of Deployments.
type Storage struct {
	Deployment *registry.Resource
	Status     *registry.SubresourceREST
	Scale      *scale.REST[*appsv1.Deployment]
}

// NewStorage returns the deployments endpoint and its status and scale subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       appsv1.Resource("deployments"),
		Singular:       "deployment",
		New:            func() runtime.Object { return &appsv1.Deployment{} },
		NewList:        func() runtime.Object { return &appsv1.DeploymentList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		Deployment: &registry.Resource{Store: store, Short: []string{"deploy"}, InCategories: []string{"all"}},
		Status:     registry.NewSubresourceREST(store, StatusStrategy),
		Scale:      scale.NewREST(store, ScaleTarget),
	}, nil
}

// ScaleTarget is where a Deployment keeps what its Scale shows.
var ScaleTarget = scale.Target[*appsv1.Deployment]{
	Resource:     appsv1.Resource("deployments"),
	GroupVersion: appsv1.SchemeGroupVersion,
	Replicas: func(d *appsv1.Deployment) (int32, int32, string, error) {
		selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return 0, 0, "", err
		}
		return ptr.Deref(d.Spec.Replicas, 0), d.Status.Replicas, selector.String(), nil
	},
	SetReplicas: func(d *appsv1.Deployment, n int32) { d.Spec.Replicas = &n },
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of Deployments.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy deletes a Deployment's ReplicaSets with it, in the
// background, as upstream does for apps/v1.
func (strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate starts the generation at 1 and clears the status, which only the
// controller writes.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	d.Status = appsv1.DeploymentStatus{}
	d.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec changed, or the
// annotations, which the controller copies to the ReplicaSets.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	d.Status = o.Status
	d.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(d.Spec, o.Spec) || !apiequality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
		d.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateDeployment(obj.(*appsv1.Deployment))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateDeploymentUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
}

// WarningsOnCreate warns of a name that is no DNS label, then of the template's warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	d := obj.(*appsv1.Deployment)
	return workload.CreateWarnings(d.Name, &d.Spec.Template)
}

// WarningsOnUpdate warns of the template's warnings when the update changed the spec.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	return workload.UpdateWarnings(d.Generation != o.Generation, &d.Spec.Template, &o.Spec.Template)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of deployments/status: the controller's report,
// which changes neither the spec nor the labels.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	d.Spec = o.Spec
	d.Labels = o.Labels
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateDeploymentStatusUpdate(obj.(*appsv1.Deployment), old.(*appsv1.Deployment))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "spec", "metadata.labels")
}

// Fields are the fields Deployments can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*appsv1.Deployment).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get deployments`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*appsv1.Deployment] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	}, func(d *appsv1.Deployment, now time.Time) metav1.TableRow {
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		names, images := workload.ContainerCells(d.Spec.Template.Spec.Containers)
		return metav1.TableRow{Cells: []any{
			d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, ptr.Deref(d.Spec.Replicas, 0)),
			int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), table.Age(d, now),
			names, images, selector,
		}}
	})
}
