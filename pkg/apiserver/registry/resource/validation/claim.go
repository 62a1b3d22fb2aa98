package validation

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// This file validates what a claim asks for (its spec, also a template's) and what the
// scheduler and drivers write back (its status).

// ValidateClaimSpec validates a claim's spec. stored says it was stored before, so its
// CEL expressions compiled then and are not compiled again.
func ValidateClaimSpec(spec *resourcev1.ResourceClaimSpec, fldPath *field.Path, stored bool) field.ErrorList {
	return validateDeviceClaim(&spec.Devices, fldPath.Child("devices"), stored)
}

func validateDeviceClaim(claim *resourcev1.DeviceClaim, fldPath *field.Path, stored bool) field.ErrorList {
	names := requestNamesOf(claim)
	errs := set(claim.Requests, resourcev1.DeviceRequestsMaxSize, true, true, fldPath.Child("requests"),
		func(r resourcev1.DeviceRequest, p *field.Path) field.ErrorList {
			return validateDeviceRequest(r, p, stored)
		},
		func(r resourcev1.DeviceRequest) string { return r.Name })
	errs = append(errs, list(claim.Constraints, resourcev1.DeviceConstraintsMaxSize, true, fldPath.Child("constraints"),
		func(c resourcev1.DeviceConstraint, p *field.Path) field.ErrorList {
			return validateConstraint(c, p, names)
		})...)
	errs = append(errs, list(claim.Config, resourcev1.DeviceConfigMaxSize, true, fldPath.Child("config"),
		func(c resourcev1.DeviceClaimConfiguration, p *field.Path) field.ErrorList {
			errs := validateRequestRefs(c.Requests, p.Child("requests"), names)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p, stored)...)
		})...)
	return errs
}

// requestNames maps each request of a claim to its subrequests' names (nil for a request
// of exactly one kind of device), for the references of constraints, configs and results.
type requestNames map[string]sets.Set[string]

func requestNamesOf(claim *resourcev1.DeviceClaim) requestNames {
	names := requestNames{}
	for _, r := range claim.Requests {
		var subs sets.Set[string]
		if len(r.FirstAvailable) > 0 {
			subs = sets.New[string]()
			for _, s := range r.FirstAvailable {
				subs.Insert(s.Name)
			}
		}
		names[r.Name] = subs
	}
	return names
}

// has: "req" names a request, "req/sub" one of its subrequests.
func (n requestNames) has(ref string) bool {
	req, sub, isSub := strings.Cut(ref, "/")
	subs, ok := n[req]
	if !ok || strings.Contains(sub, "/") {
		return false
	}
	return !isSub || subs.Has(sub)
}

const requestRefMessage = "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"

func validateRequestRefs(refs []string, fldPath *field.Path, names requestNames) field.ErrorList {
	return set(refs, resourcev1.DeviceRequestsMaxSize, true, true, fldPath,
		func(ref string, p *field.Path) field.ErrorList { return validateRequestRef(ref, p, names) }, stringKey)
}

func validateRequestRef(ref string, fldPath *field.Path, names requestNames) field.ErrorList {
	segments := strings.Split(ref, "/")
	if len(segments) > 2 {
		return field.ErrorList{field.Invalid(fldPath, ref, requestRefMessage)}
	}
	var errs field.ErrorList
	for _, s := range segments {
		errs = append(errs, validateRequestName(s, fldPath)...)
	}
	if !names.has(ref) {
		errs = append(errs, field.Invalid(fldPath, ref, requestRefMessage))
	}
	return errs
}

func validateDeviceRequest(r resourcev1.DeviceRequest, fldPath *field.Path, stored bool) field.ErrorList {
	errs := validateRequestName(r.Name, fldPath.Child("name"))
	switch {
	case r.Exactly == nil && len(r.FirstAvailable) == 0:
		errs = append(errs, field.Required(fldPath, "exactly one of `exactly` or `firstAvailable` is required"))
	case r.Exactly != nil && len(r.FirstAvailable) > 0:
		errs = append(errs, field.Invalid(fldPath, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
	case r.Exactly != nil:
		e, p := r.Exactly, fldPath.Child("exactly")
		errs = append(errs, validateDeviceClassRef(e.DeviceClassName, p.Child("deviceClassName"))...)
		errs = append(errs, validateSelectors(e.Selectors, p.Child("selectors"), stored)...)
		errs = append(errs, validateAllocationMode(e.AllocationMode, e.Count, p)...)
		errs = append(errs, validateTolerations(e.Tolerations, p.Child("tolerations"))...)
	default:
		errs = append(errs, set(r.FirstAvailable, resourcev1.FirstAvailableDeviceRequestMaxSize, true, true, fldPath.Child("firstAvailable"),
			func(s resourcev1.DeviceSubRequest, p *field.Path) field.ErrorList {
				errs := validateRequestName(s.Name, p.Child("name"))
				errs = append(errs, validateDeviceClassRef(s.DeviceClassName, p.Child("deviceClassName")).MarkCoveredByDeclarative()...)
				errs = append(errs, validateSelectors(s.Selectors, p.Child("selectors"), stored)...)
				errs = append(errs, validateAllocationMode(s.AllocationMode, s.Count, p)...)
				return append(errs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
			},
			func(s resourcev1.DeviceSubRequest) string { return s.Name })...)
	}
	return errs
}

func validateDeviceClassRef(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return dnsSubdomain(name, fldPath)
}

// validateAllocationMode: ExactCount wants a positive count (defaulted to 1), All none.
func validateAllocationMode(mode resourcev1.DeviceAllocationMode, count int64, fldPath *field.Path) field.ErrorList {
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			return field.ErrorList{field.Invalid(fldPath.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode))}
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			return field.ErrorList{field.Invalid(fldPath.Child("count"), count, "must be greater than zero")}
		}
	default:
		return field.ErrorList{field.NotSupported(fldPath.Child("allocationMode"), mode,
			[]resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}).MarkCoveredByDeclarative()}
	}
	return nil
}

func validateSelectors(selectors []resourcev1.DeviceSelector, fldPath *field.Path, stored bool) field.ErrorList {
	return list(selectors, resourcev1.DeviceSelectorsMaxSize, true, fldPath,
		func(s resourcev1.DeviceSelector, p *field.Path) field.ErrorList {
			if s.CEL == nil {
				return field.ErrorList{field.Required(p.Child("cel"), "")}
			}
			if stored {
				return nil
			}
			return ValidateCELSelector(s.CEL.Expression, p.Child("cel", "expression"))
		})
}

// ValidateCELSelector compiles a device selector's expression in the environment of new
// expressions, as the scheduler will run it, and bounds its length and estimated cost.
func ValidateCELSelector(expression string, fldPath *field.Path) field.ErrorList {
	if len(expression) > resourcev1.CELSelectorExpressionMaxLength {
		// Too long to be worth compiling.
		return field.ErrorList{field.TooLong(fldPath, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	env := environment.NewExpressions
	result := dracel.GetCompiler(dracel.Features{
		EnableConsumableCapacity: consumableCapacity,
		EnableListTypeAttributes: listTypeAttributes,
	}).CompileCELExpression(expression, dracel.Options{EnvType: &env})
	if result.Error != nil {
		return field.ErrorList{celError(fldPath, expression, result.Error)}
	}
	if result.MaxCost > resourcev1.CELSelectorExpressionMaxCost {
		return field.ErrorList{field.Forbidden(fldPath, "too complex, exceeds cost limit")}
	}
	return nil
}

func celError(fldPath *field.Path, expression string, err error) *field.Error {
	var celErr *apiservercel.Error
	if errors.As(err, &celErr) {
		switch celErr.Type {
		case apiservercel.ErrorTypeRequired:
			return field.Required(fldPath, celErr.Detail)
		case apiservercel.ErrorTypeInvalid:
			return field.Invalid(fldPath, expression, celErr.Detail)
		case apiservercel.ErrorTypeInternal:
			return field.InternalError(fldPath, celErr)
		}
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

func validateConstraint(c resourcev1.DeviceConstraint, fldPath *field.Path, names requestNames) field.ErrorList {
	errs := validateRequestRefs(c.Requests, fldPath.Child("requests"), names)
	switch {
	case c.MatchAttribute != nil:
		errs = append(errs, validateFullyQualifiedName(*c.MatchAttribute, fldPath.Child("matchAttribute")).MarkCoveredByDeclarative()...)
	case c.DistinctAttribute != nil:
		errs = append(errs, validateFullyQualifiedName(*c.DistinctAttribute, fldPath.Child("distinctAttribute")).MarkCoveredByDeclarative()...)
	case consumableCapacity:
		// Upstream's words, though the fault is that none is set.
		errs = append(errs, field.Required(fldPath, `exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple fields are set`))
	default:
		errs = append(errs, field.Required(fldPath.Child("matchAttribute"), ""))
	}
	return errs
}

func validateDeviceConfiguration(c resourcev1.DeviceConfiguration, fldPath *field.Path, stored bool) field.ErrorList {
	if c.Opaque == nil {
		return field.ErrorList{field.Required(fldPath.Child("opaque"), "")}
	}
	p := fldPath.Child("opaque")
	errs := ValidateDriverName(c.Opaque.Driver, p.Child("driver"), true)
	return append(errs, validateRawObject(c.Opaque.Parameters, p.Child("parameters"), stored, resourcev1.OpaqueParametersMaxLength)...)
}

// validateRawObject: opaque parameters and device data must be one JSON object. The size
// limit binds new values only: it came after objects were stored with larger ones.
func validateRawObject(raw runtime.RawExtension, fldPath *field.Path, stored bool, maxLen int) field.ErrorList {
	var v any
	switch {
	case len(raw.Raw) == 0:
		return field.ErrorList{field.Required(fldPath, "")}
	case !stored && len(raw.Raw) > maxLen:
		return field.ErrorList{field.TooLong(fldPath, "", maxLen)}
	}
	if err := json.Unmarshal(raw.Raw, &v); err != nil {
		return field.ErrorList{field.Invalid(fldPath, "<value omitted>", fmt.Sprintf("error parsing data as JSON: %v", err.Error()))}
	}
	if v == nil {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	if _, ok := v.(map[string]any); !ok {
		return field.ErrorList{field.Invalid(fldPath, "<value omitted>", "must be a valid JSON object")}
	}
	return nil
}

var (
	taintEffects            = sets.New(resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone)
	tolerationOperators     = []resourcev1.DeviceTolerationOperator{resourcev1.DeviceTolerationOpEqual, resourcev1.DeviceTolerationOpExists}
	allocationConfigSources = []resourcev1.AllocationConfigSource{resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass}
)

func validateTolerations(tolerations []resourcev1.DeviceToleration, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fldPath.Index(i)
		if t.Key != "" {
			errs = append(errs, metavalidation.ValidateLabelName(t.Key, p.Child("key")).MarkCoveredByDeclarative()...)
		}
		switch t.Operator {
		case resourcev1.DeviceTolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be empty for operator `Exists`"))
			}
		case resourcev1.DeviceTolerationOpEqual:
			errs = append(errs, validateLabelValue(t.Value, p.Child("value"))...)
		case "":
			errs = append(errs, field.Required(p.Child("operator"), "").MarkCoveredByDeclarative())
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, tolerationOperators).MarkCoveredByDeclarative())
		}
		if t.Effect != "" && !taintEffects.Has(t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, sets.List(taintEffects)).MarkCoveredByDeclarative())
		}
	}
	return errs
}

// ValidateTaint validates a device's taint. old is the taint before an update, whose
// effect, if unchanged, is not checked again (effects may be retired).
func ValidateTaint(t resourcev1.DeviceTaint, old *resourcev1.DeviceTaint, fldPath *field.Path) field.ErrorList {
	errs := metavalidation.ValidateLabelName(t.Key, fldPath.Child("key"))
	if t.Value != "" {
		errs = append(errs, validateLabelValue(t.Value, fldPath.Child("value"))...)
	}
	if old == nil || old.Effect != t.Effect {
		switch {
		case t.Effect == "":
			errs = append(errs, field.Required(fldPath.Child("effect"), "").MarkCoveredByDeclarative())
		case !taintEffects.Has(t.Effect):
			errs = append(errs, field.NotSupported(fldPath.Child("effect"), t.Effect, sets.List(taintEffects)).MarkCoveredByDeclarative())
		}
	}
	return errs
}

// ValidateClaimStatusUpdate validates a status written through resourceclaims/status.
// The allocation, once set, is fixed; consumers may only be reserved for an allocated
// claim, and none added once the claim is being deleted.
func ValidateClaimStatusUpdate(claim, old *resourcev1.ResourceClaim) field.ErrorList {
	status, oldStatus := &claim.Status, &old.Status
	fldPath := field.NewPath("status")
	errs := apivalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, set(status.ReservedFor, resourcev1.ResourceClaimReservedForMaxSize, true, true, fldPath.Child("reservedFor"),
		validateConsumerRef, func(r resourcev1.ResourceClaimConsumerReference) types.UID { return r.UID })...)

	var allocated sets.Set[string]
	if status.Allocation != nil {
		allocated = sets.New[string]()
		for _, r := range status.Allocation.Devices.Results {
			allocated.Insert(deviceID(r.Driver, r.Pool, r.Device, (*string)(r.ShareID)))
		}
	}
	errs = append(errs, set(status.Devices, -1, false, true, fldPath.Child("devices"),
		func(d resourcev1.AllocatedDeviceStatus, p *field.Path) field.ErrorList {
			return validateDeviceStatus(d, p, allocated)
		},
		func(d resourcev1.AllocatedDeviceStatus) string {
			return deviceID(d.Driver, d.Pool, d.Device, d.ShareID)
		})...)

	if len(status.ReservedFor) > 0 {
		if status.Allocation == nil {
			errs = append(errs, field.Forbidden(fldPath.Child("reservedFor"), "may not be specified when `allocated` is not set"))
		} else if claim.DeletionTimestamp != nil {
			before := sets.New(oldStatus.ReservedFor...)
			for _, r := range status.ReservedFor {
				if !before.Has(r) {
					errs = append(errs, field.Forbidden(fldPath.Child("reservedFor"), "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set"))
					break
				}
			}
		}
	}

	switch {
	case oldStatus.Allocation != nil && status.Allocation != nil:
		// A stored result is not validated again: the rules for new ones are stricter.
		errs = append(errs, apivalidation.ValidateImmutableField(status.Allocation, oldStatus.Allocation, fldPath.Child("allocation")).MarkCoveredByDeclarative()...)
	case status.Allocation != nil:
		errs = append(errs, validateAllocation(status.Allocation, fldPath.Child("allocation"), requestNamesOf(&claim.Spec.Devices))...)
	}
	return errs
}

// deviceID names one allocated device (or one share of it) as "driver/pool/device[/share]".
func deviceID(driver, pool, device string, shareID *string) string {
	id := driver + "/" + pool + "/" + device
	if shareID != nil {
		id += "/" + *shareID
	}
	return id
}

func validateConsumerRef(r resourcev1.ResourceClaimConsumerReference, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if r.Resource == "" {
		errs = append(errs, field.Required(fldPath.Child("resource"), ""))
	}
	if r.Name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if r.UID == "" {
		errs = append(errs, field.Required(fldPath.Child("uid"), ""))
	}
	return errs
}

func validateAllocation(a *resourcev1.AllocationResult, fldPath *field.Path, names requestNames) field.ErrorList {
	p := fldPath.Child("devices")
	errs := list(a.Devices.Results, resourcev1.AllocationResultsMaxSize, true, p.Child("results"),
		func(r resourcev1.DeviceRequestAllocationResult, p *field.Path) field.ErrorList {
			return validateResult(r, p, names)
		})
	// A claim's configs and its classes' both land here.
	errs = append(errs, list(a.Devices.Config, 2*resourcev1.DeviceConfigMaxSize, true, p.Child("config"),
		func(c resourcev1.DeviceAllocationConfiguration, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			switch c.Source {
			case "":
				errs = append(errs, field.Required(p.Child("source"), "").MarkCoveredByDeclarative())
			case resourcev1.AllocationConfigSourceClaim, resourcev1.AllocationConfigSourceClass:
			default:
				errs = append(errs, field.NotSupported(p.Child("source"), c.Source, allocationConfigSources).MarkCoveredByDeclarative())
			}
			errs = append(errs, validateRequestRefs(c.Requests, p.Child("requests"), names)...)
			return append(errs, validateDeviceConfiguration(c.DeviceConfiguration, p, false)...)
		})...)
	if a.NodeSelector != nil {
		errs = append(errs, pod.ValidateNodeSelector(a.NodeSelector, fldPath.Child("nodeSelector"))...)
	}
	return errs
}

func validateResult(r resourcev1.DeviceRequestAllocationResult, fldPath *field.Path, names requestNames) field.ErrorList {
	errs := validateRequestRef(r.Request, fldPath.Child("request"), names)
	errs = append(errs, ValidateDriverName(r.Driver, fldPath.Child("driver"), true)...)
	errs = append(errs, validatePoolName(r.Pool, fldPath.Child("pool")).MarkCoveredByDeclarative()...)
	errs = append(errs, validateDeviceName(r.Device, fldPath.Child("device"))...)
	errs = append(errs, validateBindingConditions(r.BindingConditions, r.BindingFailureConditions, fldPath)...)
	errs = append(errs, validateTolerations(r.Tolerations, fldPath.Child("tolerations"))...)
	if r.ShareID != nil {
		errs = append(errs, validateUID(string(*r.ShareID), fldPath.Child("shareID")).MarkCoveredByDeclarative()...)
	}
	return errs
}

func validateUID(uid string, fldPath *field.Path) field.ErrorList {
	if err := uuid.Validate(uid); err != nil {
		return field.ErrorList{field.Invalid(fldPath, uid, fmt.Sprintf("error validating uid: %v", err))}
	}
	if len(uid) != 36 || uid != strings.ToLower(uid) {
		return field.ErrorList{field.Invalid(fldPath, uid, "uid must be in RFC 4122 normalized form, `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters")}
	}
	return nil
}

// validateBindingConditions: conditions a device must reach before a pod binds (and those
// that fail it) come in pairs, at most four each, never in both lists.
func validateBindingConditions(conditions, failures []string, fldPath *field.Path) field.ErrorList {
	cp, fp := fldPath.Child("bindingConditions"), fldPath.Child("bindingFailureConditions")
	errs := list(conditions, resourcev1.BindingConditionsMaxSize, true, cp, metavalidation.ValidateLabelName)
	errs = append(errs, list(failures, resourcev1.BindingFailureConditionsMaxSize, true, fp, metavalidation.ValidateLabelName)...)
	seen := sets.New[string]()
	for i, c := range conditions {
		if seen.Has(c) {
			errs = append(errs, field.Duplicate(cp.Index(i), c))
		}
		seen.Insert(c)
	}
	seenFailures := sets.New[string]()
	for i, c := range failures {
		if seenFailures.Has(c) {
			errs = append(errs, field.Duplicate(fp.Index(i), c))
		}
		seenFailures.Insert(c)
		if seen.Has(c) {
			errs = append(errs, field.Invalid(fp.Index(i), c, "bindingFailureConditions must not overlap with bindingConditions"))
		}
	}
	if len(conditions) == 0 && len(failures) > 0 {
		errs = append(errs, field.Invalid(cp, conditions, "bindingConditions are required to use bindingFailureConditions"))
	}
	if len(failures) == 0 && len(conditions) > 0 {
		errs = append(errs, field.Invalid(fp, failures, "bindingFailureConditions are required to use bindingConditions"))
	}
	return errs
}

func validateDeviceStatus(d resourcev1.AllocatedDeviceStatus, fldPath *field.Path, allocated sets.Set[string]) field.ErrorList {
	errs := ValidateDriverName(d.Driver, fldPath.Child("driver"), false)
	errs = append(errs, validatePoolName(d.Pool, fldPath.Child("pool"))...)
	errs = append(errs, validateDeviceName(d.Device, fldPath.Child("device"))...)
	if d.ShareID != nil {
		errs = append(errs, validateUID(*d.ShareID, fldPath.Child("shareID")).MarkCoveredByDeclarative()...)
	}
	if id := deviceID(d.Driver, d.Pool, d.Device, d.ShareID); !allocated.Has(id) {
		errs = append(errs, field.Invalid(fldPath, id, "must be an allocated device in the claim"))
	}
	if len(d.Conditions) > resourcev1.AllocatedDeviceStatusMaxConditions {
		errs = append(errs, field.TooMany(fldPath.Child("conditions"), len(d.Conditions), resourcev1.AllocatedDeviceStatusMaxConditions))
	}
	errs = append(errs, metavalidation.ValidateConditions(d.Conditions, fldPath.Child("conditions"))...)
	if d.Data != nil && len(d.Data.Raw) > 0 {
		errs = append(errs, validateRawObject(*d.Data, fldPath.Child("data"), false, resourcev1.AllocatedDeviceStatusDataMaxLength)...)
	}
	if n := d.NetworkData; n != nil {
		p := fldPath.Child("networkData")
		if len(n.InterfaceName) > resourcev1.NetworkDeviceDataInterfaceNameMaxLength {
			errs = append(errs, field.TooLong(p.Child("interfaceName"), "", resourcev1.NetworkDeviceDataInterfaceNameMaxLength).MarkCoveredByDeclarative())
		}
		if len(n.HardwareAddress) > resourcev1.NetworkDeviceDataHardwareAddressMaxLength {
			errs = append(errs, field.TooLong(p.Child("hardwareAddress"), "", resourcev1.NetworkDeviceDataHardwareAddressMaxLength).MarkCoveredByDeclarative())
		}
		errs = append(errs, set(n.IPs, resourcev1.NetworkDeviceDataMaxIPs, true, true, p.Child("ips"),
			func(ip string, p *field.Path) field.ErrorList { return validation.IsValidInterfaceAddress(p, ip) }, stringKey)...)
	}
	return errs
}
