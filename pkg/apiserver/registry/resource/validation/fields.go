package validation

import (
	resourcev1 "k8s.io/api/resource/v1"
)

// The fields of alpha features, off by default in v1.37 and without a switch in berth,
// are dropped from what clients write, as kube-apiserver drops them while their gates are
// off, unless the stored object already uses them (it was written when they were on).

// DropAlphaClaimFields drops derived attributes (DRADerivedAttributes) from a claim's
// spec, or a template's.
func DropAlphaClaimFields(spec, old *resourcev1.ResourceClaimSpec) {
	if old != nil && derivedAttributesInUse(old) {
		return
	}
	for i := range spec.Devices.Requests {
		r := &spec.Devices.Requests[i]
		if r.Exactly != nil {
			r.Exactly.DerivedAttributes = nil
		}
		for j := range r.FirstAvailable {
			r.FirstAvailable[j].DerivedAttributes = nil
		}
	}
}

func derivedAttributesInUse(spec *resourcev1.ResourceClaimSpec) bool {
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil && len(r.Exactly.DerivedAttributes) > 0 {
			return true
		}
		for _, s := range r.FirstAvailable {
			if len(s.DerivedAttributes) > 0 {
				return true
			}
		}
	}
	return false
}

// DropAlphaStatusFields drops the node operations a result may skip
// (DRAOptionalNodeOperations) from a claim's status.
func DropAlphaStatusFields(s, old *resourcev1.ResourceClaimStatus) {
	if s.Allocation == nil || (old != nil && old.Allocation != nil && skipsInResults(old.Allocation.Devices.Results)) {
		return
	}
	for i := range s.Allocation.Devices.Results {
		s.Allocation.Devices.Results[i].SkipNodeOperations = nil
	}
}

func skipsInResults(results []resourcev1.DeviceRequestAllocationResult) bool {
	for _, r := range results {
		if len(r.SkipNodeOperations) > 0 {
			return true
		}
	}
	return false
}

// DropAlphaSliceFields drops from a slice list-valued attributes (DRAListTypeAttributes),
// counter compatibility groups (DRADeviceCompatibilityGroups), node allocatable resources
// (DRANodeAllocatableResources), the partition type attribute (DRAPartitionableDevicesType)
// and skipped node operations (DRAOptionalNodeOperations), each unless old uses it.
func DropAlphaSliceFields(spec, old *resourcev1.ResourceSliceSpec) {
	inUse := func(used func(d *resourcev1.Device) bool) bool {
		if old == nil {
			return false
		}
		for i := range old.Devices {
			if used(&old.Devices[i]) {
				return true
			}
		}
		return false
	}
	listAttributes := func(d *resourcev1.Device) bool {
		for _, a := range d.Attributes {
			if a.BoolValues != nil || a.IntValues != nil || a.StringValues != nil || a.VersionValues != nil {
				return true
			}
		}
		return false
	}
	groups := func(d *resourcev1.Device) bool {
		for _, c := range d.ConsumesCounters {
			if len(c.CompatibilityGroups) > 0 {
				return true
			}
		}
		return false
	}
	allocatable := func(d *resourcev1.Device) bool { return len(d.NodeAllocatableResources) > 0 }
	keepLists, keepGroups, keepAllocatable := inUse(listAttributes), inUse(groups), inUse(allocatable)
	for i := range spec.Devices {
		d := &spec.Devices[i]
		if !keepLists {
			for k, a := range d.Attributes {
				a.BoolValues, a.IntValues, a.StringValues, a.VersionValues = nil, nil, nil, nil
				d.Attributes[k] = a
			}
		}
		if !keepGroups {
			for j := range d.ConsumesCounters {
				d.ConsumesCounters[j].CompatibilityGroups = nil
			}
		}
		if !keepAllocatable {
			d.NodeAllocatableResources = nil
		}
	}
	if old == nil || old.PartitionTypeAttribute == nil {
		spec.PartitionTypeAttribute = nil
	}
	if old == nil || len(old.SkipNodeOperations) == 0 {
		spec.SkipNodeOperations = nil
	}
}
