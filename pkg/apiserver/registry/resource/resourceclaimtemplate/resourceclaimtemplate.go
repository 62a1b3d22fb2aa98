// Package resourceclaimtemplate is the registry of resource.k8s.io/v1 ResourceClaimTemplates:
// their defaults, strategy, table and storage. A template is the spec of the claims the
// resource claim controller makes, one per pod that names the template.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /apis/resource.k8s.io/v1/resourceclaimtemplates.
package resourceclaimtemplate

import (
	"context"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/resourceclaim"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the resourceclaimtemplates endpoint.
func NewREST(getter generic.RESTOptionsGetter, namespaces resourceclaim.NamespaceGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resourcev1.Resource("resourceclaimtemplates"),
		Singular:       "resourceclaimtemplate",
		New:            func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
		NewList:        func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
		Strategy:       &strategy{Strategy: registry.Base, namespaces: namespaces},
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store}, nil
}

// SetDefaults defaults the claims' spec as a claim's is defaulted.
func SetDefaults(t *resourcev1.ResourceClaimTemplate) {
	resourceclaim.SetSpecDefaults(&t.Spec.Spec)
}

// strategy is the create, update and delete strategy of ResourceClaimTemplates; the spec
// is fixed at creation. Admin access is checked against the namespace as for a claim,
// since the claims made from the template will live there.
type strategy struct {
	registry.Strategy
	namespaces resourceclaim.NamespaceGetter
}

func (*strategy) NamespaceScoped() bool { return true }

func (*strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	validation.DropAlphaClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec, nil)
}

func (*strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	validation.DropAlphaClaimFields(&obj.(*resourcev1.ResourceClaimTemplate).Spec.Spec, &old.(*resourcev1.ResourceClaimTemplate).Spec.Spec)
}

func (s *strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	t := obj.(*resourcev1.ResourceClaimTemplate)
	errs := resourceclaim.AdminAccessAllowed(ctx, t.Spec.Spec.Devices.Requests, t.Namespace, field.NewPath("spec"), s.namespaces)
	return append(errs, validation.ValidateClaimTemplate(ctx, t, nil)...)
}

func (*strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateClaimTemplate(ctx, obj.(*resourcev1.ResourceClaimTemplate), old.(*resourcev1.ResourceClaimTemplate))
}

// Fields are the fields ResourceClaimTemplates can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*resourcev1.ResourceClaimTemplate).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get resourceclaimtemplates`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*resourcev1.ResourceClaimTemplate] {
	return table.New(clk, []metav1.TableColumnDefinition{table.NameColumn(), table.AgeColumn()},
		func(t *resourcev1.ResourceClaimTemplate, now time.Time) metav1.TableRow {
			return metav1.TableRow{Cells: []any{t.Name, table.Age(t, now)}}
		})
}
