package namespace

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// standardFinalizers are the only finalizer names the core API accepts without a domain
// prefix.
var standardFinalizers = sets.New(
	string(corev1.FinalizerKubernetes),
	metav1.FinalizerOrphanDependents,
	metav1.FinalizerDeleteDependents,
)

// ValidateFinalizerName checks a finalizer name the way the core API does: it must be a
// qualified name and, when it has no domain prefix, one of the standard names.
func ValidateFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateFinalizerName(name, fldPath)
	return append(errs, validateStandardFinalizer(name, fldPath)...)
}

// ValidateMetadataFinalizers adds the core API's rule for names without a domain prefix
// to metadata.finalizers; apimachinery's ValidateObjectMeta has already checked that they
// are qualified names. fldPath is the path of the finalizers list.
func ValidateMetadataFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, name := range finalizers {
		errs = append(errs, validateStandardFinalizer(name, fldPath.Index(i))...)
	}
	return errs
}

func validateStandardFinalizer(name string, fldPath *field.Path) field.ErrorList {
	if strings.Contains(name, "/") || standardFinalizers.Has(name) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
}

// ValidateNamespace validates a namespace on create. Updates of the main resource run it
// too, together with ValidateNamespaceUpdate.
func ValidateNamespace(ns *corev1.Namespace) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName, metaPath)
	errs = append(errs, ValidateMetadataFinalizers(ns.Finalizers, metaPath.Child("finalizers"))...)
	// Upstream reports these on the list rather than on the item; kept for identical output.
	finalizersPath := field.NewPath("spec", "finalizers")
	for _, name := range ns.Spec.Finalizers {
		errs = append(errs, ValidateFinalizerName(string(name), finalizersPath)...)
	}
	return errs
}

// ValidateNamespaceUpdate validates what an update of the main resource may change:
// only metadata rules apply beyond ValidateNamespace.
func ValidateNamespaceUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	return validateMetadataUpdate(newNs, oldNs)
}

// ValidateNamespaceStatusUpdate validates an update through the status subresource: the
// phase must say whether the namespace is being deleted.
func ValidateNamespaceStatusUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	errs := validateMetadataUpdate(newNs, oldNs)
	// "Phase" is capitalised in upstream's field path.
	phasePath := field.NewPath("status", "Phase")
	if newNs.DeletionTimestamp.IsZero() {
		if newNs.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(phasePath, newNs.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if newNs.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(phasePath, newNs.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// ValidateNamespaceFinalizeUpdate validates an update through the finalize subresource,
// which is how the namespace controller removes spec.finalizers.
func ValidateNamespaceFinalizeUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	errs := validateMetadataUpdate(newNs, oldNs)
	finalizersPath := field.NewPath("spec", "finalizers")
	for i, name := range newNs.Spec.Finalizers {
		errs = append(errs, ValidateFinalizerName(string(name), finalizersPath.Index(i))...)
	}
	return errs
}

func validateMetadataUpdate(newNs, oldNs *corev1.Namespace) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newNs.ObjectMeta, &oldNs.ObjectMeta, metaPath)
	return append(errs, ValidateMetadataFinalizers(newNs.Finalizers, metaPath.Child("finalizers"))...)
}
