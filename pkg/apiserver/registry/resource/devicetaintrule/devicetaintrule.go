// Package devicetaintrule is the registry of resource.k8s.io/v1 DeviceTaintRules: their
// defaults, strategy, table and storage, and the status subresource. A rule taints the
// devices it selects (by driver, pool, device name) as if their drivers had; the eviction
// controller reports its progress in the rule's status conditions.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// default and validate steps for /apis/resource.k8s.io/v1/devicetaintrules and its status.
package devicetaintrule

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
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/resource/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of DeviceTaintRules.
type Storage struct {
	DeviceTaintRule *registry.Resource
	Status          *registry.SubresourceREST
}

// NewStorage returns the devicetaintrules and devicetaintrules/status endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       resourcev1.Resource("devicetaintrules"),
		Singular:       "devicetaintrule",
		New:            func() runtime.Object { return &resourcev1.DeviceTaintRule{} },
		NewList:        func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		DeviceTaintRule: &registry.Resource{Store: store},
		Status:          registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// SetDefaults stamps the taint with the time it was added, to the second, as upstream's
// v1 defaults do: tolerations with a toleration period count from it.
func SetDefaults(rule *resourcev1.DeviceTaintRule) {
	SetTaintDefaults(&rule.Spec.Taint)
}

// SetTaintDefaults defaults one device taint; ResourceSlices' taints share it.
func SetTaintDefaults(t *resourcev1.DeviceTaint) {
	if t.TimeAdded == nil {
		t.TimeAdded = &metav1.Time{Time: time.Now().Truncate(time.Second)}
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of DeviceTaintRules. The main
// resource never writes status; the generation counts changes of the spec.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	rule := obj.(*resourcev1.DeviceTaintRule)
	rule.Status = resourcev1.DeviceTaintRuleStatus{}
	rule.Generation = 1
}

func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rule, oldRule := obj.(*resourcev1.DeviceTaintRule), old.(*resourcev1.DeviceTaintRule)
	rule.Status = oldRule.Status
	if !apiequality.Semantic.DeepEqual(rule.Spec, oldRule.Spec) {
		rule.Generation = oldRule.Generation + 1
	}
}

func (strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	return validation.ValidateTaintRule(ctx, obj.(*resourcev1.DeviceTaintRule), nil)
}

func (strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTaintRule(ctx, obj.(*resourcev1.DeviceTaintRule), old.(*resourcev1.DeviceTaintRule))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(resourcev1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of devicetaintrules/status: only status changes.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	rule, oldRule := obj.(*resourcev1.DeviceTaintRule), old.(*resourcev1.DeviceTaintRule)
	rule.Spec = oldRule.Spec
	metav1.ResetObjectMetaForStatus(&rule.ObjectMeta, &oldRule.ObjectMeta)
}

func (statusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	return validation.ValidateTaintRuleStatus(ctx, obj.(*resourcev1.DeviceTaintRule), old.(*resourcev1.DeviceTaintRule))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(resourcev1.SchemeGroupVersion, "metadata", "spec")
}

// Fields are the fields DeviceTaintRules can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*resourcev1.DeviceTaintRule).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get devicetaintrules`: the taint, not
// the selector, which may be long and is often empty.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*resourcev1.DeviceTaintRule] {
	taint := resourcev1.DeviceTaint{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Key", Type: "string", Description: taint["key"]},
		{Name: "Value", Type: "string", Description: taint["value"]},
		{Name: "Effect", Type: "string", Description: taint["effect"]},
		{Name: "TimeAdded", Type: "string", Description: taint["timeAdded"]},
		table.AgeColumn(),
	}, func(r *resourcev1.DeviceTaintRule, now time.Time) metav1.TableRow {
		t := r.Spec.Taint
		added := ""
		if t.TimeAdded != nil {
			added = table.Since(t.TimeAdded.Time, now)
		}
		return metav1.TableRow{Cells: []any{r.Name, t.Key, t.Value, string(t.Effect), added, table.Age(r, now)}}
	})
}
