package validation

import (
	"context"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

// want is one expected error: its type, field and a part of its detail.
type want struct {
	typ    field.ErrorType
	field  string
	detail string
}

func check(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	for _, w := range wants {
		found := false
		for _, e := range errs {
			if e.Type == w.typ && e.Field == w.field && strings.Contains(e.Detail, w.detail) {
				found = true
			}
		}
		if !found {
			t.Errorf("missing %s %s %q in %v", w.typ, w.field, w.detail, errs)
		}
	}
	if len(wants) == 0 && len(errs) > 0 {
		t.Errorf("unexpected errors: %v", errs)
	}
}

func claimWith(requests ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"},
		Spec:       resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: requests}},
	}
}

func exact(name, class string, sel ...string) resourcev1.DeviceRequest {
	r := resourcev1.DeviceRequest{Name: name, Exactly: &resourcev1.ExactDeviceRequest{
		DeviceClassName: class, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}
	for _, s := range sel {
		r.Exactly.Selectors = append(r.Exactly.Selectors, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: s}})
	}
	return r
}

func TestValidateClaim(t *testing.T) {
	ctx := context.Background()
	check(t, ValidateClaim(ctx, claimWith(exact("req-0", "dra.example.com", `device.driver == "dra.example.com"`)), nil))

	tooMany := claimWith()
	for range resourcev1.DeviceRequestsMaxSize + 1 {
		tooMany.Spec.Devices.Requests = append(tooMany.Spec.Devices.Requests, exact("r", "c"))
	}
	check(t, ValidateClaim(ctx, tooMany, nil), want{field.ErrorTypeTooMany, "spec.devices.requests", ""})

	all := exact("b", "c")
	all.Exactly.AllocationMode, all.Exactly.Count = resourcev1.DeviceAllocationModeAll, 3
	errs := ValidateClaim(ctx, claimWith(
		exact("Bad_Name", ""),
		exact("a", "c", "device.attributes", "1 +"),
		all,
		resourcev1.DeviceRequest{Name: "a"},
	), nil)
	check(t, errs,
		want{field.ErrorTypeInvalid, "spec.devices.requests[0].name", "RFC 1123 label"},
		want{field.ErrorTypeRequired, "spec.devices.requests[0].exactly.deviceClassName", ""},
		want{field.ErrorTypeInvalid, "spec.devices.requests[1].exactly.selectors[0].cel.expression", "must evaluate to bool"},
		want{field.ErrorTypeInvalid, "spec.devices.requests[1].exactly.selectors[1].cel.expression", "compilation failed"},
		want{field.ErrorTypeInvalid, "spec.devices.requests[2].exactly.count", "must not be specified when allocationMode is 'All'"},
		want{field.ErrorTypeRequired, "spec.devices.requests[3]", "exactly one of `exactly` or `firstAvailable` is required"},
		want{field.ErrorTypeDuplicate, "spec.devices.requests[3]", ""},
	)

	c := claimWith(exact("a", "c"))
	c.Spec.Devices.Constraints = []resourcev1.DeviceConstraint{{Requests: []string{"a", "b/c"}, MatchAttribute: ptr.To(resourcev1.FullyQualifiedName("model"))}}
	c.Spec.Devices.Config = []resourcev1.DeviceClaimConfiguration{{DeviceConfiguration: resourcev1.DeviceConfiguration{
		Opaque: &resourcev1.OpaqueDeviceConfiguration{Driver: "dra.example.com", Parameters: runtime.RawExtension{Raw: []byte(`[1]`)}}}}}
	check(t, ValidateClaim(ctx, c, nil),
		want{field.ErrorTypeInvalid, "spec.devices.constraints[0].requests[1]", "must be the name of a request in the claim"},
		want{field.ErrorTypeInvalid, "spec.devices.constraints[0].matchAttribute", "a fully qualified name must be a domain and a name separated by a slash"},
		want{field.ErrorTypeInvalid, "spec.devices.config[0].opaque.parameters", "must be a valid JSON object"},
	)

	old := claimWith(exact("a", "c"))
	changed := old.DeepCopy()
	changed.Spec.Devices.Requests[0].Exactly.Count = 2
	check(t, ValidateClaim(ctx, changed, old), want{field.ErrorTypeInvalid, "spec", "field is immutable"})
}

func TestValidateClaimStatus(t *testing.T) {
	ctx := context.Background()
	old := claimWith(exact("a", "c"))
	s := old.DeepCopy()
	s.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p"}}
	check(t, ValidateClaimStatus(ctx, s, old),
		want{field.ErrorTypeRequired, "status.reservedFor[0].uid", ""},
		want{field.ErrorTypeForbidden, "status.reservedFor", "may not be specified when `allocated` is not set"},
	)

	// Nothing allocated is an allocation.
	s = old.DeepCopy()
	s.Status.Allocation = &resourcev1.AllocationResult{}
	check(t, ValidateClaimStatus(ctx, s, old))

	s.Status.Allocation.Devices.Results = []resourcev1.DeviceRequestAllocationResult{{Request: "x", Driver: "d.example.com", Pool: "p", Device: "d"}}
	check(t, ValidateClaimStatus(ctx, s, old), want{field.ErrorTypeInvalid, "status.allocation.devices.results[0].request", "must be the name of a request"})

	allocated := old.DeepCopy()
	allocated.Status.Allocation = &resourcev1.AllocationResult{}
	s = allocated.DeepCopy()
	s.Status.Allocation.Devices.Results = []resourcev1.DeviceRequestAllocationResult{{Request: "a", Driver: "d.example.com", Pool: "p", Device: "d"}}
	errs := ValidateClaimStatus(ctx, s, allocated)
	if len(errs) == 0 || errs[0].Field != "status.allocation" {
		t.Errorf("changing an allocation: %v", errs)
	}
}

func TestValidateSlice(t *testing.T) {
	ctx := context.Background()
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "1"},
		Spec: resourcev1.ResourceSliceSpec{Driver: "dra.example.com", NodeName: ptr.To("node-1"),
			Pool: resourcev1.ResourcePool{Name: "pool", ResourceSliceCount: 1}},
	}
	check(t, ValidateSlice(ctx, slice, nil))

	bad := slice.DeepCopy()
	bad.Spec.AllNodes = ptr.To(true)
	bad.Spec.Pool.Name = ""
	bad.Spec.Devices = []resourcev1.Device{
		{Name: "d", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{
			"a": {}, "b": {IntValue: ptr.To(int64(1)), BoolValue: ptr.To(true)}, "v": {VersionValue: ptr.To("v1")}}},
		{Name: "d", NodeName: ptr.To("n")},
	}
	check(t, ValidateSlice(ctx, bad, nil),
		want{field.ErrorTypeInvalid, "spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set"},
		want{field.ErrorTypeRequired, "spec.pool.name", ""},
		// The API's tags report these, in their words.
		want{field.ErrorTypeInvalid, "spec.devices[0].attributes[a]", "must specify one of: `int`, `bool`, `string`, `version`"},
		want{field.ErrorTypeInvalid, "spec.devices[0].attributes[b]", "must specify exactly one of: `int`, `bool`"},
		want{field.ErrorTypeInvalid, "spec.devices[0].attributes[v].version", "semver"},
		want{field.ErrorTypeDuplicate, "spec.devices[1]", ""},
		want{field.ErrorTypeInvalid, "spec.devices[1]", "can only be set if `perDeviceNodeSelection` is set to true"},
	)

	moved := slice.DeepCopy()
	moved.Spec.NodeName = ptr.To("node-2")
	moved.Spec.Driver = "other.example.com"
	check(t, ValidateSlice(ctx, moved, slice),
		want{field.ErrorTypeInvalid, "spec.nodeName", "field is immutable"},
		want{field.ErrorTypeInvalid, "spec.driver", "field is immutable"},
	)
}

func TestValidateDeviceClassAndTaintRule(t *testing.T) {
	ctx := context.Background()
	class := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu.example.com", ResourceVersion: "1"},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: "false"}}}}}
	check(t, ValidateDeviceClass(ctx, class, nil))
	bad := class.DeepCopy()
	bad.Spec.Selectors = append(bad.Spec.Selectors, resourcev1.DeviceSelector{}, resourcev1.DeviceSelector{CEL: &resourcev1.CELDeviceSelector{Expression: "1"}})
	bad.Spec.ExtendedResourceName = ptr.To("cpu")
	check(t, ValidateDeviceClass(ctx, bad, class),
		want{field.ErrorTypeRequired, "spec.selectors[1].cel", ""},
		want{field.ErrorTypeInvalid, "spec.selectors[2].cel.expression", "must evaluate to bool"},
		want{field.ErrorTypeInvalid, "spec.extendedResourceName", "a name must be a domain-prefixed path"},
	)

	rule := &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "testing", Effect: resourcev1.DeviceTaintEffectNone}}}
	check(t, ValidateTaintRule(ctx, rule, nil))
	badRule := rule.DeepCopy()
	badRule.Spec.Taint = resourcev1.DeviceTaint{Key: "", Value: "a b", Effect: "Sometimes"}
	badRule.Spec.DeviceSelector = &resourcev1.DeviceTaintSelector{Pool: ptr.To("")}
	errs := ValidateTaintRule(ctx, badRule, nil)
	check(t, errs,
		want{field.ErrorTypeInvalid, "spec.taint.key", "name part must be non-empty"},
		want{field.ErrorTypeInvalid, "spec.taint.value", ""},
		want{field.ErrorTypeNotSupported, "spec.taint.effect", ""},
		want{field.ErrorTypeRequired, "spec.deviceSelector.pool", ""},
	)
	effects := 0
	for _, e := range errs {
		if e.Field == "spec.taint.effect" {
			effects++
		}
	}
	if effects != 1 {
		t.Errorf("the bad effect is reported %d times, want once: %v", effects, errs)
	}
}
