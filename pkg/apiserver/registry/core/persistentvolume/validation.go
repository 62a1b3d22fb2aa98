package persistentvolume

import (
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/persistentvolumeclaim"
)

// The gates upstream's volume validation consults stand as in Kubernetes 1.37:
// VolumeAttributesClass on (locked), MutablePVNodeAffinity off.

// Options are the relaxation upstream allows an update for a stored volume's node affinity
// holding a label value today's rules refuse.
type Options struct {
	AllowInvalidLabelValueInRequiredNodeAffinity bool
}

// OptionsFor returns the options for an update of old (a create passes nil).
func OptionsFor(old *corev1.PersistentVolume) Options {
	if old == nil {
		return Options{}
	}
	return Options{AllowInvalidLabelValueInRequiredNodeAffinity: hasInvalidLabelValue(old.Spec.NodeAffinity)}
}

var reclaimPolicies = sets.New(corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRecycle, corev1.PersistentVolumeReclaimRetain)

// ValidatePersistentVolume validates a new volume, and the new state of an updated one.
func ValidatePersistentVolume(pv *corev1.PersistentVolume, opts Options) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&pv.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(pv.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, validateSpec(&pv.Spec, pv.Name, field.NewPath("spec"), opts)...)
	return append(errs, validateMountOptionsAnnotation(pv)...)
}

func validateSpec(spec *corev1.PersistentVolumeSpec, pvName string, fldPath *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), ""))
	}
	errs = append(errs, persistentvolumeclaim.ValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)

	capPath := fldPath.Child("capacity")
	if len(spec.Capacity) == 0 {
		errs = append(errs, field.Required(capPath, ""))
	}
	if _, ok := spec.Capacity[corev1.ResourceStorage]; !ok || len(spec.Capacity) > 1 {
		errs = append(errs, field.NotSupported(capPath, spec.Capacity, []corev1.ResourceName{corev1.ResourceStorage}))
	}
	for name, q := range spec.Capacity {
		errs = append(errs, validateCapacity(q, capPath.Key(string(name)))...)
	}

	if p := spec.PersistentVolumeReclaimPolicy; p != "" && !reclaimPolicies.Has(p) {
		errs = append(errs, field.NotSupported(fldPath.Child("persistentVolumeReclaimPolicy"), p, sets.List(reclaimPolicies)))
	}
	if spec.NodeAffinity != nil {
		errs = append(errs, validateNodeAffinity(spec.NodeAffinity, opts.AllowInvalidLabelValueInRequiredNodeAffinity, fldPath.Child("nodeAffinity"))...)
	}
	errs = append(errs, validateSource(&spec.PersistentVolumeSource, pvName, fldPath)...)
	// A local volume lives on some nodes only: the scheduler must know which.
	if spec.Local != nil && spec.NodeAffinity == nil && onlySource(&spec.PersistentVolumeSource, "local") {
		errs = append(errs, field.Required(fldPath.Child("nodeAffinity"), "Local volume requires node affinity"))
	}
	if spec.HostPath != nil && path.Clean(spec.HostPath.Path) == "/" && spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimRecycle {
		errs = append(errs, field.Forbidden(fldPath.Child("persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
	}

	if spec.StorageClassName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.StorageClassName, false) {
			errs = append(errs, field.Invalid(fldPath.Child("storageClassName"), spec.StorageClassName, msg))
		}
	}
	if spec.VolumeMode != nil && !persistentvolumeclaim.VolumeModes.Has(*spec.VolumeMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(persistentvolumeclaim.VolumeModes)))
	}
	if vac := spec.VolumeAttributesClassName; vac != nil {
		vacPath := fldPath.Child("volumeAttributesClassName")
		if *vac == "" {
			errs = append(errs, field.Required(vacPath, "an empty string is disallowed"))
		} else {
			for _, msg := range apivalidation.NameIsDNSSubdomain(*vac, false) {
				errs = append(errs, field.Invalid(vacPath, *vac, msg))
			}
		}
		if spec.CSI == nil {
			errs = append(errs, field.Required(fldPath.Child("csi"), "has to be specified when using volumeAttributesClassName"))
		}
	}
	return errs
}

// onlySource reports whether name is the source validateSource validated: the first set, in
// upstream's order (a later one is only "more than 1 volume type").
func onlySource(s *corev1.PersistentVolumeSource, name string) bool {
	for _, src := range sources(s, "") {
		if src.set {
			return src.name == name
		}
	}
	return false
}

// validateCapacity: a quantity that is not negative in whole units, and above zero.
func validateCapacity(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Value() < 0 {
		errs = append(errs, field.Invalid(fldPath, q.Value(), "must be a valid resource quantity"))
	}
	if q.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(fldPath, q.String(), "must be greater than zero"))
	}
	return errs
}

// mountOptionSource reports whether the volume plugin of the source takes mount options from the beta
// annotation; any other source with it is refused.
func mountOptionSource(s *corev1.PersistentVolumeSource) bool {
	return s.GCEPersistentDisk != nil || s.AWSElasticBlockStore != nil || s.Glusterfs != nil || s.NFS != nil ||
		s.RBD != nil || s.Quobyte != nil || s.ISCSI != nil || s.Cinder != nil || s.CephFS != nil ||
		s.AzureFile != nil || s.VsphereVolume != nil || s.AzureDisk != nil || s.PhotonPersistentDisk != nil
}

func validateMountOptionsAnnotation(pv *corev1.PersistentVolume) field.ErrorList {
	if _, ok := pv.Annotations[corev1.MountOptionAnnotation]; !ok || mountOptionSource(&pv.Spec.PersistentVolumeSource) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "annotations", corev1.MountOptionAnnotation), "may not specify mount options for this volume type")}
}

// ValidatePersistentVolumeUpdate validates an update of the main resource: the new volume as
// on create, and its source, volume mode and node affinity as they were (a CSI volume may
// get a controllerExpandSecretRef once); a volume attributes class, once set, stays set.
func ValidatePersistentVolumeUpdate(pv, old *corev1.PersistentVolume, opts Options) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, ValidatePersistentVolume(pv, opts)...)

	source := &pv.Spec.PersistentVolumeSource
	if old.Spec.CSI != nil && old.Spec.CSI.ControllerExpandSecretRef == nil && pv.Spec.CSI != nil && pv.Spec.CSI.ControllerExpandSecretRef != nil {
		source = source.DeepCopy()
		source.CSI.ControllerExpandSecretRef = nil
	}
	if !apiequality.Semantic.DeepEqual(*source, old.Spec.PersistentVolumeSource) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "persistentvolumesource"),
			fmt.Sprintf("spec.persistentvolumesource is immutable after creation\n%v", diff.Diff(old.Spec.PersistentVolumeSource, *source))))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(pv.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)
	if old.Spec.NodeAffinity != nil {
		errs = append(errs, validateNodeAffinityUpdate(pv.Spec.NodeAffinity, old.Spec.NodeAffinity, field.NewPath("nodeAffinity"))...)
	}
	if old.Spec.VolumeAttributesClassName != nil && pv.Spec.VolumeAttributesClassName == nil {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "volumeAttributesClassName"), "update from non-nil value to nil is forbidden"))
	}
	return errs
}

// ValidatePersistentVolumeStatusUpdate validates a write to persistentvolumes/status: upstream
// checks nothing of the status itself.
func ValidatePersistentVolumeStatusUpdate(pv, old *corev1.PersistentVolume) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&pv.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(pv.Finalizers, metaPath.Child("finalizers"))...)
	if pv.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	return errs
}
