package job

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file holds the rules of a Job's policies (pod failure, success, pod replacement) and
// of the index lists ("1,3-5") that the success policy and the status use.

const (
	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20
	maxJobSuccessPolicySucceededIndexesLimit   = 64 * 1024
	maxSuccessPolicyRule                       = 20
)

var (
	podFailurePolicyActions = sets.New(
		batchv1.PodFailurePolicyActionCount,
		batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob,
		batchv1.PodFailurePolicyActionIgnore)
	onExitCodesOperators    = sets.New(batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn)
	onPodConditionsStatuses = sets.New(corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown)
	podReplacementPolicies  = sets.New(batchv1.Failed, batchv1.TerminatingOrFailed)
)

func validatePodReplacementPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if spec.PodReplacementPolicy == nil {
		return nil
	}
	policy := *spec.PodReplacementPolicy
	// A pod failure policy judges failed pods only: their replacements wait for them to fail.
	if spec.PodFailurePolicy != nil {
		if policy != batchv1.Failed {
			return field.ErrorList{field.NotSupported(p, policy, []batchv1.PodReplacementPolicy{batchv1.Failed})}
		}
		return nil
	}
	if !podReplacementPolicies.Has(policy) {
		return field.ErrorList{field.NotSupported(p, policy, sets.List(podReplacementPolicies))}
	}
	return nil
}

func validatePodFailurePolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := p.Child("rules")
	if n := len(spec.PodFailurePolicy.Rules); n > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, n, maxPodFailurePolicyRules))
	}
	containers := sets.New[string]()
	for _, c := range spec.Template.Spec.Containers {
		containers.Insert(c.Name)
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers.Insert(c.Name)
	}
	for i := range spec.PodFailurePolicy.Rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &spec.PodFailurePolicy.Rules[i], rulesPath.Index(i), containers)...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	actionPath := p.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", sets.List(podFailurePolicyActions))))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !podFailurePolicyActions.Has(rule.Action):
		errs = append(errs, field.NotSupported(actionPath, rule.Action, sets.List(podFailurePolicyActions)))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, p.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, p.Child("onPodConditions"))...)
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnPodConditions(patterns []batchv1.PodFailurePolicyOnPodConditionsPattern, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		errs = append(errs, field.TooMany(p, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for i, pattern := range patterns {
		pp := p.Index(i)
		for _, msg := range utilvalidation.IsQualifiedName(string(pattern.Type)) {
			errs = append(errs, field.Invalid(pp.Child("type"), string(pattern.Type), msg))
		}
		switch {
		case pattern.Status == "":
			errs = append(errs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", sets.List(onPodConditionsStatuses))))
		case !onPodConditionsStatuses.Has(pattern.Status):
			errs = append(errs, field.NotSupported(pp.Child("status"), pattern.Status, sets.List(onPodConditionsStatuses)))
		}
	}
	return errs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	switch {
	case req.Operator == "":
		errs = append(errs, field.Required(p.Child("operator"), fmt.Sprintf("valid values: %q", sets.List(onExitCodesOperators))))
	case !onExitCodesOperators.Has(req.Operator):
		errs = append(errs, field.NotSupported(p.Child("operator"), req.Operator, sets.List(onExitCodesOperators)))
	}
	if req.ContainerName != nil && !containers.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(p.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := p.Child("values")
	switch n := len(req.Values); {
	case n == 0:
		errs = append(errs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	case n > maxPodFailurePolicyOnExitCodesValues:
		errs = append(errs, field.TooMany(valuesPath, n, maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := sets.New[int32]()
	for i, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			errs = append(errs, field.Invalid(valuesPath.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen.Has(v) {
			errs = append(errs, field.Duplicate(valuesPath.Index(i), v))
		}
		seen.Insert(v)
		if i > 0 && req.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return errs
}

// validateSuccessPolicy is called for Indexed Jobs only, whose completions are then set (or
// already refused as missing).
func validateSuccessPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := p.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRule {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRule))
	}
	completions := int32(0)
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i := range rules {
		errs = append(errs, validateSuccessPolicyRule(&rules[i], completions, rulesPath.Index(i))...)
	}
	return errs
}

func validateSuccessPolicyRule(rule *batchv1.SuccessPolicyRule, completions int32, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		errs = append(errs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
	}
	var total int32
	if rule.SucceededIndexes != nil {
		ip := p.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxJobSuccessPolicySucceededIndexesLimit {
			errs = append(errs, field.TooLong(ip, "", maxJobSuccessPolicySucceededIndexesLimit))
		}
		var err error
		if total, err = parseIndexes(*rule.SucceededIndexes, completions); err != nil {
			errs = append(errs, field.Invalid(ip, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err)))
		}
	}
	if rule.SucceededCount != nil {
		cp := p.Child("succeededCount")
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*rule.SucceededCount), cp)...)
		if *rule.SucceededCount > completions {
			errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *rule.SucceededCount > total {
			errs = append(errs, field.Invalid(cp, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
		}
	}
	return errs
}

// parseIndexes checks an index list ("0,2-4,7": increasing intervals below completions) and
// returns how many indexes it holds.
func parseIndexes(s string, completions int32) (int32, error) {
	if s == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range strings.Split(s, ",") {
		x, y, err := parseInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

// parseInterval parses "x" or "x-y" (x < y), both below completions, in upstream's words.
func parseInterval(s string, completions int32) (int32, int32, error) {
	limits := strings.Split(s, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	bound := func(v string) (int32, error) {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("cannot convert string to integer for index: %q", v)
		}
		if n >= int(completions) {
			return 0, fmt.Errorf("too large index: %q", v)
		}
		return int32(n), nil
	}
	x, err := bound(limits[0])
	if err != nil {
		return 0, 0, err
	}
	if len(limits) == 1 {
		return x, x, nil
	}
	y, err := bound(limits[1])
	if err != nil {
		return 0, 0, err
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return x, y, nil
}

// indexesOverlap reports the first index both lists hold; lists that do not parse are
// skipped interval by interval (their format is reported on its own).
func indexesOverlap(completed, failed string, completions int32) error {
	if completed == "" || failed == "" {
		return nil
	}
	cs, fs := strings.Split(completed, ","), strings.Split(failed, ",")
	ci, fi := 0, 0
	cx, cy, cErr := parseInterval(cs[0], completions)
	fx, fy, fErr := parseInterval(fs[0], completions)
	for ci < len(cs) && fi < len(fs) {
		switch {
		case cErr != nil:
			if ci++; ci < len(cs) {
				cx, cy, cErr = parseInterval(cs[ci], completions)
			}
		case fErr != nil:
			if fi++; fi < len(fs) {
				fx, fy, fErr = parseInterval(fs[fi], completions)
			}
		case cx <= fy && fx <= cy:
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(cx, fx))
		case cx <= fx:
			if ci++; ci < len(cs) {
				cx, cy, cErr = parseInterval(cs[ci], completions)
			}
		default:
			if fi++; fi < len(fs) {
				fx, fy, fErr = parseInterval(fs[fi], completions)
			}
		}
	}
	return nil
}
