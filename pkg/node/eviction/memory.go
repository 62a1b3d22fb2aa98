package eviction

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Memory pressure: when memory.available falls below the hard threshold, the node reports
// MemoryPressure and evicts one pod per monitoring interval, ranked as the kubelet ranks them:
// pods using more memory than they request first, then lower priority, then larger use above
// the request. Critical pods (static, mirror, system-node-critical priority) are never chosen.

// MemorySignals reads what memory pressure is judged on.
type MemorySignals struct {
	// Available is the node's memory.available (capacity minus working set), in bytes.
	Available func() (int64, error)
	// PodUsage is each running container's memory working set, by pod UID and container name.
	PodUsage func(ctx context.Context) (map[types.UID]map[string]uint64, error)
	// Threshold is memory.available's hard eviction threshold (100Mi).
	Threshold resource.Quantity
	// Recorder and Node receive the EvictionThresholdMet event.
	Recorder record.EventRecorder
	Node     *v1.ObjectReference
}

// WithMemoryPressure makes the Manager watch memory.available too.
func (m *Manager) WithMemoryPressure(s MemorySignals) *Manager {
	m.memory = &s
	return m
}

// IsUnderMemoryPressure reports the last observation (nodestatus's PressureSource).
func (m *Manager) IsUnderMemoryPressure() bool { return m.memoryPressure.Load() }

// IsUnderDiskPressure and IsUnderPIDPressure: those signals are not watched yet.
func (m *Manager) IsUnderDiskPressure() bool { return false }
func (m *Manager) IsUnderPIDPressure() bool  { return false }

// reclaimMemory evicts the first-ranked pod when memory.available is below the threshold.
func (m *Manager) reclaimMemory(ctx context.Context, pods []*v1.Pod) {
	if m.memory == nil {
		return
	}
	logger := klog.FromContext(ctx)
	available, err := m.memory.Available()
	if err != nil {
		logger.Error(err, "Reading memory.available")
		return
	}
	threshold := m.memory.Threshold.Value()
	under := available < threshold
	was := m.memoryPressure.Swap(under)
	if !under {
		return
	}
	if !was && m.memory.Recorder != nil && m.memory.Node != nil {
		m.memory.Recorder.Eventf(m.memory.Node, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", v1.ResourceMemory)
	}
	usage, err := m.memory.PodUsage(ctx)
	if err != nil {
		logger.Error(err, "Reading the pods' memory usage")
		return
	}
	var candidates []*v1.Pod
	for _, p := range pods {
		if !isCritical(p) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		logger.Info("Eviction manager: no pod to evict for memory")
		return
	}
	rankMemoryPressure(candidates, usage)
	victim := candidates[0]
	msg := memoryMessage(victim, usage[victim.UID], m.memory.Threshold, available)
	logger.Info("Evicting pod for memory pressure", "pod", klog.KObj(victim), "available", available, "threshold", threshold)
	m.evict(victim, msg)
}

// isCritical: static and mirror pods and system-node-critical ones are not evicted.
func isCritical(p *v1.Pod) bool {
	if src := p.Annotations["kubernetes.io/config.source"]; src != "" && src != "api" {
		return true
	}
	if _, mirror := p.Annotations["kubernetes.io/config.mirror"]; mirror {
		return true
	}
	return p.Spec.Priority != nil && *p.Spec.Priority >= 2000001000
}

func podMemoryUsage(usage map[string]uint64) int64 {
	var total uint64
	for _, u := range usage {
		total += u
	}
	return int64(total)
}

func podMemoryRequest(p *v1.Pod) int64 {
	var total int64
	for _, c := range p.Spec.Containers {
		total += c.Resources.Requests.Memory().Value()
	}
	return total
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// rankMemoryPressure orders pods for eviction: over their requests first, then by priority,
// then by how far usage exceeds the request.
func rankMemoryPressure(pods []*v1.Pod, usage map[types.UID]map[string]uint64) {
	sort.SliceStable(pods, func(i, j int) bool {
		ui, uj := podMemoryUsage(usage[pods[i].UID]), podMemoryUsage(usage[pods[j].UID])
		ri, rj := podMemoryRequest(pods[i]), podMemoryRequest(pods[j])
		if ei, ej := ui > ri, uj > rj; ei != ej {
			return ei
		}
		if pi, pj := priority(pods[i]), priority(pods[j]); pi != pj {
			return pi < pj
		}
		return ui-ri > uj-rj
	})
}

// memoryMessage is the kubelet's eviction message for memory.
func memoryMessage(p *v1.Pod, usage map[string]uint64, threshold resource.Quantity, available int64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %v. ", v1.ResourceMemory)
	fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", threshold.String(), fmt.Sprintf("%dKi", available/1024))
	for _, c := range p.Spec.Containers {
		used, ok := usage[c.Name]
		req := c.Resources.Requests.Memory()
		if ok && int64(used) > req.Value() {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ",
				c.Name, fmt.Sprintf("%dKi", used/1024), req.String(), v1.ResourceMemory)
		}
	}
	return b.String()
}
