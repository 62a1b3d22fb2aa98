package validation

import (
	"context"
	"reflect"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metavalidation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the validation of each kind, as its registry calls it: old is nil on
// create, the stored object on update.

var (
	metadata = field.NewPath("metadata")
	specPath = field.NewPath("spec")
	status   = field.NewPath("status")
)

// op is the operation the declarative rules see. Their options are the feature gates they
// depend on, at v1.37's defaults.
func op(old any) operation.Operation {
	o := operation.Operation{Type: operation.Update, Options: declarativeOptions}
	if reflect.ValueOf(old).IsNil() {
		o.Type = operation.Create
	}
	return o
}

var declarativeOptions = map[string]bool{"DRAPartitionableDevicesType": false}

// ValidateDeviceClass validates a DeviceClass. Its name may be up to 253 characters long
// (a DNS subdomain); a selector or config unchanged by an update is not compiled again.
func ValidateDeviceClass(ctx context.Context, class, old *resourcev1.DeviceClass) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&class.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metadata)
	var oldSpec *resourcev1.DeviceClassSpec
	if old != nil {
		errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&class.ObjectMeta, &old.ObjectMeta, metadata)...)
		oldSpec = &old.Spec
	}
	spec := &class.Spec
	storedSelectors := oldSpec != nil && apiequality.Semantic.DeepEqual(spec.Selectors, oldSpec.Selectors)
	errs = append(errs, validateSelectors(spec.Selectors, specPath.Child("selectors"), storedSelectors)...)
	storedConfig := oldSpec != nil && apiequality.Semantic.DeepEqual(spec.Config, oldSpec.Config)
	errs = append(errs, list(spec.Config, resourcev1.DeviceConfigMaxSize, true, specPath.Child("config"),
		func(c resourcev1.DeviceClassConfiguration, p *field.Path) field.ErrorList {
			return validateDeviceConfiguration(c.DeviceConfiguration, p, storedConfig)
		})...)
	if n := spec.ExtendedResourceName; n != nil && !isExtendedResourceName(*n) {
		errs = append(errs, field.Invalid(specPath.Child("extendedResourceName"), *n, "must be a valid extended resource name").MarkCoveredByDeclarative())
	}
	var decl field.ErrorList
	if oldSpec == nil || !apiequality.Semantic.DeepEqual(spec, oldSpec) {
		decl = resourcev1.Validate_DeviceClassSpec(ctx, op(oldSpec), specPath, spec, oldSpec)
	}
	return Merge(ctx, errs, decl)
}

// isExtendedResourceName: a domain-qualified resource name outside kubernetes.io, not
// starting with "requests.", that is still a qualified name with that prefix (the name
// quotas give it), as a pod's extended resources are named.
func isExtendedResourceName(name string) bool {
	if !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/") ||
		strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(corev1.DefaultResourceRequestsPrefix+name)) == 0
}

// ValidateClaim validates a ResourceClaim. On update the spec is immutable, and that is
// all that is checked of it: what cannot change need not be validated again.
func ValidateClaim(ctx context.Context, claim, old *resourcev1.ResourceClaim) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&claim.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadata)
	if old != nil {
		errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&claim.ObjectMeta, &old.ObjectMeta, metadata)...)
		return append(errs, apivalidation.ValidateImmutableField(claim.Spec, old.Spec, specPath)...)
	}
	errs = append(errs, ValidateClaimSpec(&claim.Spec, specPath, false)...)
	decl := resourcev1.Validate_ResourceClaimSpec(ctx, op(old), specPath, &claim.Spec, nil)
	return Merge(ctx, errs, decl)
}

// ValidateClaimStatus validates an update of a claim's status, with the declarative
// rules of its status.
func ValidateClaimStatus(ctx context.Context, claim, old *resourcev1.ResourceClaim) field.ErrorList {
	errs := ValidateClaimStatusUpdate(claim, old)
	var decl field.ErrorList
	if !apiequality.Semantic.DeepEqual(claim.Status, old.Status) {
		decl = resourcev1.Validate_ResourceClaimStatus(ctx, operation.Operation{Type: operation.Update, Options: declarativeOptions}, status, &claim.Status, &old.Status)
	}
	return Merge(ctx, errs, decl)
}

// ValidateClaimTemplate validates a ResourceClaimTemplate: its claims' metadata may
// carry labels and annotations only; the spec is immutable.
func ValidateClaimTemplate(ctx context.Context, t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
	if old != nil {
		errs := apivalidation.ValidateObjectMetaUpdate(&t.ObjectMeta, &old.ObjectMeta, metadata)
		return append(errs, apivalidation.ValidateImmutableField(t.Spec, old.Spec, specPath)...)
	}
	errs := apivalidation.ValidateObjectMeta(&t.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, metadata)
	errs = append(errs, validateTemplateMeta(&t.Spec.ObjectMeta, specPath.Child("metadata"))...)
	errs = append(errs, ValidateClaimSpec(&t.Spec.Spec, specPath.Child("spec"), false)...)
	decl := resourcev1.Validate_ResourceClaimTemplateSpec(ctx, op(old), specPath, &t.Spec, nil)
	return Merge(ctx, errs, decl)
}

// validateTemplateMeta: a template's metadata for its claims. Names, namespaces, owners
// and the rest come from the pod that the claim is made for, so only labels and
// annotations may be given.
func validateTemplateMeta(m *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	errs := apivalidation.ValidateAnnotations(m.Annotations, fldPath.Child("annotations"))
	errs = append(errs, metavalidation.ValidateLabels(m.Labels, fldPath.Child("labels"))...)
	v := reflect.ValueOf(*m)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Labels" || name == "Annotations" || v.Field(i).IsZero() {
			continue
		}
		jsonName, _, _ := cutComma(v.Type().Field(i).Tag.Get("json"))
		errs = append(errs, field.Forbidden(fldPath.Child(jsonName), "cannot be set"))
	}
	return errs
}

func cutComma(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == ',' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// ValidateSlice validates a ResourceSlice.
func ValidateSlice(ctx context.Context, slice, old *resourcev1.ResourceSlice) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&slice.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metadata)
	var oldSpec *resourcev1.ResourceSliceSpec
	if old != nil {
		errs = apivalidation.ValidateObjectMetaUpdate(&slice.ObjectMeta, &old.ObjectMeta, metadata)
		oldSpec = &old.Spec
	}
	errs = append(errs, ValidateSliceSpec(&slice.Spec, oldSpec, specPath)...)
	var decl field.ErrorList
	if oldSpec == nil || !apiequality.Semantic.DeepEqual(slice.Spec, *oldSpec) {
		decl = resourcev1.Validate_ResourceSliceSpec(ctx, op(oldSpec), specPath, &slice.Spec, oldSpec)
	}
	return Merge(ctx, errs, decl)
}

// ValidateTaintRule validates a DeviceTaintRule: which devices it taints, and the taint.
func ValidateTaintRule(ctx context.Context, rule, old *resourcev1.DeviceTaintRule) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&rule.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, metadata)
	var oldSpec *resourcev1.DeviceTaintRuleSpec
	var oldTaint *resourcev1.DeviceTaint
	if old != nil {
		errs = apivalidation.ValidateObjectMetaUpdate(&rule.ObjectMeta, &old.ObjectMeta, metadata)
		oldSpec, oldTaint = &old.Spec, &old.Spec.Taint
	}
	if s := rule.Spec.DeviceSelector; s != nil {
		p := specPath.Child("deviceSelector")
		if s.Driver != nil {
			errs = append(errs, ValidateDriverName(*s.Driver, p.Child("driver"), false)...)
		}
		if s.Pool != nil {
			errs = append(errs, validatePoolName(*s.Pool, p.Child("pool"))...)
		}
		if s.Device != nil {
			errs = append(errs, validateDeviceName(*s.Device, p.Child("device"))...)
		}
	}
	errs = append(errs, ValidateTaint(rule.Spec.Taint, oldTaint, specPath.Child("taint"))...)
	var decl field.ErrorList
	if oldSpec == nil || !apiequality.Semantic.DeepEqual(rule.Spec, *oldSpec) {
		decl = resourcev1.Validate_DeviceTaintRuleSpec(ctx, op(oldSpec), specPath, &rule.Spec, oldSpec)
	}
	return Merge(ctx, errs, decl)
}

// ValidateTaintRuleStatus validates an update of a rule's status: its conditions.
func ValidateTaintRuleStatus(ctx context.Context, rule, old *resourcev1.DeviceTaintRule) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&rule.ObjectMeta, &old.ObjectMeta, metadata)
	conditions := status.Child("conditions")
	errs = append(errs, metavalidation.ValidateConditions(rule.Status.Conditions, conditions)...)
	if n := len(rule.Status.Conditions); n > resourcev1.DeviceTaintRuleStatusMaxConditions {
		errs = append(errs, field.TooMany(conditions, n, resourcev1.DeviceTaintRuleStatusMaxConditions))
	}
	var decl field.ErrorList
	if !apiequality.Semantic.DeepEqual(rule.Status, old.Status) {
		decl = resourcev1.Validate_DeviceTaintRuleStatus(ctx, operation.Operation{Type: operation.Update, Options: declarativeOptions}, status, &rule.Status, &old.Status)
	}
	return Merge(ctx, errs, decl)
}
