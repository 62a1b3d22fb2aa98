package lease

import (
	"slices"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validStrategies are the coordinated leader election strategies Kubernetes defines;
// others must be domain-prefixed.
var validStrategies = []coordinationv1.CoordinatedLeaseStrategy{coordinationv1.OldestEmulationVersion}

// ValidateLease validates a lease on create. Upstream applies only the generic metadata
// rules here, without the core API's finalizer-name rule.
func ValidateLease(l *coordinationv1.Lease) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&l.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&l.Spec, field.NewPath("spec"))...)
}

// ValidateLeaseUpdate validates an update. Any spec field may change: that is how a
// holder renews and how leadership moves.
func ValidateLeaseUpdate(newL, oldL *coordinationv1.Lease) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&newL.ObjectMeta, &oldL.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&newL.Spec, field.NewPath("spec"))...)
}

// validateSpec checks the numbers and the coordinated election fields. holderIdentity
// and the times are free-form.
func validateSpec(spec *coordinationv1.LeaseSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := spec.LeaseDurationSeconds; d != nil && *d <= 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseDurationSeconds"), d, "must be greater than 0"))
	}
	if n := spec.LeaseTransitions; n != nil && *n < 0 {
		errs = append(errs, field.Invalid(fldPath.Child("leaseTransitions"), n, "must be greater than or equal to 0"))
	}
	if spec.Strategy != nil {
		// Upstream nests the path once more ("spec.strategy.strategy"); kept for identical
		// output.
		errs = append(errs, validateStrategy(*spec.Strategy, fldPath.Child("strategy", "strategy"))...)
	}
	// A preferred holder only means something to a coordinated election.
	if spec.PreferredHolder != nil && *spec.PreferredHolder != "" && (spec.Strategy == nil || *spec.Strategy == "") {
		errs = append(errs, field.Forbidden(fldPath.Child("preferredHolder"), "may only be specified if `strategy` is defined"))
	}
	return errs
}

func validateStrategy(strategy coordinationv1.CoordinatedLeaseStrategy, fldPath *field.Path) field.ErrorList {
	if !strings.Contains(string(strategy), "/") {
		if slices.Contains(validStrategies, strategy) {
			return nil
		}
		return field.ErrorList{field.NotSupported(fldPath, strategy, validStrategies)}
	}
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(strategy)) {
		errs = append(errs, field.Invalid(fldPath, strategy, msg))
	}
	return errs
}
