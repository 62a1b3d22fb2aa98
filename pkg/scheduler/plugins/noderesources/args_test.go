package noderesources

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"
)

func TestFitArgs(t *testing.T) {
	rtcr := func(shape ...configv1.UtilizationShapePoint) *configv1.NodeResourcesFitArgs {
		return &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type:                     configv1.RequestedToCapacityRatio,
			RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{Shape: shape},
		}}
	}
	pt := func(u, s int32) configv1.UtilizationShapePoint {
		return configv1.UtilizationShapePoint{Utilization: u, Score: s}
	}
	weights := func(typ configv1.ScoringStrategyType, specs ...configv1.ResourceSpec) *configv1.NodeResourcesFitArgs {
		return &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{Type: typ, Resources: specs}}
	}
	defaults := []scoredResource{{name: v1.ResourceCPU, weight: 1}, {name: v1.ResourceMemory, weight: 1}}
	for _, tc := range []struct {
		name          string
		args          runtime.Object
		wantErr       string
		wantStrategy  strategy
		wantResources []scoredResource
		wantShape     []shapePoint
	}{
		{name: "nil means the defaults", args: nil, wantStrategy: leastAllocated, wantResources: defaults},
		{name: "typed nil means the defaults", args: (*configv1.NodeResourcesFitArgs)(nil), wantStrategy: leastAllocated, wantResources: defaults},
		{name: "empty args mean the defaults", args: &configv1.NodeResourcesFitArgs{}, wantStrategy: leastAllocated, wantResources: defaults},
		{name: "no resources means cpu and memory", args: weights(configv1.MostAllocated), wantStrategy: mostAllocated, wantResources: defaults},
		{name: "weight 0 means 1", args: weights(configv1.MostAllocated, configv1.ResourceSpec{Name: "example.com/gpu"}, configv1.ResourceSpec{Name: "cpu", Weight: 3}),
			wantStrategy: mostAllocated, wantResources: []scoredResource{{name: "example.com/gpu", weight: 1, scalar: true}, {name: v1.ResourceCPU, weight: 3}}},
		{name: "shape scores scale to 0..100", args: rtcr(pt(0, 0), pt(50, 10), pt(100, 3)), wantStrategy: requestedToCapacityRatio,
			wantResources: defaults, wantShape: []shapePoint{{0, 0}, {50, 100}, {100, 30}}},
		{name: "wrong args type", args: &configv1.NodeResourcesBalancedAllocationArgs{},
			wantErr: "want args to be of type NodeResourcesFitArgs, got *v1.NodeResourcesBalancedAllocationArgs"},
		{name: "negative weight", args: weights(configv1.LeastAllocated, configv1.ResourceSpec{Name: "memory", Weight: -1}),
			wantErr: "scoringStrategy.resources[0].weight: Invalid value: -1: resource weight of memory not in valid range (0, 100]"},
		{name: "weight above 100", args: weights(configv1.LeastAllocated, configv1.ResourceSpec{Name: "memory", Weight: 1}, configv1.ResourceSpec{Name: "cpu", Weight: 101}),
			wantErr: "scoringStrategy.resources[1].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]"},
		{name: "unknown strategy", args: weights("Spread"),
			wantErr: `scoringStrategy.type: Unsupported value: "Spread": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`},
		{name: "a strategy needs a type", args: weights(""), wantErr: `scoringStrategy.type: Unsupported value: ""`},
		{name: "RequestedToCapacityRatio needs its parameters", args: weights(configv1.RequestedToCapacityRatio),
			wantErr: "scoringStrategy.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"},
		{name: "shape needs a point", args: rtcr(), wantErr: "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified"},
		{name: "shape must ascend", args: rtcr(pt(10, 1), pt(10, 2)),
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 10: values must be sorted in increasing order"},
		{name: "utilization within 0..100", args: rtcr(pt(0, 1), pt(101, 2)),
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[1].utilization: Invalid value: 101: not in valid range [0, 100]"},
		{name: "score within 0..10", args: rtcr(pt(0, 11)),
			wantErr: "scoringStrategy.requestedToCapacityRatio.shape[0].score: Invalid value: 11: not in valid range [0, 10]"},
		{name: "shape only with RequestedToCapacityRatio", args: &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
			Type: configv1.MostAllocated, RequestedToCapacityRatio: &configv1.RequestedToCapacityRatioParam{},
		}}, wantErr: "scoringStrategy.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"},
		{name: "ignored resource must be a valid name", args: &configv1.NodeResourcesFitArgs{IgnoredResources: []string{"-bad-"}},
			wantErr: "ignoredResources[0]: Invalid value: \"-bad-\""},
		{name: "ignored group without slash", args: &configv1.NodeResourcesFitArgs{IgnoredResourceGroups: []string{"example.com/gpu"}},
			wantErr: "ignoredResourceGroups[0]: Invalid value: \"example.com/gpu\": resource group name can't contain '/'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(context.Background(), tc.args, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := p.(*Fit).scorer
			if s.strategy != tc.wantStrategy || s.useRequested {
				t.Errorf("strategy %v (useRequested %v), want %v", s.strategy, s.useRequested, tc.wantStrategy)
			}
			if d := diff(tc.wantResources, s.resources); d != "" {
				t.Errorf("resources:\n%s", d)
			}
			if d := diff(tc.wantShape, s.shape); d != "" {
				t.Errorf("shape:\n%s", d)
			}
		})
	}
}

func TestFitArgsAreNotChanged(t *testing.T) {
	args := &configv1.NodeResourcesFitArgs{ScoringStrategy: &configv1.ScoringStrategy{
		Type: configv1.LeastAllocated, Resources: []configv1.ResourceSpec{{Name: "cpu"}},
	}}
	if _, err := New(context.Background(), args, nil); err != nil {
		t.Fatal(err)
	}
	if args.ScoringStrategy.Resources[0].Weight != 0 {
		t.Errorf("New defaulted the caller's args")
	}
}

func TestBalancedAllocationArgs(t *testing.T) {
	for _, tc := range []struct {
		name          string
		args          runtime.Object
		wantErr       string
		wantResources []scoredResource
	}{
		{name: "nil means cpu and memory", wantResources: []scoredResource{{name: v1.ResourceCPU, weight: 1}, {name: v1.ResourceMemory, weight: 1}}},
		{name: "weight 0 means 1", args: &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}, {Name: "example.com/gpu"}}},
			wantResources: []scoredResource{{name: v1.ResourceCPU, weight: 1}, {name: "example.com/gpu", weight: 1, scalar: true}}},
		{name: "weights must be 1", args: &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu", Weight: 2}}},
			wantErr: "resources[0].weight: Invalid value: 2: must be 1"},
		{name: "no resource twice", args: &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}, {Name: "cpu"}}},
			wantErr: `resources[1].name: Duplicate value: "cpu"`},
		{name: "wrong args type", args: &configv1.NodeResourcesFitArgs{},
			wantErr: "want args to be of type NodeResourcesBalancedAllocationArgs, got *v1.NodeResourcesFitArgs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewBalancedAllocation(context.Background(), tc.args, nil)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := p.(*BalancedAllocation).scorer
			if s.strategy != balancedAllocation || !s.useRequested {
				t.Errorf("strategy %v (useRequested %v), want balanced on real requests", s.strategy, s.useRequested)
			}
			if d := diff(tc.wantResources, s.resources); d != "" {
				t.Errorf("resources:\n%s", d)
			}
		})
	}
}
