// Package validation validates the resource.k8s.io/v1 kinds of dynamic resource allocation
// (DeviceClasses, ResourceClaims and their templates, ResourceSlices, DeviceTaintRules) with
// upstream's field paths and messages. The registries of those kinds share it, since a
// template holds a claim's spec and slices, claims and taint rules share device names,
// taints and tolerations.
//
// Upstream validates these kinds twice: by hand, and declaratively from the tags of the
// k8s.io/api types, whose generated functions k8s.io/api exports. berth does the same:
// its own checks, then the generated ones, merged as kube-apiserver merges them (Merge).
package validation

import (
	"context"
	"errors"
	"slices"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// The DRA feature gates of a v1.37 kube-apiserver whose defaults change what it accepts.
// berth has no switch for them: the fields of the alpha ones are dropped (DropAlphaFields),
// the beta ones are on.
const (
	consumableCapacity = true // DRAConsumableCapacity, beta
	listTypeAttributes = false
)

// Merge returns what kube-apiserver reports for one object: the handwritten errors and the
// enforced declarative ones (standard, and beta while DeclarativeValidationBeta is on, as
// by default). A handwritten error that upstream marks as covered gives way to a
// declarative error of the same type on the same field, so that no mistake is told twice.
func Merge(ctx context.Context, handwritten, declarative field.ErrorList) field.ErrorList {
	beta := utilfeature.DefaultFeatureGate.Enabled(features.DeclarativeValidationBeta)
	enforced := validate.FilterEnforcedDeclarativeErrors(ctx, declarative, beta)
	same := field.ErrorMatcher{}.ByType().ByField()
	kept := handwritten.Filter(func(err error) bool {
		var fe *field.Error
		if !errors.As(err, &fe) || !fe.CoveredByDeclarative {
			return false
		}
		return slices.ContainsFunc(enforced, func(d *field.Error) bool { return same.Matches(fe, d) })
	})
	return append(kept, enforced...)
}

// ValidateDriverName: a driver's name is a DNS subdomain, case aside, of at most 63
// characters, as a CSI driver's. covered marks the errors the API's tags also report.
func ValidateDriverName(name string, fldPath *field.Path, covered bool) field.ErrorList {
	mark := func(errs field.ErrorList) field.ErrorList {
		if covered {
			return errs.MarkCoveredByDeclarative()
		}
		return errs
	}
	if name == "" {
		return mark(field.ErrorList{field.Required(fldPath, "")})
	}
	var errs field.ErrorList
	if len(name) > resourcev1.DriverNameMaxLength {
		errs = append(errs, field.TooLong(fldPath, "", resourcev1.DriverNameMaxLength))
	}
	for _, msg := range validation.IsDNS1123Subdomain(strings.ToLower(name)) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return mark(errs)
}

func validatePoolName(name string, fldPath *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var errs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		errs = append(errs, field.TooLong(fldPath, "", resourcev1.PoolNameMaxLength))
	}
	// A pool's name may be several DNS subdomains joined by slashes.
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, dnsSubdomain(part, fldPath)...)
	}
	return errs
}

func dnsSubdomain(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

func dnsLabel(name string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, field.Invalid(fldPath, name, msg))
	}
	return errs
}

// Device, request and counter names are DNS labels; device class names DNS subdomains.
var (
	validateDeviceName  = dnsLabel
	validateRequestName = dnsLabel
	validateCounterName = dnsLabel
)

func validateNodeName(name string, fldPath *field.Path) field.ErrorList {
	return dnsSubdomain(name, fldPath)
}

// validateQualifiedName: an attribute or capacity name, a C identifier optionally
// prefixed by a domain ("gpu.example.com/memory").
func validateQualifiedName(name resourcev1.QualifiedName, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	parts := strings.Split(string(name), "/")
	switch len(parts) {
	case 1:
		errs = append(errs, validateCIdentifier(parts[0], fldPath)...)
	case 2:
		if parts[0] == "" {
			errs = append(errs, field.Invalid(fldPath, "", "the domain must not be empty"))
		} else {
			errs = append(errs, ValidateDriverName(parts[0], fldPath, false)...)
		}
		if parts[1] == "" {
			errs = append(errs, field.Invalid(fldPath, "", "the name must not be empty"))
		} else {
			errs = append(errs, validateCIdentifier(parts[1], fldPath)...)
		}
	}
	// More than one slash is accepted, as upstream accepts it today.
	return errs
}

// validateFullyQualifiedName: a qualified name that must have its domain.
func validateFullyQualifiedName(name resourcev1.FullyQualifiedName, fldPath *field.Path) field.ErrorList {
	errs := validateQualifiedName(resourcev1.QualifiedName(name), fldPath)
	if !strings.Contains(string(name), "/") {
		errs = append(errs, field.Invalid(fldPath, name, "a fully qualified name must be a domain and a name separated by a slash"))
	}
	return errs
}

func validateCIdentifier(id string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > resourcev1.DeviceMaxIDLength {
		errs = append(errs, field.TooLong(fldPath, "", resourcev1.DeviceMaxIDLength))
	}
	for _, msg := range content.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(fldPath, id, msg))
	}
	return errs
}

func validateLabelValue(value string, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsValidLabelValue(value) {
		errs = append(errs, field.Invalid(fldPath, value, msg))
	}
	return errs
}

// list validates each item of a list of at most max items (max < 0: no limit). Past the
// limit it reports only the count: the items are not worth checking one by one, and the
// list itself is too long to echo. sizeCovered says the API's tags also check the size.
func list[T any](items []T, max int, sizeCovered bool, fldPath *field.Path, each func(T, *field.Path) field.ErrorList) field.ErrorList {
	if max >= 0 && len(items) > max {
		err := field.TooMany(fldPath, len(items), max)
		if sizeCovered {
			err = err.MarkCoveredByDeclarative()
		}
		return field.ErrorList{err}
	}
	var errs field.ErrorList
	for i, item := range items {
		errs = append(errs, each(item, fldPath.Index(i))...)
	}
	return errs
}

// set is list for items that must also be unique by key.
func set[T any, K comparable](items []T, max int, sizeCovered, uniqueCovered bool, fldPath *field.Path, each func(T, *field.Path) field.ErrorList, key func(T) K) field.ErrorList {
	errs := list(items, max, sizeCovered, fldPath, each)
	if max >= 0 && len(items) > max {
		return errs
	}
	seen := sets.New[K]()
	for i, item := range items {
		k := key(item)
		if seen.Has(k) {
			err := field.Duplicate(fldPath.Index(i), k)
			if uniqueCovered {
				err = err.MarkCoveredByDeclarative()
			}
			errs = append(errs, err)
		}
		seen.Insert(k)
	}
	return errs
}

// mapOf validates the keys and values of a map of at most max entries (max < 0: no
// limit). Long keys are shortened in the middle in error paths.
func mapOf[K ~string, T any](m map[K]T, max, keyLen int, fldPath *field.Path, validateKey func(K, *field.Path) field.ErrorList, validateValue func(T, *field.Path) field.ErrorList) field.ErrorList {
	if max >= 0 && len(m) > max {
		return field.ErrorList{field.TooMany(fldPath, len(m), max)}
	}
	var errs field.ErrorList
	for k, v := range m {
		errs = append(errs, validateKey(k, fldPath)...)
		errs = append(errs, validateValue(v, fldPath.Key(truncate(string(k), keyLen)))...)
	}
	return errs
}

func truncate(s string, maxLen int) string {
	maxLen = max(maxLen, 16)
	if len(s) <= maxLen {
		return s
	}
	const ellipsis = "..."
	remaining := maxLen - len(ellipsis)
	return s[:(remaining+1)/2] + ellipsis + s[len(s)-remaining/2:]
}

func stringKey(s string) string { return s }
