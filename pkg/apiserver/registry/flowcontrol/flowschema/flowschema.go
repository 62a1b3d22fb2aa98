// Package flowschema is the registry of flowcontrol.apiserver.k8s.io/v1 FlowSchemas: their
// defaults, validation, strategies, table and storage. A FlowSchema matches requests by who
// sends them and what they ask for, sends them to a priority level, and says how to tell
// their flows apart there; the schema that matches with the lowest matchingPrecedence wins.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/flowcontrol.apiserver.k8s.io/v1/flowschemas and its status
// subresource.
package flowschema

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage is the flow schemas' endpoints.
type Storage struct {
	FlowSchema *registry.Resource
	Status     *registry.SubresourceREST
}

// NewStorage returns the flowschemas endpoint and its status.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       flowcontrolv1.Resource("flowschemas"),
		Singular:       "flowschema",
		New:            func() runtime.Object { return &flowcontrolv1.FlowSchema{} },
		NewList:        func() runtime.Object { return &flowcontrolv1.FlowSchemaList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		FlowSchema: &registry.Resource{Store: store},
		Status:     registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// DefaultMatchingPrecedence is upstream's default (pkg/apis/flowcontrol/v1/defaults.go).
const DefaultMatchingPrecedence int32 = 1000

// SetDefaults fills in a flow schema's defaults.
func SetDefaults(fs *flowcontrolv1.FlowSchema) {
	if fs.Spec.MatchingPrecedence == 0 {
		fs.Spec.MatchingPrecedence = DefaultMatchingPrecedence
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of flow schemas.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts a schema without status (the APF controller writes it) at
// generation 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	fs := obj.(*flowcontrolv1.FlowSchema)
	fs.Status = flowcontrolv1.FlowSchemaStatus{}
	fs.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource changes, and counts
// spec changes in the generation.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	fs, o := obj.(*flowcontrolv1.FlowSchema), old.(*flowcontrolv1.FlowSchema)
	if !apiequality.Semantic.DeepEqual(fs.Spec, o.Spec) {
		fs.Generation = o.Generation + 1
	}
	fs.Status = o.Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return Validate(obj.(*flowcontrolv1.FlowSchema))
}

// ValidateUpdate validates the new object as a new one: upstream has no immutable fields
// here.
func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return Validate(obj.(*flowcontrolv1.FlowSchema))
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(flowcontrolv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the strategy of the status subresource, which the APF controller writes
// (the Dangling condition of a schema whose priority level is missing).
var StatusStrategy = statusStrategy{Strategy}

// PrepareForUpdate keeps all but the status (and the managed fields, which record this
// write), as upstream's.
func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	fs, o := obj.(*flowcontrolv1.FlowSchema), old.(*flowcontrolv1.FlowSchema)
	managed := fs.ManagedFields
	fs.ObjectMeta = o.ObjectMeta
	fs.ManagedFields = managed
	fs.Spec = o.Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return ValidateStatus(&obj.(*flowcontrolv1.FlowSchema).Status, field.NewPath("status"))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(flowcontrolv1.SchemeGroupVersion, "spec", "metadata")
}

// maxMatchingPrecedence is upstream's bound on matchingPrecedence.
const maxMatchingPrecedence int32 = 10000

var (
	supportedDistinguisherMethods = sets.New(string(flowcontrolv1.FlowDistinguisherMethodByNamespaceType), string(flowcontrolv1.FlowDistinguisherMethodByUserType))
	supportedVerbs                = sets.New("get", "list", "create", "update", "delete", "deletecollection", "patch", "watch", "proxy")
	supportedSubjectKinds         = sets.New(string(flowcontrolv1.SubjectKindServiceAccount), string(flowcontrolv1.SubjectKindGroup), string(flowcontrolv1.SubjectKindUser))
)

// mandatory are the schemas every server keeps, by name; their spec is fixed.
var mandatory = func() map[string]*flowcontrolv1.FlowSchema {
	m := map[string]*flowcontrolv1.FlowSchema{}
	for _, fs := range bootstrap.MandatoryFlowSchemas {
		m[fs.Name] = fs
	}
	return m
}()

// Validate validates a (defaulted) flow schema, with upstream's field paths and messages.
func Validate(fs *flowcontrolv1.FlowSchema) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&fs.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	specPath := field.NewPath("spec")
	errs = append(errs, ValidateSpec(fs.Name, &fs.Spec, specPath)...)
	if want, ok := mandatory[fs.Name]; ok && !apiequality.Semantic.DeepEqual(fs.Spec, want.Spec) {
		errs = append(errs, field.Invalid(specPath, fs.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", fs.Name)))
	}
	return append(errs, ValidateStatus(&fs.Status, field.NewPath("status"))...)
}

// ValidateSpec validates a flow schema's spec. Precedence 1 is the "exempt" schema's alone,
// so that nothing can be matched before it.
func ValidateSpec(name string, spec *flowcontrolv1.FlowSchemaSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	mp := p.Child("matchingPrecedence")
	if spec.MatchingPrecedence <= 0 {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "must be a positive value"))
	}
	if spec.MatchingPrecedence > maxMatchingPrecedence {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, fmt.Sprintf("must not be greater than %v", maxMatchingPrecedence)))
	}
	if spec.MatchingPrecedence == 1 && name != flowcontrolv1.FlowSchemaNameExempt {
		errs = append(errs, field.Invalid(mp, spec.MatchingPrecedence, "only the schema named 'exempt' may have matchingPrecedence 1"))
	}
	if d := spec.DistinguisherMethod; d != nil && !supportedDistinguisherMethods.Has(string(d.Type)) {
		errs = append(errs, field.NotSupported(p.Child("distinguisherMethod", "type"), d, sets.List(supportedDistinguisherMethods)))
	}
	plName := p.Child("priorityLevelConfiguration", "name")
	if n := spec.PriorityLevelConfiguration.Name; n == "" {
		errs = append(errs, field.Required(plName, "must reference a priority level"))
	} else {
		for _, msg := range apivalidation.NameIsDNSSubdomain(n, false) {
			errs = append(errs, field.Invalid(plName, n, msg))
		}
	}
	for i := range spec.Rules {
		errs = append(errs, validateRule(&spec.Rules[i], p.Child("rules").Index(i))...)
	}
	return errs
}

func validateRule(rule *flowcontrolv1.PolicyRulesWithSubjects, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(rule.Subjects) == 0 {
		errs = append(errs, field.Required(p.Child("subjects"), "subjects must contain at least one value"))
	}
	for i := range rule.Subjects {
		errs = append(errs, ValidateSubject(&rule.Subjects[i], p.Child("subjects").Index(i))...)
	}
	if len(rule.ResourceRules) == 0 && len(rule.NonResourceRules) == 0 {
		errs = append(errs, field.Required(p, "at least one of resourceRules and nonResourceRules has to be non-empty"))
	}
	for i := range rule.ResourceRules {
		errs = append(errs, validateResourceRule(&rule.ResourceRules[i], p.Child("resourceRules").Index(i))...)
	}
	for i := range rule.NonResourceRules {
		errs = append(errs, validateNonResourceRule(&rule.NonResourceRules[i], p.Child("nonResourceRules").Index(i))...)
	}
	return errs
}

// ValidateSubject validates one subject: its kind, the member of that kind, and no other.
func ValidateSubject(s *flowcontrolv1.Subject, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	forbidUser := func() {
		if s.User != nil {
			errs = append(errs, field.Forbidden(p.Child("user"), "user is forbidden when subject kind is not 'User'"))
		}
	}
	forbidGroup := func() {
		if s.Group != nil {
			errs = append(errs, field.Forbidden(p.Child("group"), "group is forbidden when subject kind is not 'Group'"))
		}
	}
	forbidServiceAccount := func() {
		if s.ServiceAccount != nil {
			errs = append(errs, field.Forbidden(p.Child("serviceAccount"), "serviceAccount is forbidden when subject kind is not 'ServiceAccount'"))
		}
	}
	switch s.Kind {
	case flowcontrolv1.SubjectKindServiceAccount:
		errs = append(errs, validateServiceAccountSubject(s.ServiceAccount, p.Child("serviceAccount"))...)
		forbidUser()
		forbidGroup()
	case flowcontrolv1.SubjectKindUser:
		if s.User == nil {
			errs = append(errs, field.Required(p.Child("user"), "user is required when subject kind is 'User'"))
		} else if s.User.Name == "" {
			errs = append(errs, field.Required(p.Child("user", "name"), ""))
		}
		forbidServiceAccount()
		forbidGroup()
	case flowcontrolv1.SubjectKindGroup:
		if s.Group == nil {
			errs = append(errs, field.Required(p.Child("group"), "group is required when subject kind is 'Group'"))
		} else if s.Group.Name == "" {
			errs = append(errs, field.Required(p.Child("group", "name"), ""))
		}
		forbidServiceAccount()
		forbidUser()
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), s.Kind, sets.List(supportedSubjectKinds)))
	}
	return errs
}

func validateServiceAccountSubject(sa *flowcontrolv1.ServiceAccountSubject, p *field.Path) field.ErrorList {
	if sa == nil {
		return field.ErrorList{field.Required(p, "serviceAccount is required when subject kind is 'ServiceAccount'")}
	}
	var errs field.ErrorList
	if sa.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else if sa.Name != flowcontrolv1.NameAll {
		for _, msg := range apivalidation.ValidateServiceAccountName(sa.Name, false) {
			errs = append(errs, field.Invalid(p.Child("name"), sa.Name, msg))
		}
	}
	if sa.Namespace == "" {
		errs = append(errs, field.Required(p.Child("namespace"), "must specify namespace for service account"))
	} else {
		for _, msg := range apivalidation.ValidateNamespaceName(sa.Namespace, false) {
			errs = append(errs, field.Invalid(p.Child("namespace"), sa.Namespace, msg))
		}
	}
	return errs
}

// validateVerbs: "*" alone, or known verbs.
func validateVerbs(verbs []string, p *field.Path) field.ErrorList {
	switch {
	case len(verbs) == 0:
		return field.ErrorList{field.Required(p, "verbs must contain at least one value")}
	case slices.Contains(verbs, flowcontrolv1.VerbAll):
		if len(verbs) > 1 {
			return field.ErrorList{field.Invalid(p, verbs, "if '*' is present, must not specify other verbs")}
		}
	case !supportedVerbs.HasAll(verbs...):
		return field.ErrorList{field.NotSupported(p, verbs, sets.List(supportedVerbs))}
	}
	return nil
}

func validateResourceRule(r *flowcontrolv1.ResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, p.Child("verbs"))
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(p.Child("apiGroups"), "resource rules must supply at least one api group"))
	} else if len(r.APIGroups) > 1 && slices.Contains(r.APIGroups, flowcontrolv1.APIGroupAll) {
		errs = append(errs, field.Invalid(p.Child("apiGroups"), r.APIGroups, "if '*' is present, must not specify other api groups"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(p.Child("resources"), "resource rules must supply at least one resource"))
	} else if len(r.Resources) > 1 && slices.Contains(r.Resources, flowcontrolv1.ResourceAll) {
		errs = append(errs, field.Invalid(p.Child("resources"), r.Resources, "if '*' is present, must not specify other resources"))
	}
	ns := p.Child("namespaces")
	switch {
	case len(r.Namespaces) == 0 && !r.ClusterScope:
		errs = append(errs, field.Required(ns, "resource rules that are not cluster scoped must supply at least one namespace"))
	case slices.Contains(r.Namespaces, flowcontrolv1.NamespaceEvery):
		if len(r.Namespaces) > 1 {
			errs = append(errs, field.Invalid(ns, r.Namespaces, "if '*' is present, must not specify other namespaces"))
		}
	default:
		for i, n := range r.Namespaces {
			for _, msg := range apivalidation.ValidateNamespaceName(n, false) {
				errs = append(errs, field.Invalid(ns.Index(i), n, "each member of this list must be '*' or a DNS-1123 label; "+msg))
			}
		}
	}
	return errs
}

func validateNonResourceRule(r *flowcontrolv1.NonResourcePolicyRule, p *field.Path) field.ErrorList {
	errs := validateVerbs(r.Verbs, p.Child("verbs"))
	urls := p.Child("nonResourceURLs")
	switch {
	case len(r.NonResourceURLs) == 0:
		errs = append(errs, field.Required(urls, "nonResourceURLs must contain at least one value"))
	case slices.Contains(r.NonResourceURLs, flowcontrolv1.NonResourceAll):
		if len(r.NonResourceURLs) > 1 {
			errs = append(errs, field.Invalid(urls, r.NonResourceURLs, "if '*' is present, must not specify other non-resource URLs"))
		}
	default:
		for i, u := range r.NonResourceURLs {
			if err := ValidateNonResourceURLPath(u, urls.Index(i)); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// ValidateNonResourceURLPath validates one non-resource URL of a rule: "/", or a path from
// the root without blanks or empty segments, with at most a trailing "/*" as a wildcard
// (which matches slashes too).
func ValidateNonResourceURLPath(path string, p *field.Path) *field.Error {
	switch {
	case path == "":
		return field.Invalid(p, path, "must not be empty")
	case path == "/":
		return nil
	case !strings.HasPrefix(path, "/"):
		return field.Invalid(p, path, "must start with slash")
	case strings.Contains(path, " "):
		return field.Invalid(p, path, "must not contain white-space")
	case strings.Contains(path, "//"):
		return field.Invalid(p, path, "must not contain double slash")
	}
	if n := strings.Count(path, "*"); n > 1 || (n == 1 && !strings.HasSuffix(path, "/*")) {
		return field.Invalid(p, path, "wildcard can only do suffix matching")
	}
	return nil
}

// ValidateStatus validates the conditions: each type at most once, and named.
func ValidateStatus(s *flowcontrolv1.FlowSchemaStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[flowcontrolv1.FlowSchemaConditionType]()
	for i, c := range s.Conditions {
		cp := p.Child("conditions").Index(i)
		if seen.Has(c.Type) {
			errs = append(errs, field.Duplicate(cp.Child("type"), c.Type))
		}
		seen.Insert(c.Type)
		if c.Type == "" {
			errs = append(errs, field.Required(cp.Child("type"), ""))
		}
	}
	return errs
}

// Fields are the fields flow schemas can be selected by: metadata only, as upstream's.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*flowcontrolv1.FlowSchema).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get flowschemas`. A list is printed in
// the order the server matches schemas: by matchingPrecedence, then name.
func NewTableConvertor() rest.TableConvertor {
	return sortedConvertor{newTableConvertor(clock.RealClock{})}
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*flowcontrolv1.FlowSchema] {
	spec := flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "PriorityLevel", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc()["name"]},
		{Name: "MatchingPrecedence", Type: "string", Description: spec["matchingPrecedence"]},
		{Name: "DistinguisherMethod", Type: "string", Description: spec["distinguisherMethod"]},
		table.AgeColumn(),
		{Name: "MissingPL", Type: "string", Description: "references a broken or non-existent PriorityLevelConfiguration"},
	}, func(fs *flowcontrolv1.FlowSchema, now time.Time) metav1.TableRow {
		method := "<none>"
		if d := fs.Spec.DistinguisherMethod; d != nil {
			method = string(d.Type)
		}
		// "?" until the APF controller has said whether the level exists.
		missing := "?"
		for _, c := range fs.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				missing = string(c.Status)
				break
			}
		}
		return metav1.TableRow{Cells: []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, table.Age(fs, now), missing}}
	})
}

// sortedConvertor prints a list's schemas in matching order, leaving the list itself as it
// was (it may be the watch cache's).
type sortedConvertor struct {
	*table.Convertor[*flowcontrolv1.FlowSchema]
}

func (c sortedConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	if list, ok := obj.(*flowcontrolv1.FlowSchemaList); ok {
		sorted := *list
		sorted.Items = slices.Clone(list.Items)
		slices.SortStableFunc(sorted.Items, func(a, b flowcontrolv1.FlowSchema) int {
			if a.Spec.MatchingPrecedence != b.Spec.MatchingPrecedence {
				return int(a.Spec.MatchingPrecedence) - int(b.Spec.MatchingPrecedence)
			}
			return strings.Compare(a.Name, b.Name)
		})
		obj = &sorted
	}
	return c.Convertor.ConvertToTable(ctx, obj, tableOptions)
}
