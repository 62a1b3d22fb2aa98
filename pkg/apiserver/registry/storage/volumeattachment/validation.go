package volumeattachment

import (
	"math"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolume"
)

const (
	maxAttachmentMetadataSize = 256 * (1 << 10) // bytes of keys and values
	maxVolumeErrorMessageLen  = 1024
)

// ValidateVolumeAttachment validates a new attachment, the new state of an updated one and
// of its status: an attacher, exactly one source, a node, and a status of bounded size.
func ValidateVolumeAttachment(va *storagev1.VolumeAttachment) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&va.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(va.Finalizers, meta.Child("finalizers"))...)

	spec := field.NewPath("spec")
	errs = append(errs, persistentvolume.ValidateCSIDriverName(va.Spec.Attacher, spec.Child("attacher"))...)
	errs = append(errs, validateSource(&va.Spec.Source, spec.Child("source"))...)
	for _, msg := range apivalidation.NameIsDNSSubdomain(va.Spec.NodeName, false) {
		errs = append(errs, field.Invalid(spec.Child("nodeName"), va.Spec.NodeName, msg))
	}

	status := field.NewPath("status")
	size := 0
	for k, v := range va.Status.AttachmentMetadata {
		size += len(k) + len(v)
	}
	if size > maxAttachmentMetadataSize {
		errs = append(errs, field.TooLong(status.Child("attachmentMetadata"), "", maxAttachmentMetadataSize))
	}
	errs = append(errs, validateVolumeError(va.Status.AttachError, status.Child("attachError"))...)
	errs = append(errs, validateVolumeError(va.Status.DetachError, status.Child("detachError"))...)

	if name := va.Spec.Source.PersistentVolumeName; name != nil {
		for _, msg := range apivalidation.NameIsDNSSubdomain(*name, false) {
			errs = append(errs, field.Invalid(field.NewPath("spec.source.persistentVolumeName"), *name, msg))
		}
	}
	return errs
}

// ValidateVolumeAttachmentUpdate validates an update of the attachment or of its status:
// the spec is immutable.
func ValidateVolumeAttachmentUpdate(va, old *storagev1.VolumeAttachment) field.ErrorList {
	errs := ValidateVolumeAttachment(va)
	return append(errs, apivalidation.ValidateImmutableField(va.Spec, old.Spec, field.NewPath("spec"))...)
}

func validateSource(s *storagev1.VolumeAttachmentSource, fldPath *field.Path) field.ErrorList {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	switch {
	case s.InlineVolumeSpec == nil && s.PersistentVolumeName == nil:
		return field.ErrorList{field.Required(fldPath, exactlyOne)}
	case s.InlineVolumeSpec != nil && s.PersistentVolumeName != nil:
		return field.ErrorList{field.Forbidden(fldPath, exactlyOne)}
	case s.PersistentVolumeName != nil:
		if *s.PersistentVolumeName == "" {
			return field.ErrorList{field.Required(fldPath.Child("persistentVolumeName"), "must specify non empty persistentVolumeName")}
		}
		return nil
	default:
		return persistentvolume.ValidateInlineSpec(s.InlineVolumeSpec, fldPath.Child("inlineVolumeSpec"))
	}
}

func validateVolumeError(e *storagev1.VolumeError, fldPath *field.Path) field.ErrorList {
	if e == nil {
		return nil
	}
	var errs field.ErrorList
	if len(e.Message) > maxVolumeErrorMessageLen {
		errs = append(errs, field.TooLong(fldPath.Child("message"), "", maxVolumeErrorMessageLen))
	}
	if e.ErrorCode != nil && *e.ErrorCode < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("errorCode"), *e.ErrorCode, validation.InclusiveRangeError(0, math.MaxInt32)))
	}
	return errs
}
