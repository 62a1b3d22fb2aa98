package eviction

import (
	"context"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// observation is a signal's value now: what is available of a capacity.
type observation struct {
	available *resource.Quantity
	capacity  int64
}

// makeObservations reads the signals from the Summary; a signal whose stats are missing is
// not observed (and so never met).
func makeObservations(s *statsapi.Summary) map[Signal]observation {
	out := map[Signal]observation{}
	bytes := func(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.BinarySI) }
	count := func(v uint64) *resource.Quantity { return resource.NewQuantity(int64(v), resource.DecimalSI) }
	if mem := s.Node.Memory; mem != nil && mem.AvailableBytes != nil && mem.WorkingSetBytes != nil {
		out[SignalMemoryAvailable] = observation{bytes(*mem.AvailableBytes), int64(*mem.AvailableBytes + *mem.WorkingSetBytes)}
	}
	fsSignals := func(fs *statsapi.FsStats, avail, inodes Signal) {
		if fs == nil {
			return
		}
		if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
			out[avail] = observation{bytes(*fs.AvailableBytes), int64(*fs.CapacityBytes)}
		}
		if fs.InodesFree != nil && fs.Inodes != nil {
			out[inodes] = observation{count(*fs.InodesFree), int64(*fs.Inodes)}
		}
	}
	fsSignals(s.Node.Fs, SignalNodeFsAvailable, SignalNodeFsInodesFree)
	if s.Node.Runtime != nil {
		fsSignals(s.Node.Runtime.ImageFs, SignalImageFsAvailable, SignalImageFsInodesFree)
	}
	if r := s.Node.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		out[SignalPIDAvailable] = observation{count(uint64(max(*r.MaxPID-*r.NumOfRunningProcesses, 0))), *r.MaxPID}
	}
	return out
}

// thresholdsMet are the thresholds whose signal is below them.
func thresholdsMet(thresholds []Threshold, obs map[Signal]observation) []Threshold {
	var met []Threshold
	for _, t := range thresholds {
		o, ok := obs[t.Signal]
		if ok && o.available.Cmp(*t.value(o.capacity)) < 0 {
			met = append(met, t)
		}
	}
	return met
}

// updateConditions records the conditions of the thresholds met now and reports every
// condition observed within the transition period.
func (m *Manager) updateConditions(met []Threshold) []v1.NodeConditionType {
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range met {
		m.lastObserved[signalCondition[t.Signal]] = now
	}
	m.conditions = nil
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		if at, ok := m.lastObserved[c]; ok && now.Sub(at) < m.cfg.PressureTransitionPeriod {
			m.conditions = append(m.conditions, c)
		}
	}
	return append([]v1.NodeConditionType(nil), m.conditions...)
}

// reclaim acts on the first threshold met: node-level resources first for the disk signals,
// then, if the signal is still short, the first-ranked pod is evicted.
func (m *Manager) reclaim(ctx context.Context, summary *statsapi.Summary, usage map[types.UID]podUsage, pods []*v1.Pod) {
	logger := klog.FromContext(ctx)
	obs := makeObservations(summary)
	met := thresholdsMet(m.cfg.Thresholds, obs)
	m.updateConditions(met)
	if len(met) == 0 {
		return
	}
	t := met[0]
	resourceName := signalResource[t.Signal]
	if m.cfg.Recorder != nil && m.cfg.Node != nil {
		m.cfg.Recorder.Eventf(m.cfg.Node, v1.EventTypeWarning, "EvictionThresholdMet", "Attempting to reclaim %s", resourceName)
	}
	if m.reclaimNodeLevelResources(ctx, t) {
		return
	}
	var candidates []*v1.Pod
	for _, p := range pods {
		if !kubetypes.IsCriticalPod(p) {
			candidates = append(candidates, p)
		}
	}
	if len(candidates) == 0 {
		logger.Info("Eviction manager: no pod to evict", "signal", t.Signal)
		return
	}
	if resourceName == v1.ResourceEphemeralStorage || resourceName == resourceInodes {
		for _, p := range candidates {
			u := usage[p.UID]
			u.volumes = m.localVolumesUsage(ctx, p)
			usage[p.UID] = u
		}
	}
	rank(candidates, resourceName, usage)
	victim := candidates[0]
	o := obs[t.Signal]
	msg := evictionMessage(victim, resourceName, t.value(o.capacity), o.available, usage[victim.UID])
	logger.Info("Evicting pod for node pressure", "pod", klog.KObj(victim), "signal", t.Signal, "available", o.available.String(), "threshold", t.value(o.capacity).String())
	m.cfg.Metrics.ObserveEviction(string(t.Signal))
	m.evict(victim, msg)
}

// reclaimNodeLevelResources runs the garbage collectors for a disk signal and reports
// whether the signal recovered, so that no pod need be evicted.
func (m *Manager) reclaimNodeLevelResources(ctx context.Context, t Threshold) bool {
	if signalCondition[t.Signal] != v1.NodeDiskPressure {
		return false
	}
	logger := klog.FromContext(ctx)
	for _, reclaim := range []func(context.Context) error{m.cfg.DeleteUnusedContainers, m.cfg.DeleteUnusedImages} {
		if reclaim == nil {
			continue
		}
		if err := reclaim(ctx); err != nil {
			logger.Error(err, "Eviction manager: reclaiming node-level resources", "signal", t.Signal)
		}
	}
	summary, err := m.cfg.Summary(ctx)
	if err != nil {
		logger.Error(err, "Eviction manager: reading the stats summary after reclaiming")
		return false
	}
	for _, still := range thresholdsMet(m.cfg.Thresholds, makeObservations(summary)) {
		if still.Signal == t.Signal {
			return false
		}
	}
	logger.Info("Eviction manager: node-level reclaim freed enough, no pod evicted", "signal", t.Signal)
	return true
}

// podUsage is a pod's usage by container, and its local volumes' for disk signals.
type podUsage struct {
	containers map[string]containerUsage
	volumes    int64
}

type containerUsage struct {
	memory, rootfs, logs int64
}

func podUsageOf(s *statsapi.Summary) map[types.UID]podUsage {
	out := map[types.UID]podUsage{}
	for _, ps := range s.Pods {
		u := podUsage{containers: map[string]containerUsage{}}
		for _, cs := range ps.Containers {
			var c containerUsage
			if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
				c.memory = int64(*cs.Memory.WorkingSetBytes)
			}
			if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil {
				c.rootfs = int64(*cs.Rootfs.UsedBytes)
			}
			if cs.Logs != nil && cs.Logs.UsedBytes != nil {
				c.logs = int64(*cs.Logs.UsedBytes)
			}
			u.containers[cs.Name] = c
		}
		out[types.UID(ps.PodRef.UID)] = u
	}
	return out
}

// containerUse is a container's use of the resource, and whether it is measured.
func (u podUsage) containerUse(name string, r v1.ResourceName) (int64, bool) {
	c, ok := u.containers[name]
	if !ok {
		return 0, false
	}
	switch r {
	case v1.ResourceMemory:
		return c.memory, true
	case v1.ResourceEphemeralStorage:
		return c.rootfs + c.logs, true
	}
	return 0, false
}

// total is the pod's use of the resource (local volumes count towards ephemeral storage).
func (u podUsage) total(r v1.ResourceName) int64 {
	var sum int64
	for name := range u.containers {
		v, _ := u.containerUse(name, r)
		sum += v
	}
	if r == v1.ResourceEphemeralStorage {
		sum += u.volumes
	}
	return sum
}

func podRequest(p *v1.Pod, r v1.ResourceName) int64 {
	var total int64
	for _, c := range p.Spec.Containers {
		if q, ok := c.Resources.Requests[r]; ok {
			total += q.Value()
		}
	}
	return total
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// rank orders pods for eviction as the kubelet does. For memory and ephemeral storage: pods
// using more than they request first, then lower priority, then larger use above the
// request. For inodes and process IDs, which berth does not measure per pod: by priority.
func rank(pods []*v1.Pod, r v1.ResourceName, usage map[types.UID]podUsage) {
	if r != v1.ResourceMemory && r != v1.ResourceEphemeralStorage {
		sort.SliceStable(pods, func(i, j int) bool { return priority(pods[i]) < priority(pods[j]) })
		return
	}
	sort.SliceStable(pods, func(i, j int) bool {
		ui, uj := usage[pods[i].UID].total(r), usage[pods[j].UID].total(r)
		ri, rj := podRequest(pods[i], r), podRequest(pods[j], r)
		if ei, ej := ui > ri, uj > rj; ei != ej {
			return ei
		}
		if pi, pj := priority(pods[i]), priority(pods[j]); pi != pj {
			return pi < pj
		}
		return ui-ri > uj-rj
	})
}

// evictionMessage is the kubelet's eviction message for node pressure.
func evictionMessage(p *v1.Pod, r v1.ResourceName, threshold, available *resource.Quantity, usage podUsage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %v. ", r)
	fmt.Fprintf(&b, "Threshold quantity: %v, available: %v. ", threshold.String(), available.String())
	for _, c := range p.Spec.Containers {
		used, ok := usage.containerUse(c.Name, r)
		req := c.Resources.Requests[r]
		if ok && used > req.Value() {
			fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %v. ",
				c.Name, resource.NewQuantity(used, resource.BinarySI).String(), req.String(), r)
		}
	}
	return b.String()
}
