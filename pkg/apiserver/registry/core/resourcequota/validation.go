package resourcequota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apis/core/resourcename"
)

// ValidateResourceQuota validates a new quota in upstream's words: its metadata (a DNS
// subdomain name), its spec and its status.
func ValidateResourceQuota(q *corev1.ResourceQuota) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&q.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, ValidateSpec(&q.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateStatus(&q.Status, field.NewPath("status"))...)
	return errs
}

// ValidateResourceQuotaUpdate validates a spec update: the spec as on create, and scopes
// that stay as they were (the same set, in any order).
func ValidateResourceQuotaUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidateSpec(&q.Spec, field.NewPath("spec"))...)
	scopes := func(list []corev1.ResourceQuotaScope) sets.Set[corev1.ResourceQuotaScope] { return sets.New(list...) }
	if !scopes(q.Spec.Scopes).Equal(scopes(old.Spec.Scopes)) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "scopes"), q.Spec.Scopes, apivalidation.FieldImmutableErrorMsg))
	}
	return errs
}

// ValidateResourceQuotaStatusUpdate validates a status update: the hard and used amounts.
func ValidateResourceQuotaStatusUpdate(q, old *corev1.ResourceQuota) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&q.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if q.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return append(errs, validateStatus(&q.Status, field.NewPath("status"))...)
}

// ValidateSpec validates the hard limits and the scopes they apply to, given either as
// scopes or as a scope selector.
func ValidateSpec(spec *corev1.ResourceQuotaSpec, fldPath *field.Path) field.ErrorList {
	errs := validateAmounts(spec.Hard, fldPath.Child("hard"))
	errs = append(errs, validateScopes(spec, fldPath)...)
	if spec.ScopeSelector != nil {
		errs = append(errs, validateScopeSelector(spec, fldPath.Child("scopeSelector"))...)
	}
	return errs
}

func validateStatus(status *corev1.ResourceQuotaStatus, fldPath *field.Path) field.ErrorList {
	errs := validateAmounts(status.Hard, fldPath.Child("hard"))
	return append(errs, validateAmounts(status.Used, fldPath.Child("used"))...)
}

// validateAmounts checks each name and amount of list: a name quota knows, an amount not
// negative, and whole for what is counted.
func validateAmounts(list corev1.ResourceList, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sets.List(sets.KeySet(list)) {
		p := fldPath.Key(string(name))
		errs = append(errs, ValidateResourceName(name, p)...)
		errs = append(errs, validateQuantity(name, list[name], p)...)
	}
	return errs
}

// ValidateResourceName checks a name a quota may limit: a qualified name, and, without a
// domain, a standard resource that quota tracks.
func ValidateResourceName(name corev1.ResourceName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if strings.Contains(string(name), "/") {
		return errs
	}
	if len(errs) == 0 && !standardResources.Has(name) && !resourcename.IsHugePagesQuota(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource type or fully qualified"))
	}
	if !quotaResources.Has(name) && !resourcename.IsHugePagesQuota(name) {
		errs = append(errs, field.Invalid(fldPath, name, "must be a standard resource for quota"))
	}
	return errs
}

func validateQuantity(name corev1.ResourceName, q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Sign() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), apivalidation.IsNegativeErrorMsg))
	}
	if (integerResources.Has(name) || resourcename.IsExtended(name)) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fldPath, q, "must be an integer"))
	}
	return errs
}

// conflicting are the scope pairs no quota may hold both of.
var conflicting = [][2]corev1.ResourceQuotaScope{
	{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort},
	{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating},
}

// conflicts counts the conflicting pairs among scopes: each is reported once.
func conflicts(scopes sets.Set[corev1.ResourceQuotaScope]) int {
	n := 0
	for _, pair := range conflicting {
		if scopes.HasAll(pair[0], pair[1]) {
			n++
		}
	}
	return n
}

// validateScopes checks spec.scopes: known scopes, each valid for every standard resource
// the quota limits, and no two that exclude each other.
func validateScopes(spec *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	if len(spec.Scopes) == 0 {
		return nil
	}
	var errs field.ErrorList
	fldPath := fld.Child("scopes")
	hard := sets.List(sets.KeySet(spec.Hard))
	for _, scope := range spec.Scopes {
		if !isStandardScope(scope) {
			errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope"))
		}
		for _, name := range hard {
			if isStandardQuotaResource(name) && !scopeValidFor(scope, name) {
				errs = append(errs, field.Invalid(fldPath, spec.Scopes, "unsupported scope applied to resource"))
			}
		}
	}
	for range conflicts(sets.New(spec.Scopes...)) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

// validateScopeSelector checks spec.scopeSelector's expressions as validateScopes does the
// scopes, and each expression's operator and values.
func validateScopeSelector(spec *corev1.ResourceQuotaSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	fldPath := fld.Child("matchExpressions")
	hard := sets.List(sets.KeySet(spec.Hard))
	scopes := sets.New[corev1.ResourceQuotaScope]()
	for _, req := range spec.ScopeSelector.MatchExpressions {
		if !isStandardScope(req.ScopeName) {
			errs = append(errs, field.Invalid(fldPath.Child("scopeName"), req.ScopeName, "unsupported scope"))
		}
		for _, name := range hard {
			if isStandardQuotaResource(name) && !scopeValidFor(req.ScopeName, name) {
				errs = append(errs, field.Invalid(fldPath, spec.ScopeSelector, "unsupported scope applied to resource"))
			}
		}
		switch req.ScopeName {
		case corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort, corev1.ResourceQuotaScopeTerminating,
			corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
			if req.Operator != corev1.ScopeSelectorOpExists {
				errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator,
					"must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
			}
		}
		switch req.Operator {
		case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(fldPath.Child("values"),
					"must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
			}
		case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
			if len(req.Values) != 0 {
				errs = append(errs, field.Invalid(fldPath.Child("values"), req.Values,
					"must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
			}
		default:
			errs = append(errs, field.Invalid(fldPath.Child("operator"), req.Operator, "not a valid selector operator"))
		}
		scopes.Insert(req.ScopeName)
	}
	// Upstream reports the conflict with spec.scopes as the value, at the selector's path.
	for range conflicts(scopes) {
		errs = append(errs, field.Invalid(fldPath, spec.Scopes, "conflicting scopes"))
	}
	return errs
}

var (
	// standardResources are the unprefixed resource names Kubernetes knows.
	standardResources = sets.New[corev1.ResourceName](
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
		corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims, corev1.ResourceStorage,
		corev1.ResourceRequestsStorage, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
	// quotaResources are the unprefixed names quota tracks: the standard ones but storage.
	quotaResources = standardResources.Clone().Delete(corev1.ResourceStorage)
	// integerResources are counted in whole units.
	integerResources = sets.New[corev1.ResourceName](
		corev1.ResourcePods, corev1.ResourceQuotas, corev1.ResourceServices, corev1.ResourceReplicationControllers,
		corev1.ResourceSecrets, corev1.ResourceConfigMaps, corev1.ResourcePersistentVolumeClaims,
		corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers)
	// podCountAndCompute are what the pod scopes may limit; BestEffort pods only by count,
	// since they have no compute resources.
	podCountAndCompute = sets.New[corev1.ResourceName](corev1.ResourcePods,
		corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
		corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory)
	claimCountAndStorage = sets.New[corev1.ResourceName](corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage)
	standardScopes       = sets.New(
		corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating,
		corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeVolumeAttributesClass,
		corev1.ResourceQuotaScopeCrossNamespacePodAffinity)
)

func isStandardScope(s corev1.ResourceQuotaScope) bool { return standardScopes.Has(s) }

func isStandardQuotaResource(name corev1.ResourceName) bool {
	return quotaResources.Has(name) || resourcename.IsHugePagesQuota(name)
}

// scopeValidFor reports whether scope may apply to the resource name: pod scopes to pod
// counts and compute, the VolumeAttributesClass scope to claims; unknown scopes are
// reported on their own.
func scopeValidFor(scope corev1.ResourceQuotaScope, name corev1.ResourceName) bool {
	switch scope {
	case corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating, corev1.ResourceQuotaScopeNotBestEffort,
		corev1.ResourceQuotaScopePriorityClass, corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return podCountAndCompute.Has(name)
	case corev1.ResourceQuotaScopeBestEffort:
		return name == corev1.ResourcePods
	case corev1.ResourceQuotaScopeVolumeAttributesClass:
		return claimCountAndStorage.Has(name)
	}
	return true
}
