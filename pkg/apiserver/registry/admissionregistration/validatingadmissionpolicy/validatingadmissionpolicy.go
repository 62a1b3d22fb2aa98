// Package validatingadmissionpolicy is the registry of admissionregistration.k8s.io/v1
// ValidatingAdmissionPolicies: their defaults, validation (which compiles every CEL expression
// of the policy), strategies, table and storage, with the status subresource the policy's type
// checker writes. The ValidatingAdmissionPolicy admission plugin evaluates the policies.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies
// and their status.
package validatingadmissionpolicy

import (
	"context"
	"fmt"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/jsonpath"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/admissionregistration/validation"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage holds the endpoints of policies.
type Storage struct {
	Policy *registry.Resource
	Status *registry.SubresourceREST
}

// NewStorage returns the validatingadmissionpolicies and validatingadmissionpolicies/status
// endpoints.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       admissionregistrationv1.Resource("validatingadmissionpolicies"),
		Singular:       "validatingadmissionpolicy",
		New:            func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicy{} },
		NewList:        func() runtime.Object { return &admissionregistrationv1.ValidatingAdmissionPolicyList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		Policy: &registry.Resource{Store: store, InCategories: []string{"api-extensions"}},
		Status: registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// SetDefaults defaults the failure policy to Fail and the match constraints, as upstream's v1
// defaults.
func SetDefaults(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p.Spec.FailurePolicy == nil {
		p.Spec.FailurePolicy = ptr.To(admissionregistrationv1.Fail)
	}
	validation.SetMatchResourcesDefaults(p.Spec.MatchConstraints)
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of policies. The main resource never
// writes status, and an update must name the resourceVersion it read, as upstream.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                         { return false }
func (strategy) AllowUnconditionalUpdate(context.Context) bool { return false }

// PrepareForCreate clears status (the type checker fills it) and starts the generation at 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	p.Status = admissionregistrationv1.ValidatingAdmissionPolicyStatus{}
	p.Generation = 1
}

// PrepareForUpdate keeps the stored status and bumps the generation when the spec changed, so
// that the type checker checks the policy again.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	p, o := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	p.Status = o.Status
	if !apiequality.Semantic.DeepEqual(p.Spec, o.Spec) {
		p.Generation = o.Generation + 1
	}
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	p := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	return append(Validate(p, validation.PolicyOptions{}), validation.ValidateName(p.Name)...)
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	p, o := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	return Validate(p, validation.UpdatePolicyOptions(shared(&p.Spec), shared(&o.Spec), storedExpressions(&o.Spec)))
}

func (strategy) WarningsOnCreate(_ context.Context, obj runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Name, false)
}

func (strategy) WarningsOnUpdate(_ context.Context, obj, _ runtime.Object) []string {
	return validation.NameWarnings(obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Name, true)
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(admissionregistrationv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the update strategy of validatingadmissionpolicies/status: only status
// changes, the generation stays.
var StatusStrategy = statusStrategy{Strategy}

func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	p, o := obj.(*admissionregistrationv1.ValidatingAdmissionPolicy), old.(*admissionregistrationv1.ValidatingAdmissionPolicy)
	p.Spec = o.Spec
	metav1.ResetObjectMetaForStatus(&p.ObjectMeta, &o.ObjectMeta)
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return ValidateStatus(&obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).Status, field.NewPath("status"))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(admissionregistrationv1.SchemeGroupVersion, "spec", "metadata")
}

// maxAuditAnnotations bounds the audit annotations of one policy.
const maxAuditAnnotations = 20

// Validate validates a policy, in upstream's words, compiling its expressions; opts spare an
// update what the stored policy already had.
func Validate(p *admissionregistrationv1.ValidatingAdmissionPolicy, opts validation.PolicyOptions) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&p.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	spec, specPath := &p.Spec, field.NewPath("spec")
	// Variables make the compiler stateful: each one joins the environment of later expressions.
	c := validation.NewCompiler(len(spec.Variables) > 0)
	errs = append(errs, validation.ValidatePolicySpec(shared(spec), c, opts, specPath)...)
	if len(spec.Validations) == 0 && len(spec.AuditAnnotations) == 0 {
		const msg = "validations or auditAnnotations must contain at least one item"
		return append(errs, field.Required(specPath.Child("validations"), msg), field.Required(specPath.Child("auditAnnotations"), msg))
	}
	hasParams := spec.ParamKind != nil
	for i := range spec.Validations {
		errs = append(errs, c.ValidateValidation(&spec.Validations[i], hasParams, opts.Stored, specPath.Child("validations").Index(i))...)
	}
	annotations := specPath.Child("auditAnnotations")
	if len(spec.AuditAnnotations) > maxAuditAnnotations {
		errs = append(errs, field.Invalid(annotations, spec.AuditAnnotations, fmt.Sprintf("must not have more than %d auditAnnotations", maxAuditAnnotations)))
	}
	keys := sets.New[string]()
	for i := range spec.AuditAnnotations {
		a := &spec.AuditAnnotations[i]
		errs = append(errs, c.ValidateAuditAnnotation(p.Name, a, hasParams, opts.Stored, annotations.Index(i))...)
		if keys.Has(a.Key) {
			errs = append(errs, field.Duplicate(annotations.Index(i).Child("key"), a.Key))
		}
		keys.Insert(a.Key)
	}
	return errs
}

func shared(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) validation.PolicySpec {
	return validation.PolicySpec{FailurePolicy: spec.FailurePolicy, ParamKind: spec.ParamKind, MatchConstraints: spec.MatchConstraints,
		MatchConditions: spec.MatchConditions, Variables: spec.Variables}
}

func storedExpressions(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) validation.StoredExpressions {
	s := validation.NewStoredExpressions()
	for _, mc := range spec.MatchConditions {
		s.MatchConditions.Insert(mc.Expression)
	}
	for _, v := range spec.Validations {
		s.Validations.Insert(v.Expression)
		if v.MessageExpression != "" {
			s.Messages.Insert(v.MessageExpression)
		}
	}
	for _, a := range spec.AuditAnnotations {
		s.AuditAnnotations.Insert(a.ValueExpression)
	}
	return s
}

// ValidateStatus validates what the type checker writes: warnings that name a field by a
// JSONPath, and conditions.
func ValidateStatus(s *admissionregistrationv1.ValidatingAdmissionPolicyStatus, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.TypeChecking != nil {
		warnings := fldPath.Child("typeChecking", "expressionWarnings")
		for i, w := range s.TypeChecking.ExpressionWarnings {
			p := warnings.Index(i)
			if w.Warning == "" {
				errs = append(errs, field.Required(p.Child("warning"), ""))
			}
			errs = append(errs, validateFieldRef(w.FieldRef, p.Child("fieldRef"))...)
		}
	}
	return append(errs, metavalidation.ValidateConditions(s.Conditions, fldPath.Child("conditions"))...)
}

// validateFieldRef only parses the JSONPath, so that an older or newer server's warnings pass.
func validateFieldRef(ref string, fldPath *field.Path) field.ErrorList {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if err := jsonpath.New("spec").Parse("{" + ref + "}"); err != nil {
		return field.ErrorList{field.Invalid(fldPath, ref, fmt.Sprintf("invalid JSONPath: %v", err))}
	}
	return nil
}

// Fields are the fields policies can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*admissionregistrationv1.ValidatingAdmissionPolicy).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get validatingadmissionpolicies`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*admissionregistrationv1.ValidatingAdmissionPolicy] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		table.AgeColumn(),
	}, func(p *admissionregistrationv1.ValidatingAdmissionPolicy, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{p.Name, int64(len(p.Spec.Validations)), validation.ParamKindCell(p.Spec.ParamKind), table.Age(p, now)}}
	})
}
