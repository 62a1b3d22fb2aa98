package noderesources

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	configv1 "k8s.io/kube-scheduler/config/v1"
)

// maxCustomPriorityScore is the largest score a RequestedToCapacityRatio shape point may
// have; scores are scaled by MaxNodeScore/maxCustomPriorityScore to 0..100.
const maxCustomPriorityScore = 10

// defaultResources are what both plugins weigh when the configuration names none.
func defaultResources() []configv1.ResourceSpec {
	return []configv1.ResourceSpec{
		{Name: string(v1.ResourceCPU), Weight: 1},
		{Name: string(v1.ResourceMemory), Weight: 1},
	}
}

// SetDefaultFitArgs fills in what kube-scheduler's v1 defaults fill in: LeastAllocated over
// cpu and memory, and weight 1 for resources that give none.
func SetDefaultFitArgs(args *configv1.NodeResourcesFitArgs) {
	if args.ScoringStrategy == nil {
		args.ScoringStrategy = &configv1.ScoringStrategy{Type: configv1.LeastAllocated}
	}
	s := args.ScoringStrategy
	if len(s.Resources) == 0 {
		s.Resources = defaultResources()
	}
	for i := range s.Resources {
		if s.Resources[i].Weight == 0 {
			s.Resources[i].Weight = 1
		}
	}
}

// SetDefaultBalancedAllocationArgs fills in kube-scheduler's v1 defaults: cpu and memory,
// weight 1.
func SetDefaultBalancedAllocationArgs(args *configv1.NodeResourcesBalancedAllocationArgs) {
	if len(args.Resources) == 0 {
		args.Resources = defaultResources()
		return
	}
	for i := range args.Resources {
		if args.Resources[i].Weight == 0 {
			args.Resources[i].Weight = 1
		}
	}
}

var supportedStrategies = sets.New(
	string(configv1.LeastAllocated), string(configv1.MostAllocated), string(configv1.RequestedToCapacityRatio))

// ValidateFitArgs checks defaulted args as kube-scheduler does, with its messages.
func ValidateFitArgs(args *configv1.NodeResourcesFitArgs) error {
	var errs field.ErrorList
	for i, res := range args.IgnoredResources {
		errs = append(errs, metav1validation.ValidateLabelName(res, field.NewPath("ignoredResources").Index(i))...)
	}
	for i, group := range args.IgnoredResourceGroups {
		p := field.NewPath("ignoredResourceGroups").Index(i)
		if strings.Contains(group, "/") {
			errs = append(errs, field.Invalid(p, group, "resource group name can't contain '/'"))
		}
		errs = append(errs, metav1validation.ValidateLabelName(group, p)...)
	}
	sp := field.NewPath("scoringStrategy")
	s := args.ScoringStrategy
	if s == nil {
		errs = append(errs, field.Required(sp, "ScoringStrategy field is required"))
		return errs.ToAggregate()
	}
	if !supportedStrategies.Has(string(s.Type)) {
		errs = append(errs, field.NotSupported(sp.Child("type"), s.Type, sets.List(supportedStrategies)))
	}
	errs = append(errs, validateWeights(s.Resources, sp.Child("resources"))...)
	rp := sp.Child("requestedToCapacityRatio")
	switch {
	case s.Type == configv1.RequestedToCapacityRatio && s.RequestedToCapacityRatio == nil:
		errs = append(errs, field.Required(rp, "must be specified when type is RequestedToCapacityRatio"))
	case s.Type == configv1.RequestedToCapacityRatio:
		errs = append(errs, validateShape(s.RequestedToCapacityRatio.Shape, rp.Child("shape"))...)
	case s.RequestedToCapacityRatio != nil:
		errs = append(errs, field.Forbidden(rp, "must be nil when type is not RequestedToCapacityRatio"))
	}
	return errs.ToAggregate()
}

// ValidateBalancedAllocationArgs checks defaulted args: no resource twice, every weight 1
// (the score is a standard deviation; weights mean nothing there).
func ValidateBalancedAllocationArgs(args *configv1.NodeResourcesBalancedAllocationArgs) error {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, res := range args.Resources {
		p := field.NewPath("resources").Index(i)
		if seen.Has(res.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), res.Name))
		}
		seen.Insert(res.Name)
		if res.Weight != 1 {
			errs = append(errs, field.Invalid(p.Child("weight"), res.Weight, "must be 1"))
		}
	}
	return errs.ToAggregate()
}

func validateWeights(resources []configv1.ResourceSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, res := range resources {
		if res.Weight <= 0 || res.Weight > 100 {
			errs = append(errs, field.Invalid(p.Index(i).Child("weight"), res.Weight,
				fmt.Sprintf("resource weight of %v not in valid range (0, 100]", res.Name)))
		}
	}
	return errs
}

// validateShape wants at least one point, utilizations strictly increasing within 0..100,
// scores within 0..10.
func validateShape(shape []configv1.UtilizationShapePoint, p *field.Path) field.ErrorList {
	if len(shape) == 0 {
		return field.ErrorList{field.Required(p, "at least one point must be specified")}
	}
	var errs field.ErrorList
	for i := 1; i < len(shape); i++ {
		if shape[i-1].Utilization >= shape[i].Utilization {
			errs = append(errs, field.Invalid(p.Index(i).Child("utilization"), shape[i].Utilization, "values must be sorted in increasing order"))
			break
		}
	}
	for i, pt := range shape {
		if pt.Utilization < 0 || pt.Utilization > maxUtilization {
			errs = append(errs, field.Invalid(p.Index(i).Child("utilization"), pt.Utilization,
				fmt.Sprintf("not in valid range [0, %d]", maxUtilization)))
		}
		if pt.Score < 0 || pt.Score > maxCustomPriorityScore {
			errs = append(errs, field.Invalid(p.Index(i).Child("score"), pt.Score,
				fmt.Sprintf("not in valid range [0, %d]", maxCustomPriorityScore)))
		}
	}
	return errs
}

// fitArgs returns a defaulted, validated copy of the args New was given (nil means defaults).
func fitArgs(obj runtime.Object) (*configv1.NodeResourcesFitArgs, error) {
	args := &configv1.NodeResourcesFitArgs{}
	switch a := obj.(type) {
	case nil:
	case *configv1.NodeResourcesFitArgs:
		if a != nil {
			args = a.DeepCopy()
		}
	default:
		return nil, fmt.Errorf("want args to be of type NodeResourcesFitArgs, got %T", obj)
	}
	SetDefaultFitArgs(args)
	if err := ValidateFitArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}

// balancedAllocationArgs is fitArgs for NodeResourcesBalancedAllocation.
func balancedAllocationArgs(obj runtime.Object) (*configv1.NodeResourcesBalancedAllocationArgs, error) {
	args := &configv1.NodeResourcesBalancedAllocationArgs{}
	switch a := obj.(type) {
	case nil:
	case *configv1.NodeResourcesBalancedAllocationArgs:
		if a != nil {
			args = a.DeepCopy()
		}
	default:
		return nil, fmt.Errorf("want args to be of type NodeResourcesBalancedAllocationArgs, got %T", obj)
	}
	SetDefaultBalancedAllocationArgs(args)
	if err := ValidateBalancedAllocationArgs(args); err != nil {
		return nil, err
	}
	return args, nil
}
