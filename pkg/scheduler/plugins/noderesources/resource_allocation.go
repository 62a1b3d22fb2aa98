package noderesources

import (
	"math"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// strategy is how resourceAllocationScorer turns per-resource usage into a node score.
type strategy int

const (
	leastAllocated strategy = iota
	mostAllocated
	requestedToCapacityRatio
	balancedAllocation
)

// maxUtilization is 100 %, the top of a RequestedToCapacityRatio shape.
const maxUtilization = 100

// scoredResource is a resource a scorer weighs.
type scoredResource struct {
	name   v1.ResourceName
	weight int64
	// scalar resources are skipped for pods that do not request them, so that a pod
	// without GPUs does not prefer GPU nodes (or avoid them).
	scalar bool
}

// shapePoint is a RequestedToCapacityRatio point with its score already scaled to 0..100.
type shapePoint struct {
	utilization, score int64
}

// resourceAllocationScorer scores a node from, per configured resource, what the node
// offers (allocatable), what its pods already requested (allocated) and that plus the
// incoming pod (requested).
type resourceAllocationScorer struct {
	strategy  strategy
	resources []scoredResource
	// useRequested counts real requests for cpu and memory; otherwise the node's and the
	// pod's non-zero requests (100m and 200Mi for containers that ask for nothing) are used,
	// so that best-effort pods still spread.
	useRequested bool
	shape        []shapePoint
}

func newScorer(s strategy, specs []configv1.ResourceSpec, useRequested bool) *resourceAllocationScorer {
	r := &resourceAllocationScorer{strategy: s, useRequested: useRequested}
	for _, spec := range specs {
		name := v1.ResourceName(spec.Name)
		r.resources = append(r.resources, scoredResource{name: name, weight: spec.Weight, scalar: framework.IsScalarResourceName(name)})
	}
	return r
}

// newStrategyScorer builds the scorer for NodeResourcesFit's (defaulted, valid) strategy.
func newStrategyScorer(s *configv1.ScoringStrategy) *resourceAllocationScorer {
	switch s.Type {
	case configv1.MostAllocated:
		return newScorer(mostAllocated, s.Resources, false)
	case configv1.RequestedToCapacityRatio:
		r := newScorer(requestedToCapacityRatio, s.Resources, false)
		for _, p := range s.RequestedToCapacityRatio.Shape {
			r.shape = append(r.shape, shapePoint{
				utilization: int64(p.Utilization),
				score:       int64(p.Score) * (framework.MaxNodeScore / maxCustomPriorityScore),
			})
		}
		return r
	default:
		return newScorer(leastAllocated, s.Resources, false)
	}
}

// nonZeroDefaults stand in for cpu and memory requests a container leaves unset.
var nonZeroDefaults = v1.ResourceList{
	v1.ResourceCPU:    *resource.NewMilliQuantity(framework.DefaultMilliCPURequest, resource.DecimalSI),
	v1.ResourceMemory: *resource.NewQuantity(framework.DefaultMemoryRequest, resource.BinarySI),
}

// podRequests is the pod's request for each configured resource.
func (r *resourceAllocationScorer) podRequests(pod *v1.Pod) []int64 {
	opts := podResourceOptions()
	if !r.useRequested {
		opts.NonMissingContainerRequests = nonZeroDefaults
	}
	reqs := resourcehelper.PodRequests(pod, opts)
	out := make([]int64, len(r.resources))
	for i, res := range r.resources {
		q := reqs[res.name]
		if res.name == v1.ResourceCPU {
			out[i] = q.MilliValue()
		} else {
			out[i] = q.Value()
		}
	}
	return out
}

// nodeAmounts returns the node's allocatable and already-requested amount of a resource;
// 0 allocatable means the node does not have it and the resource is not scored.
func (r *resourceAllocationScorer) nodeAmounts(ni *framework.NodeInfo, name v1.ResourceName) (allocatable, allocated int64) {
	used := ni.NonZeroRequested
	if r.useRequested {
		used = ni.Requested
	}
	switch name {
	case v1.ResourceCPU:
		return ni.Allocatable.MilliCPU, used.MilliCPU
	case v1.ResourceMemory:
		return ni.Allocatable.Memory, used.Memory
	case v1.ResourceEphemeralStorage:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage
	}
	if a, ok := ni.Allocatable.ScalarResources[name]; ok {
		return a, ni.Requested.ScalarResources[name]
	}
	return 0, 0
}

// score rates the node 0..100. The per-resource vectors live on the stack for up to 8
// resources: Score runs for every feasible node.
func (r *resourceAllocationScorer) score(ni *framework.NodeInfo, podRequests []int64) int64 {
	n := len(r.resources)
	var reqBuf, allocBuf, capBuf [8]int64
	requested, allocated, allocatable := reqBuf[:], allocBuf[:], capBuf[:]
	if n > len(reqBuf) {
		requested, allocated, allocatable = make([]int64, n), make([]int64, n), make([]int64, n)
	}
	requested, allocated, allocatable = requested[:n], allocated[:n], allocatable[:n]
	for i, res := range r.resources {
		if podRequests[i] == 0 && res.scalar {
			continue
		}
		a, used := r.nodeAmounts(ni, res.name)
		if a == 0 {
			continue
		}
		allocatable[i], allocated[i], requested[i] = a, used, used+podRequests[i]
	}
	switch r.strategy {
	case mostAllocated:
		return r.weighted(requested, allocatable, mostRequestedScore)
	case requestedToCapacityRatio:
		return r.capacityRatioScore(requested, allocatable)
	case balancedAllocation:
		return balancedScore(requested, allocated, allocatable)
	default:
		return r.weighted(requested, allocatable, leastRequestedScore)
	}
}

// weighted is the weighted mean of per-resource scores over the resources the node has,
// rounded down.
func (r *resourceAllocationScorer) weighted(requested, allocatable []int64, perResource func(requested, capacity int64) int64) int64 {
	var total, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		w := r.resources[i].weight
		total += perResource(requested[i], allocatable[i]) * w
		weights += w
	}
	if weights == 0 {
		return 0
	}
	return total / weights
}

// leastRequestedScore favours free room: 100 for an empty node, 0 for a full or
// overcommitted one.
func leastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// mostRequestedScore favours full nodes (bin packing); overcommitment counts as full.
func mostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	return min(requested, capacity) * framework.MaxNodeScore / capacity
}

// capacityRatioScore scores each resource by the shape at its utilization (percent, rounded
// down; over capacity is 100 %), and returns the weighted mean, rounded, of the resources
// that scored above 0.
func (r *resourceAllocationScorer) capacityRatioScore(requested, allocatable []int64) int64 {
	var total, weights int64
	for i := range requested {
		if allocatable[i] == 0 {
			continue
		}
		utilization := int64(maxUtilization)
		if requested[i] <= allocatable[i] {
			utilization = requested[i] * maxUtilization / allocatable[i]
		}
		s := shapeScore(r.shape, utilization)
		if s > 0 {
			w := r.resources[i].weight
			total += s * w
			weights += w
		}
	}
	if weights == 0 {
		return 0
	}
	return int64(math.Round(float64(total) / float64(weights)))
}

// shapeScore interpolates linearly between shape points (integer arithmetic, as
// kube-scheduler does); below the first point it is the first score, above the last the last.
func shapeScore(shape []shapePoint, utilization int64) int64 {
	for i, p := range shape {
		if utilization <= p.utilization {
			if i == 0 {
				return p.score
			}
			prev := shape[i-1]
			return prev.score + (p.score-prev.score)*(utilization-prev.utilization)/(p.utilization-prev.utilization)
		}
	}
	return shape[len(shape)-1].score
}

// balancedScore compares the balance with the pod (requested) to the balance without it
// (allocated), centred on 50: a pod that makes the node more balanced scores above 50.
func balancedScore(requested, allocated, allocatable []int64) int64 {
	with := balance(requested, allocatable)
	without := balance(allocated, allocatable)
	return framework.MaxNodeScore/2 + (framework.MaxNodeScore/2+with-without)/2
}

// balance is (1 - standard deviation of the used fractions) * 100, fractions capped at 1, over
// the resources the node has; for two resources the deviation is |a-b|/2.
func balance(used, allocatable []int64) int64 {
	var buf [8]float64
	fractions := buf[:0]
	var sum float64
	for i := range used {
		if allocatable[i] == 0 {
			continue
		}
		f := min(float64(used[i])/float64(allocatable[i]), 1)
		sum += f
		fractions = append(fractions, f)
	}
	std := 0.0
	switch n := len(fractions); {
	case n == 2:
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case n > 2:
		mean := sum / float64(n)
		var sq float64
		for _, f := range fractions {
			sq += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sq / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
