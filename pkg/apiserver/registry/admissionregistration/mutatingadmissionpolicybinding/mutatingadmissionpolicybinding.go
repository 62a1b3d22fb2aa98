// Package mutatingadmissionpolicybinding is the registry of admissionregistration.k8s.io/v1
// MutatingAdmissionPolicyBindings: their defaults, validation, strategy, table and storage.
// A binding applies a MutatingAdmissionPolicy to the resources it matches, with the
// parameters it refers to.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for
// /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings.
package mutatingadmissionpolicybinding

import (
	"context"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the mutatingadmissionpolicybindings endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       admissionregistrationv1.Resource("mutatingadmissionpolicybindings"),
		Singular:       "mutatingadmissionpolicybinding",
		New:            func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBinding{} },
		NewList:        func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyBindingList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, InCategories: []string{"api-extensions"}}, nil
}

// SetDefaults defaults the match resources, when the binding narrows the policy's.
func SetDefaults(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) {
	validation.SetMatchResourcesDefaults(b.Spec.MatchResources)
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of bindings. As upstream, an update must
// name the resourceVersion it read.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Generation = 1
}

// PrepareForUpdate bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	b, o := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding), old.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	if !apiequality.Semantic.DeepEqual(b.Spec, o.Spec) {
		b.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	b := obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding)
	return append(Validate(b), validation.ValidateName(b.Name)...)
}

// ValidateUpdate checks the binding as a new one: nothing in it is ratcheted.
func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return Validate(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Name, false)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).Name, true)
}

// Validate validates a binding, in upstream's words.
func Validate(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&b.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec := field.NewPath("spec")
	errs = append(errs, validation.ValidateBinding(b.Spec.PolicyName, b.Spec.ParamRef, b.Spec.MatchResources, spec)...)
	// A mutation cannot change a DELETE.
	return append(errs, validation.ValidateMutatingOperations(b.Spec.MatchResources, spec.Child("matchResources"))...)
}

// Fields are the fields bindings can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*admissionregistrationv1.MutatingAdmissionPolicyBinding).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get mutatingadmissionpolicybindings`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*admissionregistrationv1.MutatingAdmissionPolicyBinding] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configuration param"},
		table.AgeColumn(),
	}, func(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{b.Name, b.Spec.PolicyName, validation.ParamRefCell(b.Spec.ParamRef), table.Age(b, now)}}
	})
}
