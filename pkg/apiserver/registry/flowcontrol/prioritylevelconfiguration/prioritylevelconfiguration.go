// Package prioritylevelconfiguration is the registry of flowcontrol.apiserver.k8s.io/v1
// PriorityLevelConfigurations: their defaults, validation, strategies, table and storage. A
// priority level is one of API Priority and Fairness' shares of the server's concurrency:
// "Exempt" levels are never limited, "Limited" ones get nominalConcurrencyShares of it and
// queue (or reject) what does not fit. FlowSchemas send requests to them.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the default
// and validate steps for /apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations
// and its status subresource.
package prioritylevelconfiguration

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	flowcontrolv1beta3 "k8s.io/api/flowcontrol/v1beta3"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/util/shufflesharding"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// Storage is the priority levels' endpoints.
type Storage struct {
	PriorityLevelConfiguration *registry.Resource
	Status                     *registry.SubresourceREST
}

// NewStorage returns the prioritylevelconfigurations endpoint and its status.
func NewStorage(getter generic.RESTOptionsGetter) (*Storage, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       flowcontrolv1.Resource("prioritylevelconfigurations"),
		Singular:       "prioritylevelconfiguration",
		New:            func() runtime.Object { return &flowcontrolv1.PriorityLevelConfiguration{} },
		NewList:        func() runtime.Object { return &flowcontrolv1.PriorityLevelConfigurationList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &Storage{
		PriorityLevelConfiguration: &registry.Resource{Store: store},
		Status:                     registry.NewSubresourceREST(store, StatusStrategy),
	}, nil
}

// Upstream's defaults (pkg/apis/flowcontrol/v1/defaults.go).
const (
	DefaultNominalConcurrencyShares int32 = 30
	DefaultQueues                   int32 = 64
	DefaultHandSize                 int32 = 8
	DefaultQueueLengthLimit         int32 = 50
)

// SetDefaults fills in a priority level's defaults. In v1 nominalConcurrencyShares is a
// pointer so that an explicit 0 (a level that only borrows) survives: only an absent value
// becomes 30 for a limited level, 0 for the exempt one.
func SetDefaults(pl *flowcontrolv1.PriorityLevelConfiguration) {
	if l := pl.Spec.Limited; l != nil {
		if l.NominalConcurrencyShares == nil {
			l.NominalConcurrencyShares = ptr.To(DefaultNominalConcurrencyShares)
		}
		if l.LendablePercent == nil {
			l.LendablePercent = ptr.To(int32(0))
		}
		if q := l.LimitResponse.Queuing; q != nil {
			if q.HandSize == 0 {
				q.HandSize = DefaultHandSize
			}
			if q.Queues == 0 {
				q.Queues = DefaultQueues
			}
			if q.QueueLengthLimit == 0 {
				q.QueueLengthLimit = DefaultQueueLengthLimit
			}
		}
	}
	if e := pl.Spec.Exempt; e != nil {
		if e.NominalConcurrencyShares == nil {
			e.NominalConcurrencyShares = ptr.To(int32(0))
		}
		if e.LendablePercent == nil {
			e.LendablePercent = ptr.To(int32(0))
		}
	}
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of priority levels.
var Strategy = strategy{registry.Base}

var _ rest.DeclarativeValidationStrategy = Strategy

func (strategy) NamespaceScoped() bool { return false }

// PrepareForCreate starts a level without status (the APF controller writes it) at
// generation 1.
func (strategy) PrepareForCreate(_ context.Context, obj runtime.Object) {
	pl := obj.(*flowcontrolv1.PriorityLevelConfiguration)
	pl.Status = flowcontrolv1.PriorityLevelConfigurationStatus{}
	pl.Generation = 1
}

// PrepareForUpdate keeps the status, which only the status subresource changes, and counts
// spec changes in the generation.
func (strategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pl, o := obj.(*flowcontrolv1.PriorityLevelConfiguration), old.(*flowcontrolv1.PriorityLevelConfiguration)
	if !apiequality.Semantic.DeepEqual(pl.Spec, o.Spec) {
		pl.Generation = o.Generation + 1
	}
	pl.Status = o.Status
}

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return Validate(obj.(*flowcontrolv1.PriorityLevelConfiguration))
}

// ValidateUpdate validates the new object as a new one: upstream has no immutable fields
// here.
func (strategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return Validate(obj.(*flowcontrolv1.PriorityLevelConfiguration))
}

// ValidateDeclaratively is the last validation step, which the generic store runs over all
// the errors of a request: the declared rules of the v1 types, merged as upstream merges
// them (declarative.go).
func (strategy) ValidateDeclaratively(ctx context.Context, obj, old runtime.Object, errs field.ErrorList, _ operation.Type, _ rest.DeclarativeValidationConfig) field.ErrorList {
	var o *flowcontrolv1.PriorityLevelConfiguration
	if old != nil {
		o = old.(*flowcontrolv1.PriorityLevelConfiguration)
	}
	return mergeDeclarative(ctx, errs, obj.(*flowcontrolv1.PriorityLevelConfiguration), o)
}

func (strategy) DeclarativeValidationConfig(context.Context, runtime.Object, runtime.Object) rest.DeclarativeValidationConfig {
	return rest.DeclarativeValidationConfig{}
}

func (strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(flowcontrolv1.SchemeGroupVersion, "status")
}

type statusStrategy struct{ strategy }

// StatusStrategy is the strategy of the status subresource, which the APF controller writes.
var StatusStrategy = statusStrategy{Strategy}

// PrepareForUpdate keeps all but the status (and the managed fields, which record this
// write), as upstream's.
func (statusStrategy) PrepareForUpdate(_ context.Context, obj, old runtime.Object) {
	pl, o := obj.(*flowcontrolv1.PriorityLevelConfiguration), old.(*flowcontrolv1.PriorityLevelConfiguration)
	managed := pl.ManagedFields
	pl.ObjectMeta = o.ObjectMeta
	pl.ManagedFields = managed
	pl.Spec = o.Spec
}

func (statusStrategy) ValidateUpdate(_ context.Context, obj, _ runtime.Object) field.ErrorList {
	return ValidateStatus(&obj.(*flowcontrolv1.PriorityLevelConfiguration).Status, field.NewPath("status"))
}

func (statusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return registry.ResetFields(flowcontrolv1.SchemeGroupVersion, "spec", "metadata")
}

var (
	supportedTypes          = sets.New(string(flowcontrolv1.PriorityLevelEnablementExempt), string(flowcontrolv1.PriorityLevelEnablementLimited))
	supportedLimitResponses = sets.New(string(flowcontrolv1.LimitResponseTypeQueue), string(flowcontrolv1.LimitResponseTypeReject))
)

// maxQueues is upstream's bound on queues (10^7).
const maxQueues int32 = 10 * 1000 * 1000

// mandatory are the levels every server keeps, by name; their spec is fixed.
var mandatory = func() map[string]*flowcontrolv1.PriorityLevelConfiguration {
	m := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, pl := range bootstrap.MandatoryPriorityLevelConfigurations {
		m[pl.Name] = pl
	}
	return m
}()

// Validate validates a (defaulted) priority level, with upstream's field paths and messages.
func Validate(pl *flowcontrolv1.PriorityLevelConfiguration) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&pl.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	// The v1beta3 round-trip annotation only ever lived on that version's objects.
	if _, ok := pl.Annotations[flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations"),
			fmt.Sprintf("annotation '%s' is forbidden", flowcontrolv1beta3.PriorityLevelPreserveZeroConcurrencySharesKey)))
	}
	specPath := field.NewPath("spec")
	errs = append(errs, ValidateSpec(&pl.Spec, pl.Name, specPath)...)
	errs = append(errs, validateMandatory(pl, specPath)...)
	return append(errs, ValidateStatus(&pl.Status, field.NewPath("status"))...)
}

// validateMandatory keeps the spec of "exempt" and "catch-all" as the server made them; of
// "exempt" only the exempt field may change (an admin may give it shares to lend).
func validateMandatory(pl *flowcontrolv1.PriorityLevelConfiguration, specPath *field.Path) field.ErrorList {
	want, ok := mandatory[pl.Name]
	if !ok {
		return nil
	}
	if pl.Name == flowcontrolv1.PriorityLevelConfigurationNameExempt {
		have := pl.Spec.DeepCopy()
		have.Exempt = want.Spec.Exempt
		if !apiequality.Semantic.DeepEqual(&want.Spec, have) {
			return field.ErrorList{field.Invalid(specPath, pl.Spec, fmt.Sprintf("spec of '%s' except the 'spec.exempt' field must equal the fixed value", pl.Name))}
		}
		return nil
	}
	if !apiequality.Semantic.DeepEqual(pl.Spec, want.Spec) {
		return field.ErrorList{field.Invalid(specPath, pl.Spec, fmt.Sprintf("spec of '%s' must equal the fixed value", pl.Name))}
	}
	return nil
}

// ValidateSpec validates a priority level's spec: exempt if and only if named "exempt", and
// the settings of its type. Errors a declared rule of the v1 types covers are marked so, for
// the merge in ValidateDeclaratively.
func ValidateSpec(spec *flowcontrolv1.PriorityLevelConfigurationSpec, name string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (name == flowcontrolv1.PriorityLevelConfigurationNameExempt) != (spec.Type == flowcontrolv1.PriorityLevelEnablementExempt) {
		errs = append(errs, field.Invalid(p.Child("type"), spec.Type, "must be 'Exempt' if and only if `name` is 'exempt'"))
	}
	switch spec.Type {
	case flowcontrolv1.PriorityLevelEnablementExempt:
		if spec.Limited != nil {
			errs = append(errs, field.Forbidden(p.Child("limited"), "must be nil if the type is not Limited").MarkCoveredByDeclarative())
		}
		if spec.Exempt != nil {
			errs = append(errs, validateExempt(spec.Exempt, p.Child("exempt"))...)
		}
	case flowcontrolv1.PriorityLevelEnablementLimited:
		if spec.Exempt != nil {
			errs = append(errs, field.Forbidden(p.Child("exempt"), "must be nil if the type is Limited").MarkCoveredByDeclarative())
		}
		if spec.Limited == nil {
			errs = append(errs, field.Required(p.Child("limited"), "must not be empty when type is Limited").MarkCoveredByDeclarative())
		} else {
			errs = append(errs, validateLimited(spec.Limited, p.Child("limited"))...)
		}
	case "":
		errs = append(errs, field.Required(p.Child("type"), "").MarkCoveredByDeclarative())
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), spec.Type, sets.List(supportedTypes)))
	}
	return errs
}

func validateLimited(l *flowcontrolv1.LimitedPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := l.NominalConcurrencyShares; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *n, "must be a non-negative integer"))
	}
	errs = append(errs, validateLimitResponse(l.LimitResponse, p.Child("limitResponse"))...)
	if lp := l.LendablePercent; lp != nil && (*lp < 0 || *lp > 100) {
		errs = append(errs, field.Invalid(p.Child("lendablePercent"), *lp, "must be between 0 and 100, inclusive"))
	}
	if b := l.BorrowingLimitPercent; b != nil && *b < 0 {
		errs = append(errs, field.Invalid(p.Child("borrowingLimitPercent"), *b, "if specified, must be a non-negative integer"))
	}
	return errs
}

func validateExempt(e *flowcontrolv1.ExemptPriorityLevelConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if n := e.NominalConcurrencyShares; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(p.Child("nominalConcurrencyShares"), *n, "must be a non-negative integer"))
	}
	if lp := e.LendablePercent; lp != nil && (*lp < 0 || *lp > 100) {
		errs = append(errs, field.Invalid(p.Child("lendablePercent"), *lp, "must be between 0 and 100, inclusive"))
	}
	return errs
}

// The texts say "Limited" where they mean "Queue": they are upstream's.
func validateLimitResponse(lr flowcontrolv1.LimitResponse, p *field.Path) field.ErrorList {
	switch lr.Type {
	case flowcontrolv1.LimitResponseTypeReject:
		if lr.Queuing != nil {
			return field.ErrorList{field.Forbidden(p.Child("queuing"), "must be nil if limited.limitResponse.type is not Limited").MarkCoveredByDeclarative()}
		}
	case flowcontrolv1.LimitResponseTypeQueue:
		if lr.Queuing == nil {
			return field.ErrorList{field.Required(p.Child("queuing"), "must not be empty if limited.limitResponse.type is Limited").MarkCoveredByDeclarative()}
		}
		return ValidateQueuing(lr.Queuing, p.Child("queuing"))
	case "":
		return field.ErrorList{field.Required(p.Child("type"), "").MarkCoveredByDeclarative()}
	default:
		return field.ErrorList{field.NotSupported(p.Child("type"), lr.Type, sets.List(supportedLimitResponses))}
	}
	return nil
}

// ValidateQueuing validates the shuffle-sharding parameters: a hand must fit in the deck,
// and dealing it must not need more hash bits than the dealer has.
func ValidateQueuing(q *flowcontrolv1.QueuingConfiguration, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.QueueLengthLimit <= 0 {
		errs = append(errs, field.Invalid(p.Child("queueLengthLimit"), q.QueueLengthLimit, "must be positive"))
	}
	if q.Queues <= 0 {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, "must be positive"))
	} else if q.Queues > maxQueues {
		errs = append(errs, field.Invalid(p.Child("queues"), q.Queues, fmt.Sprintf("must not be greater than %d", maxQueues)))
	}
	switch {
	case q.HandSize <= 0:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, "must be positive"))
	case q.HandSize > q.Queues:
		errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize, fmt.Sprintf("should not be greater than queues (%d)", q.Queues)))
	default:
		if bits := shufflesharding.RequiredEntropyBits(int(q.Queues), int(q.HandSize)); bits > shufflesharding.MaxHashBits {
			errs = append(errs, field.Invalid(p.Child("handSize"), q.HandSize,
				fmt.Sprintf("required entropy bits of deckSize %d and handSize %d should not be greater than %d", q.Queues, q.HandSize, shufflesharding.MaxHashBits)))
		}
	}
	return errs
}

// ValidateStatus validates the conditions: each type at most once, and named.
func ValidateStatus(s *flowcontrolv1.PriorityLevelConfigurationStatus, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[flowcontrolv1.PriorityLevelConfigurationConditionType]()
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

// Fields are the fields priority levels can be selected by: metadata only, as upstream's.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*flowcontrolv1.PriorityLevelConfiguration).ObjectMeta, false)
}

// NewTableConvertor returns the columns of `kubectl get prioritylevelconfigurations`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*flowcontrolv1.PriorityLevelConfiguration] {
	swagger := flowcontrolv1.QueuingConfiguration{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Type", Type: "string", Description: flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc()["type"]},
		{Name: "NominalConcurrencyShares", Type: "string", Description: flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc()["nominalConcurrencyShares"]},
		{Name: "Queues", Type: "string", Description: swagger["queues"]},
		{Name: "HandSize", Type: "string", Description: swagger["handSize"]},
		{Name: "QueueLengthLimit", Type: "string", Description: swagger["queueLengthLimit"]},
		table.AgeColumn(),
	}, func(pl *flowcontrolv1.PriorityLevelConfiguration, now time.Time) metav1.TableRow {
		var shares, queues, handSize, queueLengthLimit any = "<none>", "<none>", "<none>", "<none>"
		if l := pl.Spec.Limited; l != nil {
			// Upstream prints the internal value, where an absent share count is 0.
			shares = ptr.Deref(l.NominalConcurrencyShares, 0)
			if q := l.LimitResponse.Queuing; q != nil {
				queues, handSize, queueLengthLimit = q.Queues, q.HandSize, q.QueueLengthLimit
			}
		}
		return metav1.TableRow{Cells: []any{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLengthLimit, table.Age(pl, now)}}
	})
}
