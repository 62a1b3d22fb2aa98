package storageclass

import (
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

const (
	maxParametersSize = 256 * (1 << 10) // bytes of keys and values
	maxParameters     = 512
)

var (
	reclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	bindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

// ValidateStorageClass validates a new class, and the new state of an updated one.
func ValidateStorageClass(sc *storagev1.StorageClass) field.ErrorList {
	meta := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&sc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, meta)
	errs = append(errs, namespace.ValidateMetadataFinalizers(sc.Finalizers, meta.Child("finalizers"))...)
	errs = append(errs, ValidateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, ValidateParameters(sc.Parameters, true, field.NewPath("parameters"))...)
	if p := sc.ReclaimPolicy; p != nil && *p != "" && !sets.New(reclaimPolicies...).Has(string(*p)) {
		errs = append(errs, field.NotSupported(field.NewPath("reclaimPolicy"), p, reclaimPolicies))
	}
	modePath := field.NewPath("volumeBindingMode")
	if m := sc.VolumeBindingMode; m == nil {
		errs = append(errs, field.Required(modePath, ""))
	} else if !sets.New(bindingModes...).Has(string(*m)) {
		errs = append(errs, field.NotSupported(modePath, m, bindingModes))
	}
	return append(errs, validateAllowedTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// ValidateStorageClassUpdate validates an update: the provisioner, its parameters, the
// reclaim policy and the binding mode are fixed at creation.
func ValidateStorageClassUpdate(sc, old *storagev1.StorageClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&sc.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, apivalidation.ValidateImmutableField(sc.Parameters, old.Parameters, field.NewPath("parameters"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(sc.Provisioner, old.Provisioner, field.NewPath("provisioner"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(sc.ReclaimPolicy, old.ReclaimPolicy, field.NewPath("reclaimPolicy"))...)
	return append(errs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, old.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
}

// ValidateProvisioner: a required qualified name, case aside. VolumeAttributesClasses
// check their driver name the same way.
func ValidateProvisioner(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fldPath, strings.ToLower(name), msg))
	}
	return errs
}

// ValidateParameters: at most 512 keys, none empty, 256 kB in all; allowEmpty false makes
// at least one required (VolumeAttributesClasses).
func ValidateParameters(params map[string]string, allowEmpty bool, fldPath *field.Path) field.ErrorList {
	if len(params) > maxParameters {
		return field.ErrorList{field.TooLong(fldPath, "", maxParameters)}
	}
	var errs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			errs = append(errs, field.Invalid(fldPath, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > maxParametersSize {
		errs = append(errs, field.TooLong(fldPath, "", maxParametersSize))
	}
	if !allowEmpty && len(params) == 0 {
		errs = append(errs, field.Required(fldPath, "must contain at least one key/value pair"))
	}
	return errs
}

// validateAllowedTopologies: each term's expressions have a label key and distinct values,
// no key twice in a term, and no two terms alike.
func validateAllowedTopologies(terms []corev1.TopologySelectorTerm, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	var seen []map[string]sets.Set[string]
	for i, term := range terms {
		exprs := map[string]sets.Set[string]{}
		exprPath := fldPath.Index(i).Child("matchLabelExpressions")
		for j, req := range term.MatchLabelExpressions {
			p := exprPath.Index(j)
			values := sets.New[string]()
			if len(req.Values) == 0 {
				errs = append(errs, field.Required(p.Child("values"), ""))
			}
			for k, v := range req.Values {
				if values.Has(v) {
					errs = append(errs, field.Duplicate(p.Child("values").Index(k), v))
				}
				values.Insert(v)
			}
			errs = append(errs, metavalidation.ValidateLabelName(req.Key, p.Child("key"))...)
			if _, ok := exprs[req.Key]; ok {
				errs = append(errs, field.Duplicate(p.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, other := range seen {
			if reflect.DeepEqual(exprs, other) {
				errs = append(errs, field.Duplicate(exprPath, ""))
			}
		}
		seen = append(seen, exprs)
	}
	return errs
}
