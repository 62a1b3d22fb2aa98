package horizontalpodautoscaler

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/api/validate/content"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

const (
	// maxPeriodSeconds is the longest period of a scaling policy (30 minutes).
	maxPeriodSeconds int32 = 1800
	// maxStabilizationWindowSeconds is the longest stabilization window (an hour).
	maxStabilizationWindowSeconds int32 = 3600
)

// refOptions relax the checks of a CrossVersionObjectReference.
type refOptions struct {
	// allowEmptyAPIGroup accepts a core apiVersion ("v1").
	allowEmptyAPIGroup bool
	// allowInvalidAPIVersion skips the apiVersion check.
	allowInvalidAPIVersion bool
}

// Options are upstream's HorizontalPodAutoscalerSpecValidationOptions.
type Options struct {
	// MinReplicasLowerBound is the smallest minReplicas: 0, since HPAScaleToZero is on by
	// default in v1.37 (it needs an Object or External metric).
	MinReplicasLowerBound int32
	scaleTargetRef        refOptions
	objectMetrics         refOptions
}

// OptionsFor returns the options that validate h, replacing old (nil on create), as upstream's
// strategy picks them: a scaleTargetRef whose apiVersion and kind do not change is not
// re-checked, a ReplicationController may be named with apiVersion v1, and object metrics
// that were already invalid stay allowed.
func OptionsFor(h, old *autoscalingv2.HorizontalPodAutoscaler) Options {
	opts := Options{MinReplicasLowerBound: 0, objectMetrics: refOptions{allowEmptyAPIGroup: true}}
	switch {
	case old != nil && old.Spec.ScaleTargetRef.APIVersion == h.Spec.ScaleTargetRef.APIVersion && old.Spec.ScaleTargetRef.Kind == h.Spec.ScaleTargetRef.Kind:
		opts.scaleTargetRef.allowInvalidAPIVersion = true
	case h.Spec.ScaleTargetRef.Kind == "ReplicationController":
		opts.scaleTargetRef.allowEmptyAPIGroup = true
	}
	if old != nil {
		for _, m := range old.Spec.Metrics {
			if m.Type == autoscalingv2.ObjectMetricSourceType && m.Object != nil && validateAPIVersion(m.Object.DescribedObject, opts.objectMetrics) != nil {
				opts.objectMetrics.allowInvalidAPIVersion = true
				break
			}
		}
	}
	return opts
}

// Validate validates a new autoscaler.
func Validate(h *autoscalingv2.HorizontalPodAutoscaler, opts Options) field.ErrorList {
	errs := apivalidation.ValidateObjectMeta(&h.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	return append(errs, validateSpec(&h.Spec, field.NewPath("spec"), opts)...)
}

// ValidateUpdate validates an update of an autoscaler's spec and metadata.
func ValidateUpdate(h, old *autoscalingv2.HorizontalPodAutoscaler, opts Options) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&h.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	return append(errs, validateSpec(&h.Spec, field.NewPath("spec"), opts)...)
}

// ValidateStatusUpdate validates an update of an autoscaler's status: counts and conditions'
// observed generations are not negative.
func ValidateStatusUpdate(h, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	errs := apivalidation.ValidateObjectMetaUpdate(&h.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	status := field.NewPath("status")
	for i, c := range h.Status.Conditions {
		if c.ObservedGeneration != nil {
			errs = append(errs, apivalidation.ValidateNonnegativeField(*c.ObservedGeneration, status.Child("conditions").Index(i).Child("observedGeneration"))...)
		}
	}
	errs = append(errs, apivalidation.ValidateNonnegativeField(int64(h.Status.CurrentReplicas), status.Child("currentReplicas"))...)
	return append(errs, apivalidation.ValidateNonnegativeField(int64(h.Status.DesiredReplicas), status.Child("desiredReplicas"))...)
}

func validateSpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, p *field.Path, opts Options) field.ErrorList {
	var errs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < opts.MinReplicasLowerBound {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), *spec.MinReplicas,
			fmt.Sprintf("must be greater than or equal to %d", opts.MinReplicasLowerBound)))
	}
	switch {
	case spec.MaxReplicas == 0:
		errs = append(errs, field.Required(p.Child("maxReplicas"), "must be set and greater than 0"))
	case spec.MaxReplicas < 0:
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to 1"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	errs = append(errs, validateReference(spec.ScaleTargetRef, p.Child("scaleTargetRef"), opts.scaleTargetRef)...)
	errs = append(errs, validateMetrics(spec.Metrics, p.Child("metrics"), spec.MinReplicas, opts.objectMetrics)...)
	if spec.Behavior != nil {
		errs = append(errs, validateRules(spec.Behavior.ScaleUp, p.Child("behavior", "scaleUp"))...)
		errs = append(errs, validateRules(spec.Behavior.ScaleDown, p.Child("behavior", "scaleDown"))...)
	}
	return errs
}

func validateReference(ref autoscalingv2.CrossVersionObjectReference, p *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	if ref.Kind == "" {
		errs = append(errs, field.Required(p.Child("kind"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Kind) {
			errs = append(errs, field.Invalid(p.Child("kind"), ref.Kind, msg))
		}
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		for _, msg := range content.IsPathSegmentName(ref.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msg))
		}
	}
	if err := validateAPIVersion(ref, opts); err != nil {
		errs = append(errs, field.Invalid(p.Child("apiVersion"), ref.APIVersion, err.Error()))
	}
	return errs
}

func validateAPIVersion(ref autoscalingv2.CrossVersionObjectReference, opts refOptions) error {
	if opts.allowInvalidAPIVersion {
		return nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return err
	}
	if !opts.allowEmptyAPIGroup && gv.Group == "" {
		return fmt.Errorf("apiVersion must specify API group")
	}
	return nil
}

// metricSourceTypes are the metric source types, sorted as upstream lists them in errors.
var metricSourceTypes = []string{
	string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType),
	string(autoscalingv2.ResourceMetricSourceType),
}

func validateMetrics(metrics []autoscalingv2.MetricSpec, p *field.Path, minReplicas *int32, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	scalesToZero := false
	for i := range metrics {
		errs = append(errs, validateMetricSpec(&metrics[i], p.Index(i), opts)...)
		if t := metrics[i].Type; t == autoscalingv2.ObjectMetricSourceType || t == autoscalingv2.ExternalMetricSourceType {
			scalesToZero = true
		}
	}
	if minReplicas != nil && *minReplicas == 0 && !scalesToZero {
		errs = append(errs, field.Forbidden(p, "must specify at least one Object or External metric to support scaling to zero replicas"))
	}
	return errs
}

func validateMetricSpec(m *autoscalingv2.MetricSpec, p *field.Path, opts refOptions) field.ErrorList {
	var errs field.ErrorList
	if m.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric source type"))
	}
	known := false
	for _, t := range metricSourceTypes {
		known = known || string(m.Type) == t
	}
	if !known {
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
	}

	// The sources given, in upstream's order; only the first is validated.
	var present []string
	if m.Object != nil {
		if present = append(present, "object"); len(present) == 1 {
			errs = append(errs, validateObjectSource(m.Object, p.Child("object"), opts)...)
		}
	}
	if m.External != nil {
		if present = append(present, "external"); len(present) == 1 {
			errs = append(errs, validateExternalSource(m.External, p.Child("external"))...)
		}
	}
	if m.Pods != nil {
		if present = append(present, "pods"); len(present) == 1 {
			errs = append(errs, validatePodsSource(m.Pods, p.Child("pods"))...)
		}
	}
	if m.Resource != nil {
		if present = append(present, "resource"); len(present) == 1 {
			errs = append(errs, validateResourceSource(m.Resource, p.Child("resource"))...)
		}
	}
	if m.ContainerResource != nil {
		if present = append(present, "containerResource"); len(present) == 1 {
			errs = append(errs, validateContainerResourceSource(m.ContainerResource, p.Child("containerResource"))...)
		}
	}

	var expected string
	var given bool
	switch m.Type {
	case autoscalingv2.ObjectMetricSourceType:
		expected, given = "object", m.Object != nil
	case autoscalingv2.PodsMetricSourceType:
		expected, given = "pods", m.Pods != nil
	case autoscalingv2.ResourceMetricSourceType:
		expected, given = "resource", m.Resource != nil
	case autoscalingv2.ExternalMetricSourceType:
		expected, given = "external", m.External != nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		expected, given = "containerResource", m.ContainerResource != nil
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), m.Type, metricSourceTypes))
		given = true
	}
	if !given {
		errs = append(errs, field.Required(p.Child(expected), "must populate information for the given metric source"))
	}
	if len(present) != 1 {
		for _, typ := range present {
			if typ != expected {
				errs = append(errs, field.Forbidden(p.Child(typ), "must populate the given metric source only"))
			}
		}
	}
	return errs
}

func validateObjectSource(s *autoscalingv2.ObjectMetricSource, p *field.Path, opts refOptions) field.ErrorList {
	errs := validateReference(s.DescribedObject, p.Child("describedObject"), opts)
	errs = append(errs, validateMetricIdentifier(s.Metric, p.Child("metric"))...)
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value or averageValue"))
	}
	return errs
}

func validateExternalSource(s *autoscalingv2.ExternalMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.Value == nil && s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if s.Target.Value != nil && s.Target.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("target", "value"), "may not set both a target value for metric and a per-pod target"))
	}
	return errs
}

func validatePodsSource(s *autoscalingv2.PodsMetricSource, p *field.Path) field.ErrorList {
	errs := validateMetricIdentifier(s.Metric, p.Child("metric"))
	errs = append(errs, validateMetricTarget(s.Target, p.Child("target"))...)
	if s.Target.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("target", "averageValue"), "must specify a positive target averageValue"))
	}
	return errs
}

func validateResourceSource(s *autoscalingv2.ResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	}
	return append(errs, validateAverageTarget(s.Target, p.Child("target"))...)
}

func validateContainerResourceSource(s *autoscalingv2.ContainerResourceMetricSource, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "must specify a resource name"))
	} else {
		errs = append(errs, pod.ValidateContainerResourceName(s.Name, p.Child("name"))...)
	}
	if s.Container == "" {
		errs = append(errs, field.Required(p.Child("container"), "must specify a container"))
	} else {
		for _, msg := range utilvalidation.IsDNS1123Label(s.Container) {
			errs = append(errs, field.Invalid(p.Child("container"), s.Container, msg))
		}
	}
	return append(errs, validateAverageTarget(s.Target, p.Child("target"))...)
}

// validateAverageTarget validates a (container) resource's target: a utilization or an
// average value, not both.
func validateAverageTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	errs := validateMetricTarget(t, p)
	if t.AverageUtilization == nil && t.AverageValue == nil {
		errs = append(errs, field.Required(p.Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if t.AverageUtilization != nil && t.AverageValue != nil {
		errs = append(errs, field.Forbidden(p.Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return errs
}

func validateMetricTarget(t autoscalingv2.MetricTarget, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if t.Type == "" {
		errs = append(errs, field.Required(p.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		errs = append(errs, field.Invalid(p.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		errs = append(errs, field.Invalid(p.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		errs = append(errs, field.Invalid(p.Child("averageUtilization"), t.AverageUtilization, "must be greater than 0"))
	}
	return errs
}

func validateMetricIdentifier(id autoscalingv2.MetricIdentifier, p *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(p.Child("name"), "must specify a metric name")}
	}
	var errs field.ErrorList
	for _, msg := range content.IsPathSegmentName(id.Name) {
		errs = append(errs, field.Invalid(p.Child("name"), id.Name, msg))
	}
	return errs
}

var (
	selectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	policyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
)

func validateRules(r *autoscalingv2.HPAScalingRules, p *field.Path) field.ErrorList {
	if r == nil {
		return nil
	}
	var errs field.ErrorList
	if w := r.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, "must be greater than or equal to zero"))
		}
		if *w > maxStabilizationWindowSeconds {
			errs = append(errs, field.Invalid(p.Child("stabilizationWindowSeconds"), w, fmt.Sprintf("must be less than or equal to %v", maxStabilizationWindowSeconds)))
		}
	}
	if s := r.SelectPolicy; s != nil && *s != autoscalingv2.MaxChangePolicySelect && *s != autoscalingv2.MinChangePolicySelect && *s != autoscalingv2.DisabledPolicySelect {
		errs = append(errs, field.NotSupported(p.Child("selectPolicy"), s, selectPolicies))
	}
	policies := p.Child("policies")
	if len(r.Policies) == 0 {
		errs = append(errs, field.Required(policies, "must specify at least one Policy"))
	}
	for i, policy := range r.Policies {
		pp := policies.Index(i)
		if policy.Type != autoscalingv2.PodsScalingPolicy && policy.Type != autoscalingv2.PercentScalingPolicy {
			errs = append(errs, field.NotSupported(pp.Child("type"), policy.Type, policyTypes))
		}
		if policy.Value <= 0 {
			errs = append(errs, field.Invalid(pp.Child("value"), policy.Value, "must be greater than zero"))
		}
		if policy.PeriodSeconds <= 0 {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), policy.PeriodSeconds, "must be greater than zero"))
		}
		if policy.PeriodSeconds > maxPeriodSeconds {
			errs = append(errs, field.Invalid(pp.Child("periodSeconds"), policy.PeriodSeconds, fmt.Sprintf("must be less than or equal to %v", maxPeriodSeconds)))
		}
	}
	if r.Tolerance != nil && r.Tolerance.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(p.Child("tolerance"), r.Tolerance.String(), "must be greater than or equal to 0"))
	}
	return errs
}
