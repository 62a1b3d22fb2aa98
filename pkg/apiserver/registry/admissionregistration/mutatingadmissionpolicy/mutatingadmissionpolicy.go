// Package mutatingadmissionpolicy is the registry of admissionregistration.k8s.io/v1
// MutatingAdmissionPolicies: their defaults, validation (which compiles every CEL expression of
// the policy), strategy, table and storage. The MutatingAdmissionPolicy admission plugin
// applies the policies' mutations.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies.
package mutatingadmissionpolicy

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
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the mutatingadmissionpolicies endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       admissionregistrationv1.Resource("mutatingadmissionpolicies"),
		Singular:       "mutatingadmissionpolicy",
		New:            func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicy{} },
		NewList:        func() runtime.Object { return &admissionregistrationv1.MutatingAdmissionPolicyList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, InCategories: []string{"api-extensions"}}, nil
}

// SetDefaults defaults the failure policy to Fail and the match constraints, as upstream's v1
// defaults. The reinvocation policy has no default: a policy must choose.
func SetDefaults(p *admissionregistrationv1.MutatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	validation.SetMatchResourcesDefaults(p.Spec.MatchConstraints)
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of policies. As upstream, an update must
// name the resourceVersion it read.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Generation = 1
}

// PrepareForUpdate bumps the generation when the spec changed.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	p, o := obj.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy)
	if !apiequality.Semantic.DeepEqual(p.Spec, o.Spec) {
		p.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.MutatingAdmissionPolicy)
	return append(Validate(p, validation.PolicyOptions{}), validation.ValidateName(p.Name)...)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	p, o := obj.(*admissionregistrationv1.MutatingAdmissionPolicy), old.(*admissionregistrationv1.MutatingAdmissionPolicy)
	return Validate(p, validation.UpdatePolicyOptions(shared(&p.Spec), shared(&o.Spec), storedExpressions(&o.Spec)))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Name, false)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.MutatingAdmissionPolicy).Name, true)
}

// Validate validates a policy, in upstream's words, compiling its expressions; opts spare an
// update what the stored policy already had.
func Validate(p *admissionregistrationv1.MutatingAdmissionPolicy, opts validation.PolicyOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&p.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec, specPath := &p.Spec, field.NewPath("spec")
	// Mutations always compile with composition, as upstream, variables or not.
	c := validation.NewCompiler(true)
	errs = append(errs, validation.ValidatePolicySpec(shared(spec), c, opts, specPath)...)
	// A mutation cannot change a DELETE.
	errs = append(errs, validation.ValidateMutatingOperations(spec.MatchConstraints, specPath.Child("matchConstraints"))...)
	if len(spec.Mutations) == 0 {
		errs = append(errs, field.Required(specPath.Child("mutations"), "mutations must contain at least one item"))
	}
	for i := range spec.Mutations {
		errs = append(errs, c.ValidateMutation(&spec.Mutations[i], spec.ParamKind != nil, opts.Stored, specPath.Child("mutations").Index(i))...)
	}
	return append(errs, validation.ValidateRequiredReinvocationPolicy(spec.ReinvocationPolicy, specPath.Child("reinvocationPolicy"))...)
}

func shared(spec *admissionregistrationv1.MutatingAdmissionPolicySpec) validation.PolicySpec {
	return validation.PolicySpec{FailurePolicy: spec.FailurePolicy, ParamKind: spec.ParamKind, MatchConstraints: spec.MatchConstraints,
		MatchConditions: spec.MatchConditions, Variables: spec.Variables}
}

// storedExpressions are the old policy's match conditions and apply configurations. As
// upstream, its JSON patches are not among them.
func storedExpressions(spec *admissionregistrationv1.MutatingAdmissionPolicySpec) validation.StoredExpressions {
	s := validation.NewStoredExpressions()
	for _, mc := range spec.MatchConditions {
		s.MatchConditions.Insert(mc.Expression)
	}
	for _, m := range spec.Mutations {
		if m.ApplyConfiguration != nil {
			s.Mutations.Insert(m.ApplyConfiguration.Expression)
		}
	}
	return s
}

// Fields are the fields policies can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*admissionregistrationv1.MutatingAdmissionPolicy).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get mutatingadmissionpolicies`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*admissionregistrationv1.MutatingAdmissionPolicy] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Mutations", Type: "integer", Description: "Mutation indicates the number of mutations rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		table.AgeColumn(),
	}, func(p *admissionregistrationv1.MutatingAdmissionPolicy, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{p.Name, int64(len(p.Spec.Mutations)), validation.ParamKindCell(p.Spec.ParamKind), table.Age(p, now)}}
	})
}
