package statefulset

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
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/scale"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/workload"
)

// Storage holds the endpoints of StatefulSets.
type Storage struct {
	StatefulSet *registry.Resource
	Status      *registry.SubresourceREST
	Scale       *scale.REST[*appsv1.StatefulSet]
}

// NewStorage returns the statefulsets endpoint and its status and scale subresources.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       appsv1.Resource("statefulsets"),
		Singular:       "statefulset",
		New:            func() runtime.Object { return &appsv1.StatefulSet{} },
		NewList:        func() runtime.Object { return &appsv1.StatefulSetList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		StatefulSet: &registry.Resource{Store: store, Short: []string{"sts"}, InCategories: []string{"all"}},
		Status:      registry.NewSubresourceREST(store, StatusStrategy),
		Scale:       scale.NewREST(store, ScaleTarget),
	}, nil
}

// ScaleTarget is where a StatefulSet keeps what its Scale shows.
var ScaleTarget = scale.Target[*appsv1.StatefulSet]{
	Resource:     appsv1.Resource("statefulsets"),
	GroupVersion: appsv1.SchemeGroupVersion,
	Replicas: func(s *appsv1.StatefulSet) (int32, int32, string, error) {
		selector, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		if err != nil {
			return 0, 0, "", err
		}
		return ptr.Deref(s.Spec.Replicas, 0), s.Status.Replicas, selector.String(), nil
	},
	SetReplicas: func(s *appsv1.StatefulSet, n int32) { s.Spec.Replicas = &n },
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of StatefulSets.
var Strategy = strategy{registry.Base}

var _ rest.GarbageCollectionDeleteStrategy = Strategy

func (strategy) NamespaceScoped() bool { return true }

// DefaultGarbageCollectionPolicy deletes a StatefulSet's pods and revisions with it, in the
// background, as upstream does for apps/v1.
func (strategy) DefaultGarbageCollectionPolicy(context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate starts the generation at 1 and clears the status.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	s := obj.(*appsv1.StatefulSet)
	s.Status = appsv1.StatefulSetStatus{}
	s.Generation = 1
}

// PrepareForUpdate keeps the status and bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	s.Status = o.Status
	s.Generation = o.Generation
	if !apiequality.Semantic.DeepEqual(s.Spec, o.Spec) {
		s.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateStatefulSet(obj.(*appsv1.StatefulSet))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateStatefulSetUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
}

// WarningsOnCreate warns, in upstream's order, of the template's warnings, of claim templates
// asking for a fraction of a byte, and of a negative revisionHistoryLimit, which validation
// lets through for StatefulSets.
func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	s := obj.(*appsv1.StatefulSet)
	warnings := workload.TemplateWarnings(&s.Spec.Template, nil)
	// Upstream's path names the claim template, not its spec.
	warnings = append(warnings, claimWarnings(s, func(p *field.Path) *field.Path { return p })...)
	return append(warnings, historyWarnings(s)...)
}

// WarningsOnUpdate warns as WarningsOnCreate, the template's warnings only when the update
// changed the spec.
func (strategy) WarningsOnUpdate(_ context.Context, obj, old runtime.Object) []string {
	s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	warnings := workload.UpdateWarnings(s.Generation != o.Generation, &s.Spec.Template, &o.Spec.Template)
	// Upstream's path on update names the spec, capitalised: "volumeClaimTemplates[0].Spec".
	warnings = append(warnings, claimWarnings(s, func(p *field.Path) *field.Path { return p.Child("Spec") })...)
	return append(warnings, historyWarnings(s)...)
}

func claimWarnings(s *appsv1.StatefulSet, specPath func(*field.Path) *field.Path) []string {
	var warnings []string
	for i := range s.Spec.VolumeClaimTemplates {
		p := specPath(field.NewPath("spec", "volumeClaimTemplates").Index(i))
		warnings = append(warnings, pod.ClaimSpecWarnings(p, &s.Spec.VolumeClaimTemplates[i].Spec)...)
	}
	return warnings
}

func historyWarnings(s *appsv1.StatefulSet) []string {
	if s.Spec.RevisionHistoryLimit != nil && *s.Spec.RevisionHistoryLimit < 0 {
		return []string{"spec.revisionHistoryLimit: a negative value retains all historical revisions; a value >= 0 is recommended"}
	}
	return nil
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of statefulsets/status, which keeps the spec.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	obj.(*appsv1.StatefulSet).Spec = old.(*appsv1.StatefulSet).Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	return ValidateStatefulSetStatusUpdate(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
}

func (statusStrategy) WarningsOnUpdate(context.Context, runtime.Object, runtime.Object) []string {
	return nil
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(appsv1.SchemeGroupVersion, "spec")
}

// Fields are the fields StatefulSets can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*appsv1.StatefulSet).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get statefulsets`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*appsv1.StatefulSet] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		table.AgeColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
		{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
	}, func(s *appsv1.StatefulSet, now time.Time) metav1.TableRow {
		names, images := workload.ContainerCells(s.Spec.Template.Spec.Containers)
		return metav1.TableRow{Cells: []any{
			s.Name, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, ptr.Deref(s.Spec.Replicas, 0)), table.Age(s, now), names, images,
		}}
	})
}
