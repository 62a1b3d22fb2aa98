package subjectaccessreview

import (
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate validates a review as Kubernetes does: a subject (user or groups), exactly one of
// resource and non-resource attributes, well-formed selectors, and no metadata.
func Validate(sar *authorizationv1.SubjectAccessReview) field.ErrorList {
	errs := ValidateSpec(&sar.Spec, field.NewPath("spec"))
	meta := sar.ObjectMeta
	meta.ManagedFields = nil // set by the apply machinery on every request
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), sar.ObjectMeta, "must be empty"))
	}
	return errs
}

// ValidateSpec validates the spec of a SubjectAccessReview or a LocalSubjectAccessReview.
func ValidateSpec(spec *authorizationv1.SubjectAccessReviewSpec, fldPath *field.Path) field.ErrorList {
	errs := ValidateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, fldPath)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(fldPath.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return errs
}

// ValidateAttributes validates what every kind of access review asks about: exactly one of
// resource and non-resource attributes, with well-formed selectors.
func ValidateAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if (ra == nil) == (nra == nil) {
		errs = append(errs, field.Invalid(fldPath, nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if ra != nil {
		raPath := fldPath.Child("resourceAttributes")
		errs = append(errs, validateFieldSelector(ra.FieldSelector, raPath.Child("fieldSelector"))...)
		errs = append(errs, validateLabelSelector(ra.LabelSelector, raPath.Child("labelSelector"))...)
	}
	return errs
}

// Selectors are given either raw or as requirements. Unknown operators pass, so that a newer
// client's review still gets an answer (Kubernetes allows them here for the same reason).
func validateFieldSelector(s *authorizationv1.FieldSelectorAttributes, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := validateSelectorForm(s.RawSelector, len(s.Requirements), fldPath)
	opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
	for i, r := range s.Requirements {
		errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, fldPath.Child("requirements").Index(i))...)
	}
	return errs
}

func validateLabelSelector(s *authorizationv1.LabelSelectorAttributes, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	errs := validateSelectorForm(s.RawSelector, len(s.Requirements), fldPath)
	opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
	for i, r := range s.Requirements {
		errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, fldPath.Child("requirements").Index(i))...)
	}
	return errs
}

func validateSelectorForm(raw string, requirements int, fldPath *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(fldPath.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(fldPath.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", fldPath))}
	}
	return nil
}
