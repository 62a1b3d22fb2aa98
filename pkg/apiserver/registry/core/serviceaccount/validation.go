package serviceaccount

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

// ValidateServiceAccount validates a service account on create. Only its metadata has
// rules: the secrets and image pull secrets it names need not exist yet.
func ValidateServiceAccount(sa *corev1.ServiceAccount) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&sa.ObjectMeta, true, apivalidation.ValidateServiceAccountName, metaPath)
	return append(errs, namespace.ValidateMetadataFinalizers(sa.Finalizers, metaPath.Child("finalizers"))...)
}

// ValidateServiceAccountUpdate validates an update: metadata update rules and the new
// state as on create.
func ValidateServiceAccountUpdate(newSA, oldSA *corev1.ServiceAccount) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newSA.ObjectMeta, &oldSA.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newSA.Finalizers, metaPath.Child("finalizers"))...)
	return append(errs, ValidateServiceAccount(newSA)...)
}
