package serviceaccount

import (
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// minTokenSeconds is the shortest token anyone may ask for.
const minTokenSeconds = 10 * 60

// ValidateTokenRequest validates a (defaulted) TokenRequest as Kubernetes does: its lifetime,
// and attestations only with a webhook configuration as the bound object.
func ValidateTokenRequest(tr *authenticationv1.TokenRequest) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if exp := *tr.Spec.ExpirationSeconds; exp < minTokenSeconds {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
	} else if exp > 1<<32 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
	}
	if !isWebhookRef(tr.Spec.BoundObjectRef) {
		if len(tr.Spec.Attestations) != 0 {
			return field.ErrorList{field.Invalid(spec.Child("attestations"), tr.Spec.Attestations, "attestations may only be specified with a webhook bound object reference")}
		}
		return errs
	}
	if len(tr.Spec.Audiences) != 1 {
		errs = append(errs, field.Invalid(spec.Child("audiences"), tr.Spec.Audiences, "must be length 1 when bound to a webhook config"))
	}
	attPath := spec.Child("attestations")
	if len(tr.Spec.Attestations) != 1 {
		return append(errs, field.Invalid(attPath, tr.Spec.Attestations, "webhook bound requests require exactly one admissionReviewAPIGroups attestation"))
	}
	for key, values := range tr.Spec.Attestations {
		p := attPath.Key(key)
		switch {
		case key != authenticationv1.AttestationAdmissionReviewAPIGroups:
			errs = append(errs, field.NotSupported(p, key, []string{authenticationv1.AttestationAdmissionReviewAPIGroups}))
		case len(values) != 1:
			errs = append(errs, field.Invalid(p, values, "must specify a single value"))
		case values[0] == "":
			errs = append(errs, field.Invalid(p.Index(0), values[0], "may not be an empty string"))
		case values[0] != "*":
			for _, reason := range validation.IsDNS1123Subdomain(values[0]) {
				errs = append(errs, field.Invalid(p.Index(0), values[0], "must specify a valid API Group: "+reason))
			}
		}
	}
	return errs
}

// isWebhookRef says whether a token is to be bound to an admission webhook configuration.
func isWebhookRef(ref *authenticationv1.BoundObjectReference) bool {
	if ref == nil {
		return false
	}
	return (ref.Kind == "ValidatingWebhookConfiguration" || ref.Kind == "MutatingWebhookConfiguration") &&
		ref.APIVersion == "admissionregistration.k8s.io/v1"
}
