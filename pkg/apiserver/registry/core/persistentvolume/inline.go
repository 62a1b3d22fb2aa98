package persistentvolume

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
)

// ValidateInlineSpec validates the spec of a volume that lives inside another object (a
// VolumeAttachment's inlineVolumeSpec, for a pod's inline CSI volume migrated from an
// in-tree plugin): a CSI source, access modes, and none of what only a PersistentVolume
// object has (a claim, a capacity, node affinity, a reclaim policy other than Retain).
func ValidateInlineSpec(spec *corev1.PersistentVolumeSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	const inline = "may not be specified in the context of inline volumes"
	if spec.ClaimRef != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("claimRef"), inline))
	}
	if len(spec.Capacity) != 0 {
		errs = append(errs, field.Forbidden(fldPath.Child("capacity"), inline))
	}
	if spec.CSI == nil {
		errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified in the context of inline volumes"))
	}
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), ""))
	}
	errs = append(errs, persistentvolumeclaim.ValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)
	if p := spec.PersistentVolumeReclaimPolicy; p != "" && p != corev1.PersistentVolumeReclaimRetain {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may only be "+string(corev1.PersistentVolumeReclaimRetain)+" in the context of inline volumes"))
	}
	if spec.NodeAffinity != nil {
		errs = append(errs, field.Forbidden(fldPath.Child("nodeAffinity"), inline))
	}
	errs = append(errs, validateSource(&spec.PersistentVolumeSource, "", fldPath)...)
	if spec.StorageClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.StorageClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("storageClassName"), spec.StorageClassName, msg))
		}
	}
	if spec.VolumeMode != nil && !persistentvolumeclaim.VolumeModes.Has(*spec.VolumeMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(persistentvolumeclaim.VolumeModes)))
	}
	return errs
}
