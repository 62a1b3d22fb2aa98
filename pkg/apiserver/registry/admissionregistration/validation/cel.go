package validation

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// StoredExpressions are the CEL expressions the stored object already has. They compile in the
// "stored expressions" environment, which keeps libraries a newer server may have dropped from
// new expressions, so that an update of an old object does not fail on what it did not change.
type StoredExpressions struct {
	MatchConditions  sets.Set[string]
	Validations      sets.Set[string]
	Messages         sets.Set[string]
	AuditAnnotations sets.Set[string]
	Mutations        sets.Set[string]
}

// NewStoredExpressions returns an empty set, for an update whose old object had none.
func NewStoredExpressions() StoredExpressions {
	return StoredExpressions{sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string](), sets.New[string]()}
}

func envFor(stored sets.Set[string], expression string) environment.Type {
	if stored.Has(expression) { // a nil set (a create) has nothing
		return environment.StoredExpressions
	}
	return environment.NewExpressions
}

// statelessCompiler compiles expressions that cannot see variables (match conditions and
// policies without variables). Building its environments is costly, so it is built once.
var statelessCompiler = sync.OnceValue(func() plugincel.Compiler {
	return plugincel.NewCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
})

// Compiler compiles one policy's expressions. A policy with variables needs a compiler of its
// own, since each compiled variable joins the environment of the expressions after it.
type Compiler struct {
	c          plugincel.Compiler
	composited *plugincel.CompositedCompiler
}

// NewCompiler returns a compiler for a policy; composition is for one that has variables.
func NewCompiler(composition bool) *Compiler {
	if !composition {
		return &Compiler{c: statelessCompiler()}
	}
	c, err := plugincel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		// Extending the base environment with "variables" cannot fail for a well-formed base;
		// should it, the policy's variables are refused below and the rest still compiles.
		return &Compiler{c: statelessCompiler()}
	}
	return &Compiler{c: c, composited: c}
}

func (c *Compiler) compile(expr plugincel.ExpressionAccessor, decls plugincel.OptionalVariableDeclarations, env environment.Type, fldPath *field.Path) field.ErrorList {
	if r := c.c.CompileCELExpression(expr, decls, env); r.Error != nil {
		return field.ErrorList{celError(fldPath, expr.GetExpression(), r.Error)}
	}
	return nil
}

// celError turns a compiler's error into a field error of the same kind, carrying the
// compiler's message ("compilation failed: ERROR: <input>:1:5: ...").
func celError(fldPath *field.Path, expression string, err *apiservercel.Error) *field.Error {
	switch err.Type {
	case apiservercel.ErrorTypeRequired:
		return field.Required(fldPath, err.Detail)
	case apiservercel.ErrorTypeInvalid:
		return field.Invalid(fldPath, expression, err.Detail)
	case apiservercel.ErrorTypeInternal:
		return field.InternalError(fldPath, err)
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

// ValidateMatchConditions checks up to 64 uniquely named match conditions, each a bool CEL
// expression over the request (and params, for a policy with a paramKind).
func ValidateMatchConditions(conditions []admissionregistrationv1.MatchCondition, hasParams bool, stored StoredExpressions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(conditions) > 64 {
		errs = append(errs, field.TooMany(fldPath, len(conditions), 64))
	}
	names := sets.New[string]()
	for i, mc := range conditions {
		p := fldPath.Index(i)
		if expr := strings.TrimSpace(mc.Expression); expr == "" {
			errs = append(errs, field.Required(p.Child("expression"), ""))
		} else {
			c := &Compiler{c: statelessCompiler()}
			errs = append(errs, c.compile(&matchconditions.MatchCondition{Expression: expr},
				plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
				envFor(stored.MatchConditions, expr), p.Child("expression"))...)
		}
		if mc.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range utilvalidation.IsQualifiedName(mc.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), mc.Name, msg))
			}
			if names.Has(mc.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), mc.Name))
			}
			names.Insert(mc.Name)
		}
	}
	return errs
}

// ValidateVariable checks a policy variable: a CEL identifier as its name and an expression,
// which the compiler stores so that later expressions may use variables.<name>.
func (c *Compiler) ValidateVariable(v *admissionregistrationv1.Variable, hasParams bool, stored StoredExpressions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Name) == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), "name is not specified"))
	} else if !isCELIdentifier(v.Name) {
		errs = append(errs, field.Invalid(fldPath.Child("name"), v.Name, "must be a valid CEL identifier"))
	}
	if strings.TrimSpace(v.Expression) == "" {
		return append(errs, field.Required(fldPath.Child("expression"), "expression is not specified"))
	}
	if c.composited == nil {
		return append(errs, field.InternalError(fldPath, fmt.Errorf("variable composition is not allowed")))
	}
	variable := &validating.Variable{Name: v.Name, Expression: v.Expression}
	// As upstream, a variable counts as stored when a validation had the same expression.
	r := c.composited.CompileAndStoreVariable(variable, plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
		envFor(stored.Validations, v.Expression))
	if r.Error != nil {
		errs = append(errs, celError(fldPath.Child("expression"), v.Expression, r.Error))
	}
	return errs
}

// ValidateValidation checks one of a ValidatingAdmissionPolicy's validations: a bool
// expression, an optional string messageExpression, a one-line message and a known reason.
func (c *Compiler) ValidateValidation(v *admissionregistrationv1.Validation, hasParams bool, stored StoredExpressions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(v.Expression) == "" {
		errs = append(errs, field.Required(fldPath.Child("expression"), "expression is not specified"))
	} else {
		errs = append(errs, c.compile(&validating.ValidationCondition{Expression: v.Expression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true},
			envFor(stored.Validations, v.Expression), fldPath.Child("expression"))...)
	}
	msgExpr := strings.TrimSpace(v.MessageExpression)
	if v.MessageExpression != "" && msgExpr == "" {
		errs = append(errs, field.Invalid(fldPath.Child("messageExpression"), v.MessageExpression, "must be non-empty if specified"))
	} else if msgExpr != "" {
		// The untrimmed expression, so that the compiler's columns point into what was sent.
		// Message expressions cannot call the authorizer.
		errs = append(errs, c.compile(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: false},
			envFor(stored.Messages, v.MessageExpression), fldPath.Child("messageExpression"))...)
	}
	msg := strings.TrimSpace(v.Message)
	if v.Message != "" && msg == "" {
		errs = append(errs, field.Invalid(fldPath.Child("message"), v.Message, "must be non-empty if specified"))
	} else if newlines.MatchString(msg) {
		errs = append(errs, field.Invalid(fldPath.Child("message"), v.Message, "must not contain line breaks"))
	}
	if v.Reason != nil && !slices.Contains(validationReasons, string(*v.Reason)) {
		errs = append(errs, field.NotSupported(fldPath.Child("reason"), *v.Reason, validationReasons))
	}
	return errs
}

// maxValueExpressionLength bounds an audit annotation's expression below the 10 KiB bound of
// the value, since concatenations tend to produce longer values than their expressions.
const maxValueExpressionLength = 5 * 1024

// ValidateAuditAnnotation checks an audit annotation: "<policy name>/<key>" must be a
// qualified name, and its value expression a string (or null) CEL expression.
func (c *Compiler) ValidateAuditAnnotation(policyName string, a *admissionregistrationv1.AuditAnnotation, hasParams bool, stored StoredExpressions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if policyName != "" {
		for _, msg := range utilvalidation.IsQualifiedName(policyName + "/" + a.Key) {
			errs = append(errs, field.Invalid(fldPath.Child("key"), policyName+"/"+a.Key, msg))
		}
	} else {
		errs = append(errs, field.Invalid(fldPath.Child("key"), a.Key, "requires metadata.name be non-empty"))
	}
	p := fldPath.Child("valueExpression")
	switch expr := strings.TrimSpace(a.ValueExpression); {
	case expr == "":
		errs = append(errs, field.Required(p, "valueExpression is not specified"))
	case len(expr) > maxValueExpressionLength:
		errs = append(errs, field.Required(p, fmt.Sprintf("must not exceed %d bytes in length", maxValueExpressionLength)))
	default:
		r := c.c.CompileCELExpression(&validating.AuditAnnotationCondition{ValueExpression: expr},
			plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}, envFor(stored.AuditAnnotations, a.ValueExpression))
		if r.Error != nil {
			errs = append(errs, celError(p, a.ValueExpression, r.Error))
		}
	}
	return errs
}

// ValidateMutation checks one of a MutatingAdmissionPolicy's mutations: a patch type and the
// one matching expression, which builds an apply configuration or a JSON patch.
func (c *Compiler) ValidateMutation(m *admissionregistrationv1.Mutation, hasParams bool, stored StoredExpressions, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	decls := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true, HasPatchTypes: true}
	compile := func(expression string, accessor func(string) plugincel.ExpressionAccessor, p *field.Path) field.ErrorList {
		expr := strings.TrimSpace(expression)
		if expr == "" {
			return field.ErrorList{field.Required(p.Child("expression"), "")}
		}
		// As upstream, both kinds of patch count as stored when an apply configuration had
		// the same expression.
		return c.compile(accessor(expr), decls, envFor(stored.Mutations, expression), p.Child("expression"))
	}
	switch m.PatchType {
	case "":
		errs = append(errs, field.Required(fldPath.Child("patchType"), ""))
	case admissionregistrationv1.PatchTypeJSONPatch:
		if m.JSONPatch == nil {
			errs = append(errs, field.Required(fldPath.Child("jsonPatch"), "must be specified when patchType is JSONPatch"))
		} else {
			errs = append(errs, compile(m.JSONPatch.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.JSONPatchCondition{Expression: e}
			}, fldPath.Child("jsonPatch"))...)
		}
		if m.ApplyConfiguration != nil {
			errs = append(errs, field.Invalid(fldPath.Child("applyConfiguration"), "{applyConfiguration}", "must not be specified when patchType is JSONPatch"))
		}
	case admissionregistrationv1.PatchTypeApplyConfiguration:
		if m.ApplyConfiguration == nil {
			errs = append(errs, field.Required(fldPath.Child("applyConfiguration"), "must be specified when patchType is ApplyConfiguration"))
		} else {
			errs = append(errs, compile(m.ApplyConfiguration.Expression, func(e string) plugincel.ExpressionAccessor {
				return &patch.ApplyConfigurationCondition{Expression: e}
			}, fldPath.Child("applyConfiguration"))...)
		}
		if m.JSONPatch != nil {
			errs = append(errs, field.Invalid(fldPath.Child("jsonPatch"), "{jsonPatch}", "must not be specified when patchType is ApplyConfiguration"))
		}
	default:
		errs = append(errs, field.NotSupported(fldPath.Child("patchType"), m.PatchType, patchTypes))
	}
	return errs
}

// newlines are the line breaks of CEL's grammar.
var newlines = regexp.MustCompile(`[\n\r]+`)

var (
	celIdentifier = regexp.MustCompile(`^[_a-zA-Z][_a-zA-Z0-9]*$`)
	celReserved   = sets.New("true", "false", "null", "in", "as", "break", "const", "continue", "else",
		"for", "function", "if", "import", "let", "loop", "package", "namespace", "return", "var", "void", "while")
)

func isCELIdentifier(name string) bool {
	return celIdentifier.MatchString(name) && !celReserved.Has(name)
}
