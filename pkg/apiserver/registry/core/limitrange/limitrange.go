// Package limitrange is the registry of core/v1 LimitRanges: their validation, strategy,
// table and storage. The LimitRanger admission plugin (pkg/apiserver/admission) applies a
// namespace's LimitRanges to its pods: default requests and limits, then min, max and
// ratio checks.
//
// In the API server's flow (decode → default → validate → admit → store) it owns the
// validate step for /api/v1/namespaces/{ns}/limitranges.
package limitrange

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewREST returns the limitranges endpoint.
func NewREST(getter generic.RESTOptionsGetter) (*registry.Resource, error) {
	store, err := registry.NewStore(getter, registry.StoreConfig{
		Resource:       corev1.Resource("limitranges"),
		Singular:       "limitrange",
		New:            func() runtime.Object { return &corev1.LimitRange{} },
		NewList:        func() runtime.Object { return &corev1.LimitRangeList{} },
		Strategy:       Strategy,
		Fields:         Fields,
		TableConvertor: NewTableConvertor(),
	})
	if err != nil {
		return nil, err
	}
	return &registry.Resource{Store: store, Short: []string{"limits"}}, nil
}

type strategy struct{ registry.Strategy }

// Strategy is the create, update and delete strategy of LimitRanges.
var Strategy = strategy{registry.Base}

func (strategy) NamespaceScoped() bool                                            { return true }
func (strategy) PrepareForCreate(context.Context, runtime.Object)                 {}
func (strategy) PrepareForUpdate(context.Context, runtime.Object, runtime.Object) {}
func (strategy) AllowCreateOnUpdate(context.Context) bool                         { return true }

func (strategy) Validate(_ context.Context, obj runtime.Object) field.ErrorList {
	return ValidateLimitRange(obj.(*corev1.LimitRange))
}

func (strategy) ValidateUpdate(_ context.Context, obj, old runtime.Object) field.ErrorList {
	lr := obj.(*corev1.LimitRange)
	errs := apivalidation.ValidateObjectMetaUpdate(&lr.ObjectMeta, &old.(*corev1.LimitRange).ObjectMeta, field.NewPath("metadata"))
	return append(errs, ValidateLimitRange(lr)...)
}

// Fields are the fields LimitRanges can be selected by: metadata only.
func Fields(obj runtime.Object) fields.Set {
	return generic.ObjectMetaFieldsSet(&obj.(*corev1.LimitRange).ObjectMeta, true)
}

// NewTableConvertor returns the columns of `kubectl get limitranges`.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.LimitRange] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
	}, func(lr *corev1.LimitRange, _ time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}}
	})
}

var (
	limitTypes = sets.New(corev1.LimitTypePod, corev1.LimitTypeContainer, corev1.LimitTypePersistentVolumeClaim)
	// standardResources are the unprefixed names a non-container limit may name.
	standardResources = sets.New[corev1.ResourceName](
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceStorage, corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts,
		corev1.ResourceServicesLoadBalancers)
)

// ValidateLimitRange validates a LimitRange, in upstream's words: known types, once each;
// resource names; no defaults for type Pod; a storage bound for PVCs; and for each resource
// min ≤ defaultRequest ≤ default ≤ max and a ratio of at least 1 within max/min.
func ValidateLimitRange(lr *corev1.LimitRange) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&lr.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	seen := map[corev1.LimitType]bool{}
	limitsPath := field.NewPath("spec", "limits")
	for i := range lr.Spec.Limits {
		idx := limitsPath.Index(i)
		limit := &lr.Spec.Limits[i]
		errs = append(errs, validateType(limit.Type, idx.Child("type"))...)
		if seen[limit.Type] {
			errs = append(errs, field.Duplicate(idx.Child("type"), limit.Type))
		}
		seen[limit.Type] = true

		keys := sets.New[string]()
		collect := func(list corev1.ResourceList, name string) map[string]resource.Quantity {
			out := map[string]resource.Quantity{}
			for k, q := range list {
				errs = append(errs, validateResourceName(limit.Type, k, idx.Child(name).Key(string(k)))...)
				keys.Insert(string(k))
				out[string(k)] = q
			}
			return out
		}
		maxQ, minQ := collect(limit.Max, "max"), collect(limit.Min, "min")
		defaults, defaultRequests := map[string]resource.Quantity{}, map[string]resource.Quantity{}
		if limit.Type == corev1.LimitTypePod {
			if len(limit.Default) > 0 {
				errs = append(errs, field.Forbidden(idx.Child("default"), "may not be specified when `type` is 'Pod'"))
			}
			if len(limit.DefaultRequest) > 0 {
				errs = append(errs, field.Forbidden(idx.Child("defaultRequest"), "may not be specified when `type` is 'Pod'"))
			}
		} else {
			defaults, defaultRequests = collect(limit.Default, "default"), collect(limit.DefaultRequest, "defaultRequest")
		}
		if limit.Type == corev1.LimitTypePersistentVolumeClaim {
			_, hasMin := limit.Min[corev1.ResourceStorage]
			_, hasMax := limit.Max[corev1.ResourceStorage]
			if !hasMin && !hasMax {
				errs = append(errs, field.Required(idx.Child("limits"), "either minimum or maximum storage value is required, but neither was provided"))
			}
		}
		ratios := collect(limit.MaxLimitRequestRatio, "maxLimitRequestRatio")
		for _, k := range sets.List(keys) {
			errs = append(errs, checkOrder(idx, k, minQ, maxQ, defaults, defaultRequests, ratios)...)
		}
	}
	return errs
}

func checkOrder(idx *field.Path, k string, minQ, maxQ, defaults, defaultRequests, ratios map[string]resource.Quantity) field.ErrorList {
	var errs field.ErrorList
	min, hasMin := minQ[k]
	max, hasMax := maxQ[k]
	def, hasDef := defaults[k]
	req, hasReq := defaultRequests[k]
	ratio, hasRatio := ratios[k]
	invalid := func(child string, v resource.Quantity, format string, args ...any) {
		errs = append(errs, field.Invalid(idx.Child(child).Key(k), v, fmt.Sprintf(format, args...)))
	}
	if hasMin && hasMax && min.Cmp(max) > 0 {
		invalid("min", min, "min value %s is greater than max value %s", min.String(), max.String())
	}
	if hasReq && hasMin && min.Cmp(req) > 0 {
		invalid("defaultRequest", req, "min value %s is greater than default request value %s", min.String(), req.String())
	}
	if hasReq && hasMax && req.Cmp(max) > 0 {
		invalid("defaultRequest", req, "default request value %s is greater than max value %s", req.String(), max.String())
	}
	if hasReq && hasDef && req.Cmp(def) > 0 {
		invalid("defaultRequest", req, "default request value %s is greater than default limit value %s", req.String(), def.String())
	}
	if hasDef && hasMin && min.Cmp(def) > 0 {
		invalid("default", min, "min value %s is greater than default value %s", min.String(), def.String())
	}
	if hasDef && hasMax && def.Cmp(max) > 0 {
		invalid("default", max, "default value %s is greater than max value %s", def.String(), max.String())
	}
	if hasRatio && ratio.Cmp(*resource.NewQuantity(1, resource.DecimalSI)) < 0 {
		invalid("maxLimitRequestRatio", ratio, "ratio %s is less than 1", ratio.String())
	}
	if hasRatio && hasMin && hasMax {
		r, lo, hi := float64(ratio.Value()), min.Value(), max.Value()
		if ratio.Value() < resource.MaxMilliValue && lo < resource.MaxMilliValue && hi < resource.MaxMilliValue {
			r, lo, hi = float64(ratio.MilliValue())/1000, min.MilliValue(), max.MilliValue()
		}
		if bound := float64(hi) / float64(lo); r > bound {
			invalid("maxLimitRequestRatio", ratio, "ratio %s is greater than max/min = %f", ratio.String(), bound)
		}
	}
	// Resources that cannot be overcommitted: a default request must be the default limit.
	if !pod.IsOvercommitAllowed(corev1.ResourceName(k)) && hasDef && hasReq && def.Cmp(req) != 0 {
		invalid("defaultRequest", req, "default value %s must equal to defaultRequest value %s in %s", def.String(), req.String(), k)
	}
	return errs
}

func validateType(t corev1.LimitType, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(t)) {
		errs = append(errs, field.Invalid(fldPath, t, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(t), "/") && !limitTypes.Has(t) {
		errs = append(errs, field.Invalid(fldPath, t, "must be a standard limit type or fully qualified"))
	}
	return errs
}

// validateResourceName: Pod and Container limits name what a container may ask for; the
// others (PVCs' storage, custom types) any standard or qualified name.
func validateResourceName(t corev1.LimitType, name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	if t == corev1.LimitTypePod || t == corev1.LimitTypeContainer {
		return pod.ValidateContainerResourceName(name, fldPath)
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if len(errs) == 0 && !strings.Contains(string(name), "/") && !standardResources.Has(name) &&
		!strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(string(name), corev1.ResourceRequestsHugePagesPrefix) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	return errs
}

// SetDefaults fills in a Container limit's defaults as upstream does: the default limit is
// the max, the default request the default limit, else the min.
func SetDefaults(lr *corev1.LimitRange) {
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		if item.DefaultRequest == nil {
			item.DefaultRequest = corev1.ResourceList{}
		}
		for k, v := range item.Max {
			if _, ok := item.Default[k]; !ok {
				item.Default[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Default {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
		for k, v := range item.Min {
			if _, ok := item.DefaultRequest[k]; !ok {
				item.DefaultRequest[k] = v.DeepCopy()
			}
		}
	}
}
