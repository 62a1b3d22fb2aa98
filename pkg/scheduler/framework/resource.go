package framework

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Resource is an amount of compute resources in the units the scheduler adds up: milli-CPU,
// bytes, pod count, and integer amounts of extended resources.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is meaningful for allocatable only: how many pods the node takes.
	AllowedPodNumber int64
	// ScalarResources are extended resources (example.com/gpu) and hugepages.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) *Resource {
	r := &Resource{}
	r.Add(rl)
	return r
}

// Add adds a ResourceList.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += q.Value()
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddScalar adds an amount of an extended resource.
func (r *Resource) AddScalar(name v1.ResourceName, quantity int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += quantity
}

// AddResource adds another Resource.
func (r *Resource) AddResource(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, v)
	}
}

// SubResource subtracts another Resource.
func (r *Resource) SubResource(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, -v)
	}
}

// Clone copies r.
func (r *Resource) Clone() *Resource {
	out := *r
	if r.ScalarResources != nil {
		out.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			out.ScalarResources[k] = v
		}
	}
	return &out
}

// IsScalarResourceName reports whether name is counted as an integer: an extended resource
// (example.com/gpu), a prefixed native one, a hugepage size or an attachable-volumes count.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, v1.ResourceHugePagesPrefix) ||
		strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) ||
		(strings.Contains(s, "/") && !strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix))
}

// Defaults that the scheduler assumes for a container that requests nothing, so that such
// pods still spread (used by scoring, never by fitting), as kube-scheduler does.
const (
	DefaultMilliCPURequest int64 = 100               // 0.1 core
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024 // 200 MiB
)

// PodRequests returns what a pod asks of a node: the larger of its init containers' and the
// sum of its app containers' (and sidecars') requests, plus its overhead; pod-level resources
// when set.
func PodRequests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
}

// podNonZeroRequests is PodRequests with the defaults above for cpu and memory left unset.
func podNonZeroRequests(pod *v1.Pod) (milliCPU, memory int64) {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{
		NonMissingContainerRequests: v1.ResourceList{
			v1.ResourceCPU:    *resourceQuantity(DefaultMilliCPURequest, true),
			v1.ResourceMemory: *resourceQuantity(DefaultMemoryRequest, false),
		},
	})
	return reqs.Cpu().MilliValue(), reqs.Memory().Value()
}
