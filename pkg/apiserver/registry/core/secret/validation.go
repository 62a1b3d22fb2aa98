package secret

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/namespace"
)

const immutableMsg = "field is immutable when `immutable` is set"

// ValidateSecret validates a secret on create, and its new state on update: keys, total
// size, and the keys or annotations that each built-in type requires.
func ValidateSecret(s *corev1.Secret) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(s.Finalizers, metaPath.Child("finalizers"))...)

	dataPath := field.NewPath("data")
	size := 0
	for key, value := range s.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		size += len(value)
	}
	if size > corev1.MaxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", corev1.MaxSecretSize))
	}
	return append(errs, validateType(s, dataPath)...)
}

// validateType checks what each built-in type promises its consumers. Unknown types are
// free-form, as upstream allows.
func validateType(s *corev1.Secret, dataPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		// Only the account name is required: the token controller fills in the uid and
		// the token later.
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg:
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigKey, dataPath)...)
	case corev1.SecretTypeDockerConfigJson:
		errs = append(errs, validateJSONKey(s.Data, corev1.DockerConfigJsonKey, dataPath)...)
	case corev1.SecretTypeBasicAuth:
		// Either may be empty, but at least one key must be present.
		_, hasUser := s.Data[corev1.BasicAuthUsernameKey]
		_, hasPassword := s.Data[corev1.BasicAuthPasswordKey]
		if !hasUser && !hasPassword {
			errs = append(errs,
				field.Required(dataPath.Key(corev1.BasicAuthUsernameKey), ""),
				field.Required(dataPath.Key(corev1.BasicAuthPasswordKey), ""))
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
			if _, ok := s.Data[key]; !ok {
				errs = append(errs, field.Required(dataPath.Key(key), ""))
			}
		}
	}
	return errs
}

// validateJSONKey requires data[key] to be present and a JSON object.
func validateJSONKey(data map[string][]byte, key string, dataPath *field.Path) field.ErrorList {
	value, ok := data[key]
	if !ok {
		return field.ErrorList{field.Required(dataPath.Key(key), "")}
	}
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return field.ErrorList{field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error())}
	}
	return nil
}

// ValidateSecretUpdate validates an update: metadata rules, the type (which never
// changes), the lock that immutable=true puts on data, and the new state as on create.
func ValidateSecretUpdate(newS, oldS *corev1.Secret) field.ErrorList {
	metaPath := field.NewPath("metadata")
	errs := apivalidation.ValidateObjectMetaUpdate(&newS.ObjectMeta, &oldS.ObjectMeta, metaPath)
	errs = append(errs, namespace.ValidateMetadataFinalizers(newS.Finalizers, metaPath.Child("finalizers"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(newS.Type, oldS.Type, field.NewPath("type"))...)

	if oldS.Immutable != nil && *oldS.Immutable {
		if newS.Immutable == nil || !*newS.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), immutableMsg))
		}
		// stringData needs no check: defaulting has already folded it into data.
		if !reflect.DeepEqual(newS.Data, oldS.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), immutableMsg))
		}
	}
	return append(errs, ValidateSecret(newS)...)
}
