package validation

import (
	"fmt"
	"regexp"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// This file validates what a driver publishes: ResourceSlices, the devices of one pool
// (or a part of it) with their attributes, capacities, counters and taints.

// discreteMaxOptions is the most values a capacity's request policy may list (upstream's
// limit, which k8s.io/api does not export).
const discreteMaxOptions = 10

// attributeKeyLen is the longest attribute or capacity name: domain, slash, identifier.
const attributeKeyLen = resourcev1.DeviceMaxDomainLength + 1 + resourcev1.DeviceMaxIDLength

// ValidateSliceSpec validates a slice's spec; old is the spec before an update, whose
// driver, pool name and node are fixed, and whose unchanged capacities and taints are not
// checked again.
func ValidateSliceSpec(spec, old *resourcev1.ResourceSliceSpec, fldPath *field.Path) field.ErrorList {
	errs := ValidateDriverName(spec.Driver, fldPath.Child("driver"), false)
	pool := fldPath.Child("pool")
	errs = append(errs, validatePoolName(spec.Pool.Name, pool.Child("name"))...)
	if spec.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pool.Child("resourceSliceCount"), spec.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	if spec.Pool.Generation < 0 {
		errs = append(errs, field.Invalid(pool.Child("generation"), spec.Pool.Generation, "must be greater than or equal to zero"))
	}
	if old != nil {
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Pool.Name, old.Pool.Name, pool.Child("name"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.Driver, old.Driver, fldPath.Child("driver"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(spec.NodeName, old.NodeName, fldPath.Child("nodeName"))...)
	}

	// Exactly one way of saying where the devices are.
	var placed []string
	if spec.NodeName != nil {
		if *spec.NodeName == "" {
			errs = append(errs, field.Invalid(fldPath.Child("nodeName"), "", "must be either unset or set to a non-empty string"))
		} else {
			placed = append(placed, "`nodeName`")
			errs = append(errs, validateNodeName(*spec.NodeName, fldPath.Child("nodeName"))...)
		}
	}
	if spec.NodeSelector != nil {
		placed = append(placed, "`nodeSelector`")
		p := fldPath.Child("nodeSelector")
		errs = append(errs, pod.ValidateNodeSelector(spec.NodeSelector, p)...)
		if len(spec.NodeSelector.NodeSelectorTerms) != 1 {
			// One term keeps merging the selectors of devices from several slices simple.
			errs = append(errs, field.Invalid(p.Child("nodeSelectorTerms"), spec.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	errs = append(errs, trueOrUnset(spec.AllNodes, "`allNodes`", fldPath.Child("allNodes"), &placed)...)
	errs = append(errs, trueOrUnset(spec.PerDeviceNodeSelection, "`perDeviceNodeSelection`", fldPath.Child("perDeviceNodeSelection"), &placed)...)
	switch len(placed) {
	case 0:
		errs = append(errs, field.Required(fldPath, "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"))
	case 1:
	default:
		errs = append(errs, field.Invalid(fldPath, fmt.Sprintf("{%s}", strings.Join(placed, ", ")),
			"exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"))
	}

	if spec.SharedCounters != nil && spec.Devices != nil {
		errs = append(errs, field.Invalid(fldPath, "", "only one of `sharedCounters` or `devices` is allowed"))
	}
	maxDevices := resourcev1.ResourceSliceMaxDevices
	if advanced(spec) {
		maxDevices = resourcev1.ResourceSliceMaxDevicesWithAdvancedFeatures
	}
	perDevice := spec.PerDeviceNodeSelection != nil && *spec.PerDeviceNodeSelection
	errs = append(errs, set(spec.Devices, maxDevices, false, false, fldPath.Child("devices"),
		func(d resourcev1.Device, p *field.Path) field.ErrorList {
			return validateDevice(d, oldDevice(old, d.Name), p, perDevice)
		},
		func(d resourcev1.Device) string { return d.Name })...)
	errs = append(errs, validateCounterSets(spec.SharedCounters, fldPath.Child("sharedCounters"))...)
	return errs
}

func validateCounterSets(counterSets []resourcev1.CounterSet, fldPath *field.Path) field.ErrorList {
	return set(counterSets, resourcev1.ResourceSliceMaxCounterSets, true, true, fldPath,
		func(c resourcev1.CounterSet, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if c.Name == "" {
				errs = append(errs, field.Required(p.Child("name"), "").MarkCoveredByDeclarative())
			} else {
				errs = append(errs, validateCounterName(c.Name, p.Child("name")).MarkCoveredByDeclarative()...)
			}
			if len(c.Counters) == 0 {
				errs = append(errs, field.Required(p.Child("counters"), "").MarkCoveredByDeclarative())
			} else {
				errs = append(errs, validateCounters(c.Counters, resourcev1.ResourceSliceMaxCountersPerCounterSet, p.Child("counters"))...)
			}
			return errs
		},
		func(c resourcev1.CounterSet) string { return c.Name })
}

func validateCounters(counters map[string]resourcev1.Counter, max int, fldPath *field.Path) field.ErrorList {
	// Any parsed quantity is a valid counter.
	return mapOf(counters, max, validation.DNS1123LabelMaxLength, fldPath,
		func(name string, p *field.Path) field.ErrorList {
			return validateCounterName(name, p).MarkCoveredByDeclarative()
		},
		func(resourcev1.Counter, *field.Path) field.ErrorList { return nil })
}

func trueOrUnset(b *bool, name string, fldPath *field.Path, placed *[]string) field.ErrorList {
	if b == nil {
		return nil
	}
	if !*b {
		return field.ErrorList{field.Invalid(fldPath, false, "must be either unset or set to true")}
	}
	*placed = append(*placed, name)
	return nil
}

// advanced: slices using taints or counters hold fewer devices, since those are larger.
func advanced(spec *resourcev1.ResourceSliceSpec) bool {
	for _, d := range spec.Devices {
		if len(d.Taints) > 0 || len(d.ConsumesCounters) > 0 {
			return true
		}
	}
	return false
}

func oldDevice(old *resourcev1.ResourceSliceSpec, name string) *resourcev1.Device {
	if old == nil {
		return nil
	}
	for i := range old.Devices {
		if old.Devices[i].Name == name {
			return &old.Devices[i]
		}
	}
	return nil
}

func validateDevice(d resourcev1.Device, old *resourcev1.Device, fldPath *field.Path, perDevice bool) field.ErrorList {
	errs := validateDeviceName(d.Name, fldPath.Child("name"))
	if n := len(d.Attributes) + len(d.Capacity); n > resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice {
		errs = append(errs, field.Invalid(fldPath, n, fmt.Sprintf("the total number of attributes and capacities must not exceed %d", resourcev1.ResourceSliceMaxAttributesAndCapacitiesPerDevice)))
	}
	errs = append(errs, mapOf(d.Attributes, -1, attributeKeyLen, fldPath.Child("attributes"), validateQualifiedName, validateAttribute)...)
	multi := d.AllowMultipleAllocations != nil && *d.AllowMultipleAllocations
	if old == nil || !apiequality.Semantic.DeepEqual(old.Capacity, d.Capacity) {
		errs = append(errs, mapOf(d.Capacity, -1, attributeKeyLen, fldPath.Child("capacity"), validateQualifiedName,
			func(c resourcev1.DeviceCapacity, p *field.Path) field.ErrorList {
				switch {
				case c.RequestPolicy == nil:
					return nil
				case !multi:
					return field.ErrorList{field.Forbidden(p.Child("requestPolicy"), "allowMultipleAllocations must be true")}
				default:
					return validateRequestPolicy(c.Value, c.RequestPolicy, p.Child("requestPolicy"))
				}
			})...)
	}
	if old == nil || !apiequality.Semantic.DeepEqual(old.Taints, d.Taints) {
		errs = append(errs, list(d.Taints, resourcev1.DeviceTaintsMaxLength, false, fldPath.Child("taints"),
			func(t resourcev1.DeviceTaint, p *field.Path) field.ErrorList { return ValidateTaint(t, nil, p) })...)
	}
	errs = append(errs, set(d.ConsumesCounters, resourcev1.ResourceSliceMaxDeviceCounterConsumptionsPerDevice, true, true, fldPath.Child("consumesCounters"),
		func(c resourcev1.DeviceCounterConsumption, p *field.Path) field.ErrorList {
			var errs field.ErrorList
			if c.CounterSet == "" {
				errs = append(errs, field.Required(p.Child("counterSet"), "").MarkCoveredByDeclarative())
			} else {
				errs = append(errs, validateCounterName(c.CounterSet, p.Child("counterSet")).MarkCoveredByDeclarative()...)
			}
			if len(c.Counters) == 0 {
				errs = append(errs, field.Required(p.Child("counters"), "").MarkCoveredByDeclarative())
			} else {
				errs = append(errs, validateCounters(c.Counters, resourcev1.ResourceSliceMaxCountersPerDeviceCounterConsumption, p.Child("counters"))...)
			}
			return errs
		},
		func(c resourcev1.DeviceCounterConsumption) string { return c.CounterSet })...)

	const where = "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
	if perDevice {
		var placed []string
		if d.NodeName != nil {
			if *d.NodeName == "" {
				errs = append(errs, field.Invalid(fldPath.Child("nodeName"), "", "must not be empty"))
			} else {
				placed = append(placed, "`nodeName`")
				errs = append(errs, validateNodeName(*d.NodeName, fldPath.Child("nodeName"))...)
			}
		}
		if d.NodeSelector != nil {
			placed = append(placed, "`nodeSelector`")
			errs = append(errs, pod.ValidateNodeSelector(d.NodeSelector, fldPath.Child("nodeSelector"))...)
		}
		errs = append(errs, trueOrUnset(d.AllNodes, "`allNodes`", fldPath.Child("allNodes"), &placed)...)
		switch len(placed) {
		case 0:
			errs = append(errs, field.Required(fldPath, where))
		case 1:
		default:
			errs = append(errs, field.Invalid(fldPath, fmt.Sprintf("{%s}", strings.Join(placed, ", ")), where))
		}
	} else if d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil {
		errs = append(errs, field.Invalid(fldPath, nil, "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"))
	}
	return append(errs, validateBindingConditions(d.BindingConditions, d.BindingFailureConditions, fldPath)...)
}

// semver is semver.org 2.0.0: three numbers, then optional pre-release and build parts.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*)?` +
	`(\+[0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*)?$`)

// validateAttribute: an attribute holds exactly one value: a bool, an int, a string or a
// semantic version.
func validateAttribute(a resourcev1.DeviceAttribute, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if a.BoolValue != nil {
		n++
	}
	if a.IntValue != nil {
		n++
	}
	if a.StringValue != nil {
		n++
		if len(*a.StringValue) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(fldPath.Child("string"), "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	if a.VersionValue != nil {
		n++
		p := fldPath.Child("version")
		if !semver.MatchString(*a.VersionValue) {
			errs = append(errs, field.Invalid(p, *a.VersionValue, "must be a string compatible with semver.org spec 2.0.0"))
		}
		if len(*a.VersionValue) > resourcev1.DeviceAttributeMaxValueLength {
			errs = append(errs, field.TooLong(p, "", resourcev1.DeviceAttributeMaxValueLength))
		}
	}
	switch n {
	case 0:
		errs = append(errs, field.Invalid(fldPath, "", "exactly one value must be specified").MarkCoveredByDeclarative())
	case 1:
	default:
		errs = append(errs, field.Invalid(fldPath, a, "exactly one value must be specified").MarkCoveredByDeclarative())
	}
	return errs
}

// validateRequestPolicy: a shareable capacity is consumed in the amounts its policy
// allows, either listed (validValues) or a range from min in steps; both need a default.
func validateRequestPolicy(capacity apiresource.Quantity, policy *resourcev1.CapacityRequestPolicy, fldPath *field.Path) field.ErrorList {
	switch {
	case len(policy.ValidValues) > 0 && policy.ValidRange != nil:
		return field.ErrorList{field.Forbidden(fldPath, `exactly one policy can be specified, cannot specify "validValues" and "validRange" at the same time`)}
	case len(policy.ValidValues) > 0:
		if policy.Default == nil {
			return field.ErrorList{field.Required(fldPath.Child("default"), "required when validValues is defined")}
		}
		return validateValidValues(*policy.Default, capacity, policy.ValidValues, fldPath.Child("validValues"))
	case policy.ValidRange != nil:
		if policy.Default == nil {
			return field.ErrorList{field.Required(fldPath.Child("default"), "required when validRange is defined")}
		}
		return validateRange(*policy.Default, capacity, *policy.ValidRange, fldPath.Child("validRange"))
	}
	return nil
}

func validateValidValues(def, capacity apiresource.Quantity, values []apiresource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := 1; i < len(values); i++ {
		if values[i-1].Cmp(values[i]) > 0 {
			errs = append(errs, field.Invalid(fldPath.Index(i), values[i].String(), "values must be sorted in ascending order"))
		}
	}
	foundDefault := false
	errs = append(errs, set(values, discreteMaxOptions, false, false, fldPath,
		func(v apiresource.Quantity, p *field.Path) field.ErrorList {
			if v.Cmp(def) == 0 {
				foundDefault = true
			}
			if v.Cmp(capacity) > 0 {
				return field.ErrorList{field.Invalid(p, v.String(), fmt.Sprintf("option is larger than capacity value: %s", capacity.String()))}
			}
			return nil
		},
		// Fractional values are allowed (DRAFractionalCapacityRange is on): equal values
		// are equal decimals.
		func(v apiresource.Quantity) string { return v.AsDec().String() })...)
	if !foundDefault {
		errs = append(errs, field.Invalid(fldPath, def.String(), "default value is not valid according to the requestPolicy"))
	}
	return errs
}

func validateRange(def, capacity apiresource.Quantity, r resourcev1.CapacityRequestPolicyRange, fldPath *field.Path) field.ErrorList {
	if r.Min == nil {
		return field.ErrorList{field.Required(fldPath.Child("min"), "required when validRange is defined")}
	}
	var errs field.ErrorList
	if r.Min.Cmp(capacity) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("min"), r.Min.String(), fmt.Sprintf("min is larger than capacity value: %s", capacity.String())))
	}
	if def.Cmp(*r.Min) < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("default"), def.String(), fmt.Sprintf("default is less than min: %s", r.Min.String())))
	}
	if r.Max != nil {
		if r.Min.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("max"), r.Min.String(), fmt.Sprintf("min is larger than max: %s", r.Max.String())))
		}
		if r.Max.Cmp(capacity) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("max"), r.Max.String(), fmt.Sprintf("max is larger than capacity value: %s", capacity.String())))
		}
		if def.Cmp(*r.Max) > 0 {
			errs = append(errs, field.Invalid(fldPath.Child("default"), def.String(), fmt.Sprintf("default is more than max: %s", r.Max.String())))
		}
	}
	if r.Step == nil {
		return errs
	}
	if r.Step.Sign() <= 0 {
		return append(errs, field.Invalid(fldPath.Child("step"), r.Step.String(), "must be greater than zero"))
	}
	oneStep := r.Min.DeepCopy()
	oneStep.Add(*r.Step)
	if oneStep.Cmp(capacity) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("step"), r.Step.String(), fmt.Sprintf("one step %s is larger than capacity value: %s", oneStep.String(), capacity.String())))
	}
	// Steps are counted in thousandths, which covers fractional ranges; a value that has
	// no exact thousandth, or does not fit one in 64 bits, is refused before counting.
	bounds := []struct {
		q    *apiresource.Quantity
		name string
	}{{&def, "default"}, {r.Min, "min"}, {r.Max, "max"}, {r.Step, "step"}}
	unsafe := false
	for _, b := range bounds {
		if b.q == nil {
			continue
		}
		if m := apiresource.NewMilliQuantity(b.q.MilliValue(), b.q.Format); b.q.Cmp(*m) != 0 {
			errs = append(errs, field.Invalid(fldPath.Child(b.name), b.q.String(), "value cannot be represented as a milli value"))
			unsafe = true
		}
	}
	if unsafe {
		return errs
	}
	multiple := func(v apiresource.Quantity) field.ErrorList {
		if (v.MilliValue()-r.Min.MilliValue())%r.Step.MilliValue() != 0 {
			return field.ErrorList{field.Invalid(fldPath.Child("step"), v.String(), fmt.Sprintf("value is not a multiple of a given step (%s) from (%s)", r.Step.String(), r.Min.String()))}
		}
		return nil
	}
	errs = append(errs, multiple(def)...)
	if r.Max != nil {
		errs = append(errs, multiple(*r.Max)...)
	}
	return errs
}
