package configmap

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

const immutableMsg = "field is immutable when `immutable` is set"

// ValidateConfigMap validates a config map on create, and its new state on update.
func ValidateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(cm.Finalizers, metaPath.Child("finalizers"))...)

	dataPath, binaryPath := field.NewPath("data"), field.NewPath("binaryData")
	size := 0
	for key, value := range cm.Data {
		errs = append(errs, validateKey(key, dataPath.Key(key))...)
		// A key in both maps would be two files of the same name in a volume.
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, "duplicate of key present in binaryData"))
		}
		size += len(value)
	}
	for key, value := range cm.BinaryData {
		errs = append(errs, validateKey(key, binaryPath.Key(key))...)
		size += len(value)
	}
	// The limit keeps an object well inside etcd's request size. The empty path (shown as
	// "[]") stands for the whole object, as upstream reports it.
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", corev1.MaxSecretSize))
	}
	return errs
}

// ValidateConfigMapUpdate validates an update: metadata rules, the lock that
// immutable=true puts on the contents, and the new state as on create.
func ValidateConfigMapUpdate(newCM, oldCM *corev1.ConfigMap) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newCM.ObjectMeta, &oldCM.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newCM.Finalizers, metaPath.Child("finalizers"))...)

	if oldCM.Immutable != nil && *oldCM.Immutable {
		if newCM.Immutable == nil || !*newCM.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		if !reflect.DeepEqual(newCM.Data, oldCM.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
		if !reflect.DeepEqual(newCM.BinaryData, oldCM.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), immutableMsg))
		}
	}
	return append(errs, ValidateConfigMap(newCM)...)
}

func validateKey(key string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fldPath, key, msg))
	}
	return errs
}
