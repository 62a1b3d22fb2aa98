package csidriver

import (
	"time"

	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

var (
	fsGroupPolicies = []string{string(storagev1.FileFSGroupPolicy), string(storagev1.NoneFSGroupPolicy), string(storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy)}
	lifecycleModes  = []string{string(storagev1.VolumeLifecyclePersistent), string(storagev1.VolumeLifecycleEphemeral)}
)

// ValidateCSIDriver validates a new driver.
func ValidateCSIDriver(d *storagev1.CSIDriver) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&d.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(d.Finalizers, meta.Child("finalizers"))...)
	return append(errs, validateSpec(&d.Spec, field.NewPath("spec"))...)
}

// ValidateCSIDriverUpdate validates an update: attachRequired and the lifecycle modes are
// immutable. (Upstream names the first "spec.attachedRequired", and so does berth.)
func ValidateCSIDriverUpdate(d, old *storagev1.CSIDriver) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&d.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateSpec(&d.Spec, field.NewPath("spec"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(d.Spec.AttachRequired, old.Spec.AttachRequired, field.NewPath("spec", "attachedRequired"))...)
	return append(errs, apivalidation.ValidateImmutableField(d.Spec.VolumeLifecycleModes, old.Spec.VolumeLifecycleModes, field.NewPath("spec", "volumeLifecycleModes"))...)
}

func validateSpec(s *storagev1.CSIDriverSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// The defaults fill these in; a write that clears them is refused.
	for _, req := range []struct {
		name string
		set  bool
	}{
		{"attachedRequired", s.AttachRequired != nil},
		{"podInfoOnMount", s.PodInfoOnMount != nil},
		{"storageCapacity", s.StorageCapacity != nil},
	} {
		if !req.set {
			errs = append(errs, field.Required(fldPath.Child(req.name), ""))
		}
	}
	if p := s.FSGroupPolicy; p != nil && *p != storagev1.FileFSGroupPolicy && *p != storagev1.NoneFSGroupPolicy && *p != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy {
		errs = append(errs, field.NotSupported(fldPath.Child("fsGroupPolicy"), p, fsGroupPolicies))
	}
	errs = append(errs, validateTokenRequests(s.TokenRequests, fldPath.Child("tokenRequests"))...)
	for _, m := range s.VolumeLifecycleModes {
		if m != storagev1.VolumeLifecyclePersistent && m != storagev1.VolumeLifecycleEphemeral {
			errs = append(errs, field.NotSupported(fldPath.Child("volumeLifecycleModes"), m, lifecycleModes))
		}
	}
	if s.SELinuxMount == nil {
		errs = append(errs, field.Required(fldPath.Child("seLinuxMount"), ""))
	}
	if p := s.NodeAllocatableUpdatePeriodSeconds; p != nil && *p < 10 {
		errs = append(errs, field.Invalid(fldPath.Child("nodeAllocatableUpdatePeriodSeconds"), *p, "must be greater than or equal to 10 seconds"))
	}
	if s.ServiceAccountTokenInSecrets != nil && len(s.TokenRequests) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("serviceAccountTokenInSecrets"), s.ServiceAccountTokenInSecrets, "serviceAccountTokenInSecrets is set but no tokenRequests are specified"))
	}
	if s.PreventPodSchedulingIfMissing == nil {
		errs = append(errs, field.Required(fldPath.Child("preventPodSchedulingIfMissing"), ""))
	}
	return errs
}

// validateTokenRequests: distinct audiences, each token living 10 minutes to 2^32 seconds.
func validateTokenRequests(requests []storagev1.TokenRequest, fldPath *field.Path) field.ErrorList {
	const minExpiration = 10 * time.Minute
	var errs field.ErrorList
	audiences := map[string]bool{}
	for i, r := range requests {
		p := fldPath.Index(i)
		if audiences[r.Audience] {
			errs = append(errs, field.Duplicate(p.Child("audience"), r.Audience))
			continue
		}
		audiences[r.Audience] = true
		if r.ExpirationSeconds == nil {
			continue
		}
		if *r.ExpirationSeconds < int64(minExpiration.Seconds()) {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
		}
		if *r.ExpirationSeconds > 1<<32 {
			errs = append(errs, field.Invalid(p.Child("expirationSeconds"), *r.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
		}
	}
	return errs
}
