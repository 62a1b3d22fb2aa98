package persistentvolumeclaim

import (
	"fmt"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// The feature gates upstream's claim validation consults are all on and locked in
// Kubernetes 1.37 (VolumeAttributesClass, RecoverVolumeExpansionFailure) or off
// (CrossNamespaceVolumeDataSource): berth validates as that fixed set of gates does.

// Options are the relaxations upstream allows an update for what an older stored claim may
// hold: a label value in its selector, or a data source API group, that today's rules refuse.
type Options struct {
	AllowInvalidLabelValueInSelector      bool
	AllowInvalidAPIGroupInDataSourceOrRef bool
}

// OptionsFor returns the options for an update of old (a create passes nil): today's rules,
// relaxed only where old already breaks them.
func OptionsFor(old *corev1.PersistentVolumeClaim) Options {
	var opts Options
	if old == nil {
		return opts
	}
	s := &old.Spec
	opts.AllowInvalidAPIGroupInDataSourceOrRef = (s.DataSource != nil && s.DataSource.APIGroup != nil) ||
		(s.DataSourceRef != nil && s.DataSourceRef.APIGroup != nil)
	opts.AllowInvalidLabelValueInSelector = len(metavalidation.ValidateLabelSelector(s.Selector, metavalidation.LabelSelectorValidationOptions{}, nil)) > 0
	return opts
}

var (
	// AccessModes are the access modes a claim or volume may ask for, in upstream's (sorted)
	// order of the "supported values" of its errors.
	AccessModes = sets.New(corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOnce, corev1.ReadWriteOncePod)
	// VolumeModes are the volume modes of claims and volumes.
	VolumeModes = sets.New(corev1.PersistentVolumeBlock, corev1.PersistentVolumeFilesystem)

	resizeStatuses = sets.New(corev1.PersistentVolumeClaimControllerResizeInProgress,
		corev1.PersistentVolumeClaimControllerResizeInfeasible, corev1.PersistentVolumeClaimNodeResizePending,
		corev1.PersistentVolumeClaimNodeResizeInProgress, corev1.PersistentVolumeClaimNodeResizeInfeasible)
)

const (
	isNotPositiveErrorMsg = "must be greater than zero"
	specImmutableMsg      = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
)

// ValidatePersistentVolumeClaim validates a new claim.
func ValidatePersistentVolumeClaim(c *corev1.PersistentVolumeClaim, opts Options) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(c.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, ValidateClaimSpec(&c.Spec, field.NewPath("spec"), opts)...)
}

// ValidateClaimSpec validates a claim's spec, or a claim template's: access modes, a positive
// storage request, the selector, class names, volume mode and data sources.
func ValidateClaimSpec(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if len(spec.AccessModes) == 0 {
		errs = append(errs, field.Required(fldPath.Child("accessModes"), "at least 1 access mode is required"))
	}
	if spec.Selector != nil {
		errs = append(errs, metavalidation.ValidateLabelSelector(spec.Selector,
			metavalidation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.AllowInvalidLabelValueInSelector}, fldPath.Child("selector"))...)
	}
	errs = append(errs, ValidateAccessModes(spec.AccessModes, fldPath.Child("accessModes"))...)

	storagePath := fldPath.Child("resources").Key(string(corev1.ResourceStorage))
	if q, ok := spec.Resources.Requests[corev1.ResourceStorage]; !ok {
		errs = append(errs, field.Required(storagePath, ""))
	} else if q.Cmp(resource.Quantity{}) <= 0 {
		errs = append(errs, field.Invalid(storagePath, q.String(), isNotPositiveErrorMsg))
	}

	if spec.StorageClassName != nil && *spec.StorageClassName != "" {
		errs = append(errs, validateClassName(*spec.StorageClassName, fldPath.Child("storageClassName"))...)
	}
	if spec.VolumeMode != nil && !VolumeModes.Has(*spec.VolumeMode) {
		errs = append(errs, field.NotSupported(fldPath.Child("volumeMode"), *spec.VolumeMode, sets.List(VolumeModes)))
	}
	errs = append(errs, validateDataSources(spec, fldPath, opts)...)
	if spec.VolumeAttributesClassName != nil && *spec.VolumeAttributesClassName != "" {
		errs = append(errs, validateClassName(*spec.VolumeAttributesClassName, fldPath.Child("volumeAttributesClassName"))...)
	}
	return errs
}

// ValidateAccessModes checks that each mode is known and that ReadWriteOncePod comes alone.
// A claim and a volume share the rule; whether the list may be empty is theirs.
func ValidateAccessModes(modes []corev1.PersistentVolumeAccessMode, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rwop, other := false, false
	for _, mode := range modes {
		switch {
		case !AccessModes.Has(mode):
			errs = append(errs, field.NotSupported(fldPath, mode, sets.List(AccessModes)))
		case mode == corev1.ReadWriteOncePod:
			rwop = true
		default:
			other = true
		}
	}
	if rwop && other {
		errs = append(errs, field.Forbidden(fldPath, "may not use ReadWriteOncePod with other access modes"))
	}
	return errs
}

func validateClassName(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range apivalidation.NameIsDNSSubdomain(name, false) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// validateDataSources checks dataSource and dataSourceRef, and that they agree: the strategy
// has copied one into the other where only one was given.
func validateDataSources(spec *corev1.PersistentVolumeClaimSpec, fldPath *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if ds := spec.DataSource; ds != nil {
		errs = append(errs, validateDataSource(ds.Name, ds.Kind, ds.APIGroup, fldPath.Child("dataSource"), opts)...)
	}
	ref := spec.DataSourceRef
	if ref != nil {
		refPath := fldPath.Child("dataSourceRef")
		errs = append(errs, validateDataSource(ref.Name, ref.Kind, ref.APIGroup, refPath, opts)...)
		if ref.Namespace != nil && *ref.Namespace != "" {
			for _, msg := range apivalidation.ValidateNamespaceName(*ref.Namespace, false) {
				errs = append(errs, field.Invalid(refPath.Child("namespace"), *ref.Namespace, msg))
			}
		}
	}
	switch {
	case ref != nil && ref.Namespace != nil && *ref.Namespace != "":
		if spec.DataSource != nil {
			errs = append(errs, field.Invalid(fldPath, fldPath.Child("dataSource"), "may not be specified when dataSourceRef.namespace is specified"))
		}
	case spec.DataSource != nil && ref != nil:
		if !reflect.DeepEqual(spec.DataSource.APIGroup, ref.APIGroup) || spec.DataSource.Kind != ref.Kind || spec.DataSource.Name != ref.Name {
			errs = append(errs, field.Invalid(fldPath, fldPath.Child("dataSource"), "must match dataSourceRef"))
		}
	}
	return errs
}

func validateDataSource(name, kind string, apiGroup *string, fldPath *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(fldPath.Child("name"), ""))
	}
	if kind == "" {
		errs = append(errs, field.Required(fldPath.Child("kind"), ""))
	}
	group := ""
	if apiGroup != nil {
		group = *apiGroup
	}
	if group == "" && kind != "PersistentVolumeClaim" {
		errs = append(errs, field.Invalid(fldPath, kind, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
	}
	if group != "" && !opts.AllowInvalidAPIGroupInDataSourceOrRef {
		for _, msg := range validation.IsDNS1123Subdomain(group) {
			errs = append(errs, field.Invalid(fldPath.Child("apiGroup"), group, msg))
		}
	}
	return errs
}

// ValidatePersistentVolumeClaimUpdate validates an update of the main resource: the new claim
// as on create, and a spec that stays as it was except for what may change once: the volume
// name (the binder sets it), the storage class (from the beta annotation, or from none), the
// storage request (up, or back down above the capacity after a failed expansion) and, before
// the claim is bound, the volume attributes class.
func ValidatePersistentVolumeClaimUpdate(c, old *corev1.PersistentVolumeClaim, opts Options) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, ValidatePersistentVolumeClaim(c, opts)...)
	newSpec, oldSpec := c.Spec.DeepCopy(), old.Spec.DeepCopy()

	if old.Spec.VolumeName == "" {
		oldSpec.VolumeName = newSpec.VolumeName
	}
	oldClass, oldHasAnnotation := old.Annotations[corev1.BetaStorageClassAnnotation]
	newClass, newHasAnnotation := c.Annotations[corev1.BetaStorageClassAnnotation]
	switch {
	case oldHasAnnotation && old.Spec.StorageClassName == nil && c.Spec.StorageClassName != nil &&
		*c.Spec.StorageClassName == oldClass && (!newHasAnnotation || newClass == oldClass):
		// The move from the beta annotation to the field.
		newSpec.StorageClassName = nil
	default:
		if newClass != oldClass {
			errs = append(errs, field.Invalid(metaPath.Child("annotations", corev1.BetaStorageClassAnnotation), newClass, apivalidation.FieldImmutableErrorMsg))
		}
		// A class may be set on a claim that had none (a default class came later).
		if c.Spec.StorageClassName != nil && old.Spec.StorageClassName == nil && (!oldHasAnnotation || *c.Spec.StorageClassName == oldClass) {
			newSpec.StorageClassName = oldSpec.StorageClassName
		}
	}
	if c.Status.Phase == corev1.ClaimBound {
		if newSpec.Resources.Requests != nil {
			newSpec.Resources.Requests[corev1.ResourceStorage] = old.Spec.Resources.Requests[corev1.ResourceStorage]
		}
		newSpec.VolumeAttributesClassName = oldSpec.VolumeAttributesClassName
	}
	if !apiequality.Semantic.DeepEqual(newSpec, oldSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec"), fmt.Sprintf("%s\n%v", specImmutableMsg, diff.Diff(oldSpec, newSpec))))
	}

	oldSize, newSize := old.Spec.Resources.Requests[corev1.ResourceStorage], c.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := old.Status.Capacity[corev1.ResourceStorage]
	// A request may come back down after an expansion failed, never to the capacity or below:
	// volumes do not shrink.
	if newSize.Cmp(oldSize) < 0 && newSize.Cmp(capacity) <= 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "resources", "requests", "storage"), "field can not be less than status.capacity"))
	}
	errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.VolumeMode, old.Spec.VolumeMode, field.NewPath("volumeMode"))...)

	if !apiequality.Semantic.DeepEqual(old.Spec.VolumeAttributesClassName, c.Spec.VolumeAttributesClassName) && old.Status.CurrentVolumeAttributesClassName != nil {
		// Once a class has been applied, the claim keeps one.
		vacPath := field.NewPath("spec", "volumeAttributesClassName")
		switch {
		case c.Spec.VolumeAttributesClassName == nil:
			errs = append(errs, field.Forbidden(vacPath, "update to nil is forbidden when status.currentVolumeAttributesClassName is not nil"))
		case *c.Spec.VolumeAttributesClassName == "":
			errs = append(errs, field.Forbidden(vacPath, "update to empty string is forbidden when status.currentVolumeAttributesClassName is not nil"))
		}
	}
	return errs
}

// ValidatePersistentVolumeClaimStatusUpdate validates a write to persistentvolumeclaims/status:
// the capacity, the health conditions, the allocated resources and their resize statuses.
// Paths are upstream's, "Spec.accessModes" included.
func ValidatePersistentVolumeClaimStatusUpdate(c, old *corev1.PersistentVolumeClaim) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&c.ObjectMeta, &old.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(c.Finalizers, metaPath.Child("finalizers"))...)
	if c.ResourceVersion == "" {
		errs = append(errs, field.Required(field.NewPath("resourceVersion"), ""))
	}
	if len(c.Spec.AccessModes) == 0 {
		errs = append(errs, field.Required(field.NewPath("Spec", "accessModes"), ""))
	}
	capPath := field.NewPath("status", "capacity")
	for name, q := range c.Status.Capacity {
		errs = append(errs, validateBasicResource(q, capPath.Key(string(name)))...)
	}
	if h := c.Status.HealthStatus; h != nil {
		for i, cond := range h.HealthConditions {
			if cond.Reason == "" {
				continue
			}
			for _, msg := range metavalidation.IsValidConditionReason(cond.Reason) {
				errs = append(errs, field.Invalid(field.NewPath("status", "healthStatus", "healthConditions").Index(i).Child("reason"), cond.Reason, msg))
			}
		}
	}
	statusesPath := field.NewPath("status", "allocatedResourceStatuses")
	for name, s := range c.Status.AllocatedResourceStatuses {
		errs = append(errs, validateResourceKey(string(name), statusesPath)...)
		if !resizeStatuses.Has(s) {
			// Upstream names the key, not the status, as the unsupported value.
			errs = append(errs, field.NotSupported(statusesPath, name, sets.List(resizeStatuses)))
		}
	}
	allocPath := field.NewPath("status", "allocatedResources")
	for name, q := range c.Status.AllocatedResources {
		if keyErrs := validateResourceKey(string(name), allocPath); len(keyErrs) > 0 {
			errs = append(errs, keyErrs...)
			continue
		}
		if qErrs := validateBasicResource(q, allocPath.Key(string(name))); len(qErrs) > 0 {
			errs = append(errs, qErrs...)
		} else {
			if q.Sign() < 0 {
				errs = append(errs, field.Invalid(allocPath.Key(string(name)), q.String(), apivalidation.IsNegativeErrorMsg))
			}
		}
	}
	return errs
}

// validateBasicResource refuses a negative quantity, reported in whole units.
func validateBasicResource(q resource.Quantity, fldPath *field.Path) field.ErrorList {
	if q.Value() < 0 {
		return field.ErrorList{field.Invalid(fldPath, q.Value(), "must be a valid resource quantity")}
	}
	return nil
}

// validateResourceKey: a qualified name, and of the native resources only storage.
func validateResourceKey(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	if len(errs) > 0 {
		return errs
	}
	native := !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix)
	if native && corev1.ResourceName(name) != corev1.ResourceStorage {
		return field.ErrorList{field.NotSupported(fldPath, name, []corev1.ResourceName{corev1.ResourceStorage})}
	}
	return nil
}
