package daemonset

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

var (
	intstrOne  = intstr.FromInt32(1)
	intstrZero = intstr.FromInt32(0)
)

// Storage holds the endpoints of DaemonSets.
type Storage struct {
	DaemonSet *registry.Resource
	Status    *registry.SubresourceREST
}

// NewStorage returns the daemonsets endpoint and its status subresource.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       appsv1.Resource("daemonsets"),
		Singular:       "daemonset",
		New:            func() runtime.Object { return &appsv1.DaemonSet{} },
		NewList:        func() runtime.Object { return &appsv1.DaemonSetList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		DaemonSet: &registry.Resource{Store: store, Short: []string{"ds"}, InCategories: []string{"all"}},
		Status:    registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// TemplateGeneration is a DaemonSet's template generation, 0 when it has none (or one that is
// not a number).
func TemplateGeneration(ds *appsv1.DaemonSet) int64 {
	g, err := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	if err != nil {
		return 0
	}
	return g
}

func setTemplateGeneration(ds *appsv1.DaemonSet, g int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(g, 10)
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of DaemonSets.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy deletes a DaemonSet's pods and revisions with it, in the
// background, as upstream does for apps/v1.
func (strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate starts the generation and the template generation at 1 (or the template
// generation given, if higher) and clears the status.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	ds.Status = appsv1.DaemonSetStatus{}
	ds.Generation = 1
	setTemplateGeneration(ds, max(TemplateGeneration(ds), 1))
}

// PrepareForUpdate keeps the status and the template generation, and counts a change of the
// template in both generations and one of the rest of the spec in the generation only.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	ds.Status = o.Status
	ds.Generation = o.Generation
	g := TemplateGeneration(o)
	switch {
	case !apiequality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template):
		g++
		ds.Generation++
	case !apiequality.Semantic.DeepEqual(ds.Spec, o.Spec):
		ds.Generation++
	}
	setTemplateGeneration(ds, g)
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateDaemonSet(obj.(*appsv1.DaemonSet))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateDaemonSetUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
}

// WarningsOnCreate warns of the template's warnings.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return workload.TemplateWarnings(&obj.(*appsv1.DaemonSet).Spec.Template, nil)
}

// WarningsOnUpdate warns of the template's warnings when the update changed the template
// (moved the template generation), as upstream.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	return workload.UpdateWarnings(TemplateGeneration(ds) != TemplateGeneration(o), &ds.Spec.Template, &o.Spec.Template)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of daemonsets/status, which keeps the spec and the
// template generation.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	ds.Spec = o.Spec
	if g, ok := o.Annotations[appsv1.DeprecatedTemplateGeneration]; ok {
		if ds.Annotations == nil {
			ds.Annotations = map[string]string{}
		}
		ds.Annotations[appsv1.DeprecatedTemplateGeneration] = g
	}
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateDaemonSetStatusUpdate(obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "spec")
}

// Fields are the fields DaemonSets can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*appsv1.DaemonSet).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get daemonsets`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*appsv1.DaemonSet] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
	}, func(ds *appsv1.DaemonSet, now time.Time) metav1.TableRow {
		s := ds.Status
		names, images := workload.ContainerCells(ds.Spec.Template.Spec.Containers)
		return metav1.TableRow{Cells: []any{
			ds.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
			int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			table.Age(ds, now), names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
		}}
	})
}
