// Package noderesources holds the plugins that weigh a pod's resource requests against a
// node: NodeResourcesFit, at PreFilter/Filter in findNodesThatFitPod (does the pod fit in what
// the node has left?) and at PreScore/Score in prioritizeNodes (LeastAllocated,
// MostAllocated or RequestedToCapacityRatio), and NodeResourcesBalancedAllocation, at
// PreScore/Score only (prefer nodes whose resources end up used evenly).
//
// Fits, the pure check behind Filter, is exported for the node agent's admission, which
// asks the same question when a pod arrives on its node.
package noderesources

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// Name is the plugin's name in kube-scheduler's configuration.
const Name = "NodeResourcesFit"

const (
	preFilterStateKey framework.StateKey = "PreFilter" + Name
	preScoreStateKey  framework.StateKey = "PreScore" + Name
)

// The reasons users read in "0/3 nodes are available: 2 Insufficient cpu, ...", as
// kube-scheduler words them. Extended resources get "Insufficient <name>", built once per
// scheduling cycle in PreFilter.
const (
	ReasonTooManyPods                  = "Too many pods"
	ReasonInsufficientCPU              = "Insufficient cpu"
	ReasonInsufficientMemory           = "Insufficient memory"
	ReasonInsufficientEphemeralStorage = "Insufficient ephemeral-storage"
)

var (
	_ framework.PreFilterPlugin   = &Fit{}
	_ framework.FilterPlugin      = &Fit{}
	_ framework.PreScorePlugin    = &Fit{}
	_ framework.ScorePlugin       = &Fit{}
	_ framework.EnqueueExtensions = &Fit{}
)

// Fit is the NodeResourcesFit plugin.
type Fit struct {
	ignoredResources      sets.Set[string]
	ignoredResourceGroups sets.Set[string]
	scorer                *resourceAllocationScorer
}

// New builds NodeResourcesFit from *configv1.NodeResourcesFitArgs, or nil for the defaults.
func New(_ context.Context, obj runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	args, err := fitArgs(obj)
	if err != nil {
		return nil, err
	}
	return &Fit{
		ignoredResources:      sets.New(args.IgnoredResources...),
		ignoredResourceGroups: sets.New(args.IgnoredResourceGroups...),
		scorer:                newStrategyScorer(args.ScoringStrategy),
	}, nil
}

// Name returns Name.
func (f *Fit) Name() string { return Name }

// scalarRequest is one extended resource (or hugepage size) the pod asks for.
type scalarRequest struct {
	name     v1.ResourceName
	quantity int64
	reason   string
}

// podRequest is what the pod asks of a node, in the units the node's sums are kept in.
// Scalar resources with a zero quantity, and ignored extended resources, are left out, so
// Filter looks at nothing it would skip. It is PreFilter's state and never changes after.
type podRequest struct {
	milliCPU, memory, ephemeralStorage int64
	scalars                            []scalarRequest // sorted by name, for stable reasons
	// reasons is Filter's reason table (reasonTable); nil outside PreFilter's state, or
	// when the pod asks for more than maxTabledScalars extended resources.
	reasons [][]string
}

// Clone shares the state: it is read-only.
func (r *podRequest) Clone() framework.StateData { return r }

// computePodRequest adds up the pod's requests the way the node agent will reserve them: the
// larger of the biggest init container and the app containers plus sidecars, or the
// pod-level requests where set, plus the overhead.
func computePodRequest(pod *v1.Pod, ignored, ignoredGroups sets.Set[string]) *podRequest {
	r := &podRequest{}
	for name, q := range framework.PodRequests(pod) {
		switch name {
		case v1.ResourceCPU:
			r.milliCPU = q.MilliValue()
		case v1.ResourceMemory:
			r.memory = q.Value()
		case v1.ResourceEphemeralStorage:
			r.ephemeralStorage = q.Value()
		default:
			if !framework.IsScalarResourceName(name) || q.IsZero() || isIgnored(name, ignored, ignoredGroups) {
				continue
			}
			r.scalars = append(r.scalars, scalarRequest{name: name, quantity: q.Value(), reason: "Insufficient " + string(name)})
		}
	}
	slices.SortFunc(r.scalars, func(a, b scalarRequest) int { return strings.Compare(string(a.name), string(b.name)) })
	return r
}

// isIgnored applies IgnoredResources and IgnoredResourceGroups, which cover extended
// resources only (example.com/gpu, not hugepages or kubernetes.io/ ones).
func isIgnored(name v1.ResourceName, ignored, ignoredGroups sets.Set[string]) bool {
	if !isExtendedResourceName(name) {
		return false
	}
	if ignored.Has(string(name)) {
		return true
	}
	group, _, _ := strings.Cut(string(name), "/")
	return ignoredGroups.Has(group)
}

// isExtendedResourceName is a resource that is neither native (no domain, or a
// kubernetes.io domain) nor a quota "requests." name.
func isExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	return strings.Contains(s, "/") && !strings.Contains(s, v1.ResourceDefaultNamespacePrefix) &&
		!strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix)
}

// PreFilter adds up the pod's requests once for the cycle.
func (f *Fit) PreFilter(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	state.Write(preFilterStateKey, computePodRequest(pod, f.ignoredResources, f.ignoredResourceGroups).withReasons())
	return nil, nil
}

// PreFilterExtensions is nil: the pod's requests do not depend on other pods.
func (f *Fit) PreFilterExtensions() framework.PreFilterExtensions { return nil }

func getPodRequest(state *framework.CycleState) (*podRequest, error) {
	c, err := state.Read(preFilterStateKey)
	if err != nil {
		return nil, fmt.Errorf("error reading %q from cycleState: %w", preFilterStateKey, err)
	}
	r, ok := c.(*podRequest)
	if !ok {
		return nil, fmt.Errorf("%+v convert to NodeResourcesFit.preFilterState error", c)
	}
	return r, nil
}

// InsufficientResource is a resource the node has too little of for the pod.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	// Reason is what users read: "Insufficient cpu", "Too many pods".
	Reason    string
	Requested int64
	Used      int64
	Capacity  int64
	// Unresolvable: the pod asks for more than the node has at all, so evicting pods from
	// it (preemption) cannot help.
	Unresolvable bool
}

// Fits reports what the node lacks for the pod, nothing when it fits: room for one more
// pod, then cpu, memory, ephemeral-storage and each extended resource the pod requests,
// against the node's allocatable minus what its pods already requested.
func Fits(pod *v1.Pod, nodeInfo *framework.NodeInfo) []InsufficientResource {
	return fitsRequest(computePodRequest(pod, nil, nil), nodeInfo, nil)
}

// fitsRequest appends to out what the node lacks for r. Filter passes a buffer on its stack
// so that a node that does not fit costs no allocation beyond its Status.
func fitsRequest(r *podRequest, ni *framework.NodeInfo, out []InsufficientResource) []InsufficientResource {
	alloc, used := ni.Allocatable, ni.Requested
	if pods := int64(len(ni.Pods)); pods+1 > alloc.AllowedPodNumber {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourcePods, Reason: ReasonTooManyPods,
			Requested: 1, Used: pods, Capacity: alloc.AllowedPodNumber,
		})
	}
	if r.milliCPU > 0 && r.milliCPU > alloc.MilliCPU-used.MilliCPU {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourceCPU, Reason: ReasonInsufficientCPU,
			Requested: r.milliCPU, Used: used.MilliCPU, Capacity: alloc.MilliCPU,
			Unresolvable: r.milliCPU > alloc.MilliCPU,
		})
	}
	if r.memory > 0 && r.memory > alloc.Memory-used.Memory {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourceMemory, Reason: ReasonInsufficientMemory,
			Requested: r.memory, Used: used.Memory, Capacity: alloc.Memory,
			Unresolvable: r.memory > alloc.Memory,
		})
	}
	if r.ephemeralStorage > 0 && r.ephemeralStorage > alloc.EphemeralStorage-used.EphemeralStorage {
		out = append(out, InsufficientResource{
			ResourceName: v1.ResourceEphemeralStorage, Reason: ReasonInsufficientEphemeralStorage,
			Requested: r.ephemeralStorage, Used: used.EphemeralStorage, Capacity: alloc.EphemeralStorage,
			Unresolvable: r.ephemeralStorage > alloc.EphemeralStorage,
		})
	}
	for i := range r.scalars {
		s := &r.scalars[i]
		capacity, inUse := alloc.ScalarResources[s.name], used.ScalarResources[s.name]
		if s.quantity > capacity-inUse {
			out = append(out, InsufficientResource{
				ResourceName: s.name, Reason: s.reason,
				Requested: s.quantity, Used: inUse, Capacity: capacity,
				Unresolvable: s.quantity > capacity,
			})
		}
	}
	return out
}

// Filter says whether the pod fits in what the node has left. Every missing resource is a
// reason; the status is UnschedulableAndUnresolvable when the pod asks for more of some
// resource than the node has in all, since preemption cannot help then.
func (f *Fit) Filter(_ context.Context, state *framework.CycleState, _ *v1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	r, err := getPodRequest(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	var buf [4]InsufficientResource
	insufficient := fitsRequest(r, nodeInfo, buf[:0])
	if len(insufficient) == 0 {
		return nil
	}
	return r.rejection(insufficient)
}

// A rejection's reasons are looked up by a mask of what is missing: bit 0 pods, 1 cpu,
// 2 memory, 3 ephemeral-storage, 4+i the pod's i-th extended resource.
const (
	bitPods = 1 << iota
	bitCPU
	bitMemory
	bitEphemeralStorage
	firstScalarBit = iota
)

// maxTabledScalars bounds the per-cycle reason table (2^(4+n) entries) for pods with
// extended resources; pods with more allocate their reasons per rejected node.
const maxTabledScalars = 3

// fixedReasons is the reason table of pods without extended resources, shared by all.
var fixedReasons = reasonTable(nil)

// reasonTable lists, for each mask, the reasons in Filter's order, so that a rejection
// allocates only its Status. All lists share one array; each has len == cap, so an append
// by a reader of a Status copies rather than writes into another list.
func reasonTable(scalars []scalarRequest) [][]string {
	names := []string{ReasonTooManyPods, ReasonInsufficientCPU, ReasonInsufficientMemory, ReasonInsufficientEphemeralStorage}
	for _, s := range scalars {
		names = append(names, s.reason)
	}
	size := 1 << len(names)
	backing := make([]string, 0, len(names)*size/2) // each name is in half the masks
	table := make([][]string, size)
	for mask := 1; mask < size; mask++ {
		start := len(backing)
		for bit, name := range names {
			if mask&(1<<bit) != 0 {
				backing = append(backing, name)
			}
		}
		table[mask] = backing[start:len(backing):len(backing)]
	}
	return table
}

// withReasons prepares r for Filter: its reason table.
func (r *podRequest) withReasons() *podRequest {
	switch {
	case len(r.scalars) == 0:
		r.reasons = fixedReasons
	case len(r.scalars) <= maxTabledScalars:
		r.reasons = reasonTable(r.scalars)
	}
	return r
}

func (r *podRequest) rejection(insufficient []InsufficientResource) *framework.Status {
	code := framework.Unschedulable
	mask := 0
	for i := range insufficient {
		if insufficient[i].Unresolvable {
			code = framework.UnschedulableAndUnresolvable
		}
		switch name := insufficient[i].ResourceName; name {
		case v1.ResourcePods:
			mask |= bitPods
		case v1.ResourceCPU:
			mask |= bitCPU
		case v1.ResourceMemory:
			mask |= bitMemory
		case v1.ResourceEphemeralStorage:
			mask |= bitEphemeralStorage
		default:
			for j := range r.scalars {
				if r.scalars[j].name == name {
					mask |= 1 << (firstScalarBit + j)
					break
				}
			}
		}
	}
	if r.reasons != nil {
		return framework.NewStatus(code, r.reasons[mask]...)
	}
	reasons := make([]string, len(insufficient))
	for i := range insufficient {
		reasons[i] = insufficient[i].Reason
	}
	return framework.NewStatus(code, reasons...)
}

// scoreState is the pod's request per scored resource, in the order of the configured
// resources.
type scoreState struct {
	podRequests []int64
}

// Clone shares the state: it is read-only.
func (s *scoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests for the scored resources once per cycle; a pod that
// asks for no cpu or memory counts as 100m and 200Mi, so it still spreads.
func (f *Fit) PreScore(_ context.Context, state *framework.CycleState, pod *v1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(preScoreStateKey, &scoreState{podRequests: f.scorer.podRequests(pod)})
	return nil
}

// Score rates the node by the configured strategy, 0..100.
func (f *Fit) Score(_ context.Context, state *framework.CycleState, pod *v1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	var podRequests []int64
	if c, err := state.Read(preScoreStateKey); err == nil {
		if s, ok := c.(*scoreState); ok {
			podRequests = s.podRequests
		}
	}
	if podRequests == nil {
		// PreScore did not run (as in some callers of the runner); compute here.
		podRequests = f.scorer.podRequests(pod)
	}
	return f.scorer.score(nodeInfo, podRequests), nil
}

// ScoreExtensions is nil: scores are already 0..100.
func (f *Fit) ScoreExtensions() framework.ScoreExtensions { return nil }

// podResourceOptions are the options kube-scheduler 1.37 computes pod requests with for
// scoring and queueing hints (in-place resize is GA, pod-level resize beta and on).
func podResourceOptions() resourcehelper.PodResourcesOptions {
	return resourcehelper.PodResourcesOptions{UseStatusResources: true, InPlacePodLevelResourcesVerticalScalingEnabled: true}
}
