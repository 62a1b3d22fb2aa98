package csinode

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolume"
)

const (
	maxNodeIDLen          = 256
	maxStorageHealthConds = 16
	maxHealthReasonLen    = 256
	maxHealthMessageLen   = 1024
)

// ValidateCSINode validates a new CSINode, and the new state of an updated one.
func ValidateCSINode(n *storagev1.CSINode) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&n.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(n.Finalizers, meta.Child("finalizers"))...)
	names := sets.New[string]()
	for i, d := range n.Spec.Drivers {
		errs = append(errs, validateDriver(d, names, field.NewPath("spec", "drivers").Index(i))...)
	}
	return errs
}

// ValidateCSINodeUpdate validates an update: a driver that stays registered keeps its
// node ID and topology keys; only its allocatable count may change.
func ValidateCSINodeUpdate(n, old *storagev1.CSINode) field.ErrorList {
	errs := ValidateCSINode(n)
	for _, o := range old.Spec.Drivers {
		for _, d := range n.Spec.Drivers {
			if o.Name != d.Name {
				continue
			}
			o, d := *o.DeepCopy(), *d.DeepCopy()
			o.Allocatable, d.Allocatable = nil, nil
			errs = append(errs, apivalidation.ValidateImmutableField(d, o, field.NewPath("spec", "drivers"))...)
		}
	}
	return errs
}

func validateDriver(d storagev1.CSINodeDriver, names sets.Set[string], fldPath *field.Path) field.ErrorList {
	errs := persistentvolume.ValidateCSIDriverName(d.Name, fldPath.Child("name"))
	idPath := fldPath.Child("nodeID")
	if d.NodeID == "" {
		errs = append(errs, field.Required(idPath, d.NodeID))
	}
	if len(d.NodeID) > maxNodeIDLen {
		errs = append(errs, field.Invalid(idPath, d.NodeID, fmt.Sprintf("must be %d characters or less", maxNodeIDLen)))
	}
	if a := d.Allocatable; a != nil && a.Count != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*a.Count), fldPath.Child("allocatable", "count"))...)
	}
	if names.Has(d.Name) {
		errs = append(errs, field.Duplicate(fldPath.Child("name"), d.Name))
	}
	names.Insert(d.Name)
	// Upstream reports topology-key errors on the driver's path, not the key's.
	keys := sets.New[string]()
	for _, key := range d.TopologyKeys {
		if key == "" {
			errs = append(errs, field.Required(fldPath, key))
		}
		if keys.Has(key) {
			errs = append(errs, field.Duplicate(fldPath, key))
		}
		keys.Insert(key)
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(fldPath, key, msg))
		}
	}
	return errs
}

// ValidateCSINodeStatusUpdate validates a write to csinodes/status: each storage health
// entry names a driver once, with at most 16 well-formed conditions.
func ValidateCSINodeStatusUpdate(n, old *storagev1.CSINode) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	p := field.NewPath("status", "storageHealth")
	seen := sets.New[string]()
	for i, h := range n.Status.StorageHealth {
		hp := p.Index(i)
		if seen.Has(h.Name) {
			errs = append(errs, field.Duplicate(hp, h.Name))
		}
		seen.Insert(h.Name)
		if h.Name == "" {
			errs = append(errs, field.Required(hp.Child("name"), ""))
		} else {
			errs = append(errs, persistentvolume.ValidateCSIDriverName(h.Name, hp.Child("name"))...)
		}
		if len(h.HealthConditions) > maxStorageHealthConds {
			errs = append(errs, field.TooMany(hp.Child("healthConditions"), len(h.HealthConditions), maxStorageHealthConds))
			continue
		}
		for j, c := range h.HealthConditions {
			errs = append(errs, validateHealthCondition(c, hp.Child("healthConditions").Index(j))...)
		}
	}
	return errs
}

var (
	healthStatuses = []storagev1.StorageHealthStatusType{storagev1.StorageDegraded, storagev1.StorageUnreachable}
	accessModes    = []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod}
	volumeModes    = []corev1.PersistentVolumeMode{corev1.PersistentVolumeFilesystem, corev1.PersistentVolumeBlock}
)

func validateHealthCondition(c storagev1.StorageHealthCondition, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if !sets.New(healthStatuses...).Has(c.Status) {
		errs = append(errs, field.NotSupported(fldPath.Child("status"), c.Status, healthStatuses))
	}
	if c.Reason == "" {
		errs = append(errs, field.Required(fldPath.Child("reason"), ""))
	} else {
		for _, msg := range metavalidation.IsValidConditionReason(c.Reason) {
			errs = append(errs, field.Invalid(fldPath.Child("reason"), c.Reason, msg))
		}
		if len(c.Reason) > maxHealthReasonLen {
			errs = append(errs, field.TooLong(fldPath.Child("reason"), c.Reason, maxHealthReasonLen))
		}
	}
	if len(c.Message) > maxHealthMessageLen {
		errs = append(errs, field.TooLong(fldPath.Child("message"), c.Message, maxHealthMessageLen))
	}
	if c.AccessMode != nil && !sets.New(accessModes...).Has(*c.AccessMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("accessMode"), *c.AccessMode, accessModes))
	}
	if c.VolumeMode != nil && !sets.New(volumeModes...).Has(*c.VolumeMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *c.VolumeMode, volumeModes))
	}
	return errs
}
