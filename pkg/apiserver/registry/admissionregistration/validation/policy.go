package validation

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PolicySpec is the part of a ValidatingAdmissionPolicy's and a MutatingAdmissionPolicy's spec
// that both kinds have.
type PolicySpec struct {
	FailurePolicy    *admissionregistrationv1.FailurePolicyType
	ParamKind        *admissionregistrationv1.ParamKind
	MatchConstraints *admissionregistrationv1.MatchResources
	MatchConditions  []admissionregistrationv1.MatchCondition
	Variables        []admissionregistrationv1.Variable
}

// PolicyOptions are the checks that depend on whether the policy is new.
type PolicyOptions struct {
	// IgnoreMatchConditions skips match conditions an update left as they were (with the same
	// paramKind, which decides whether they may use params).
	IgnoreMatchConditions bool
	Stored                StoredExpressions
}

// UpdatePolicyOptions are the checks of an update from old, stored holding old's expressions.
func UpdatePolicyOptions(spec, old PolicySpec, stored StoredExpressions) PolicyOptions {
	return PolicyOptions{
		IgnoreMatchConditions: apiequality.Semantic.DeepEqual(spec.ParamKind, old.ParamKind) &&
			apiequality.Semantic.DeepEqual(spec.MatchConditions, old.MatchConditions),
		Stored: stored,
	}
}

// ValidatePolicySpec checks the shared part of a policy's spec: a failure policy, the
// paramKind, match constraints with at least one resource rule (the rules give the
// expressions their types), match conditions and variables. It compiles the variables with c,
// so that the kind's expressions compiled with c afterwards may use them.
func ValidatePolicySpec(spec PolicySpec, c *Compiler, opts PolicyOptions, fldPath *field.Path) field.ErrorList {
	errs := ValidateRequiredFailurePolicy(spec.FailurePolicy, fldPath.Child("failurePolicy"))
	hasParams := spec.ParamKind != nil
	errs = append(errs, ValidateParamKind(spec.ParamKind, fldPath.Child("paramKind"))...)
	if spec.MatchConstraints == nil {
		errs = append(errs, field.Required(fldPath.Child("matchConstraints"), ""))
	} else {
		errs = append(errs, ValidateMatchResources(spec.MatchConstraints, fldPath.Child("matchConstraints"))...)
		if len(spec.MatchConstraints.ResourceRules) == 0 {
			errs = append(errs, field.Required(fldPath.Child("matchConstraints", "resourceRules"), ""))
		}
	}
	if !opts.IgnoreMatchConditions {
		errs = append(errs, ValidateMatchConditions(spec.MatchConditions, hasParams, opts.Stored, fldPath.Child("matchConditions"))...)
	}
	for i := range spec.Variables {
		errs = append(errs, c.ValidateVariable(&spec.Variables[i], hasParams, opts.Stored, fldPath.Child("variables").Index(i))...)
	}
	return errs
}

// ValidateBinding checks what a ValidatingAdmissionPolicyBinding's and a
// MutatingAdmissionPolicyBinding's specs share: the policy's name, the paramRef and the match
// resources.
func ValidateBinding(policyName string, paramRef *admissionregistrationv1.ParamRef, match *admissionregistrationv1.MatchResources, fldPath *field.Path) field.ErrorList {
	errs := ValidatePolicyName(policyName, fldPath.Child("policyName"))
	errs = append(errs, ValidateParamRef(paramRef, fldPath.Child("paramRef"))...)
	return append(errs, ValidateMatchResources(match, fldPath.Child("matchResources"))...)
}

// ParamKindCell is a policy's PARAMKIND column, as upstream's printer: "<unset>" or
// "apiVersion/kind".
func ParamKindCell(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

// ParamRefCell is a binding's PARAMREF column, as upstream's printer: "namespace/name",
// "*/name" when the namespace is unset (the printer cannot tell whether the param kind is
// cluster-scoped), the selector's String(), or "<unset>".
func ParamRefCell(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		return pr.Selector.String()
	}
	return "<unset>"
}
