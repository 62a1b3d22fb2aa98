// Package podstatus turns what the runtime says of a pod into the pod's API status: the
// kubelet's generateAPIPodStatus, which syncPod (seed 003, "同步 podStatus 到
// kubelet.statusManager") calls before and after the runtime's SyncPod. It computes the
// container statuses (waiting with the reason the last start failed, running, terminated,
// the last state, the resources), the phase (getPhase), the conditions
// (PodReadyToStartContainers, Initialized, ContainersReady, Ready, PodScheduled, and the
// resize conditions the caller gives), the IPs, the start time and the QoS
// class. It does no I/O of its own (a container's log is read only through a function the
// caller gives) and keeps no state but the ReasonCache that SyncPod's results fill.
package podstatus

import (
	"context"
	"io"
	"net"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/qos"
)

// ContainerLogsFunc writes a container's log as opts say (the Runtime's GetContainerLogs).
type ContainerLogsFunc func(ctx context.Context, pod *v1.Pod, id container.ContainerID, opts *v1.PodLogOptions, stdout, stderr io.Writer) error

// ProbeResults are the probes' verdicts on running containers, by pod, container name and
// container ID. known is false when the container has no such probe: it then counts as
// started, and as ready once started. A container whose probe has not run yet is known and
// neither started nor ready.
type ProbeResults interface {
	Started(podUID types.UID, name, containerID string) (started, known bool)
	Ready(podUID types.UID, name, containerID string) (ready, known bool)
}

// Option adjusts GenerateAPIPodStatus.
type Option func(*options)

type options struct {
	ctx      context.Context
	clock    clock.PassiveClock
	logs     ContainerLogsFunc
	probes   ProbeResults
	actuated func(name string) (v1.ResourceRequirements, bool)
	resize   []v1.PodCondition
}

// WithContext gives the context for logging and for reading logs.
func WithContext(ctx context.Context) Option { return func(o *options) { o.ctx = ctx } }

// WithClock sets the clock that stamps start and transition times.
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.clock = c } }

// WithContainerLogs lets terminationMessagePolicy FallbackToLogsOnError read the tail of a
// failed container's log (the last 80 lines, at most 2048 bytes).
func WithContainerLogs(f ContainerLogsFunc) Option { return func(o *options) { o.logs = f } }

// WithProbeResults makes readiness and startup follow the probes.
func WithProbeResults(p ProbeResults) Option { return func(o *options) { o.probes = p } }

// WithActuatedResources gives a running container's status the resources the runtime was
// last told to apply to it (which lag its allocated ones while a resize is in progress);
// without it, or for a container without a record, the status shows the allocated ones.
func WithActuatedResources(f func(name string) (v1.ResourceRequirements, bool)) Option {
	return func(o *options) { o.actuated = f }
}

// WithResizeConditions adds the pod's PodResizePending and PodResizeInProgress conditions,
// which the allocation manager keeps.
func WithResizeConditions(c []v1.PodCondition) Option { return func(o *options) { o.resize = c } }

type generator struct {
	pod       *v1.Pod
	podStatus *container.PodStatus
	reasons   *ReasonCache
	opts      options
}

// GenerateAPIPodStatus returns the API status of pod given the runtime's podStatus. oldStatus
// is the status the node agent last generated for the pod (the status manager's), or the
// API's when it has none; pod.Status is what the API holds. podIsTerminal says the pod's
// containers will not run again (the pod is being terminated or has finished). nodeIPs are
// the node's addresses, the first of the preferred family.
//
// A pod whose old or API phase is terminal keeps that phase. lastTransitionTime of a condition
// moves only when its status changes from oldStatus's.
func GenerateAPIPodStatus(pod *v1.Pod, podStatus *container.PodStatus, podIsTerminal bool, reasons *ReasonCache, nodeIPs []net.IP, oldStatus v1.PodStatus, opts ...Option) v1.PodStatus {
	g := &generator{pod: pod, podStatus: podStatus, reasons: reasons, opts: options{ctx: context.Background(), clock: clock.RealClock{}}}
	for _, o := range opts {
		o(&g.opts)
	}
	if g.podStatus == nil {
		g.podStatus = &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	logger := klog.FromContext(g.opts.ctx)
	now := metav1.NewTime(g.opts.clock.Now())

	s := v1.PodStatus{QOSClass: qos.PodQOSClass(pod), ObservedGeneration: pod.Generation}
	for _, ip := range sortPodIPs(g.podStatus.IPs, nodeIPs) {
		s.PodIPs = append(s.PodIPs, v1.PodIP{IP: ip})
	}
	if len(s.PodIPs) > 0 {
		s.PodIP = s.PodIPs[0].IP
	}

	s.ContainerStatuses = g.containerStatuses(pod.Spec.Containers, oldStatus.ContainerStatuses, appContainers)
	s.InitContainerStatuses = g.containerStatuses(pod.Spec.InitContainers, oldStatus.InitContainerStatuses, initContainers)
	if len(pod.Spec.EphemeralContainers) > 0 {
		ephemeral := make([]v1.Container, len(pod.Spec.EphemeralContainers))
		for i := range pod.Spec.EphemeralContainers {
			ephemeral[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
		}
		s.EphemeralContainerStatuses = g.containerStatuses(ephemeral, oldStatus.EphemeralContainerStatuses, ephemeralContainers)
	}
	if len(s.ContainerStatuses) == 0 {
		s.ContainerStatuses = nil
	}
	if len(s.InitContainerStatuses) == 0 {
		s.InitContainerStatuses = nil
	}

	// The phase, which never leaves a terminal phase.
	all := append(append([]v1.ContainerStatus(nil), s.ContainerStatuses...), s.InitContainerStatuses...)
	s.Phase = podPhase(pod, all, podIsTerminal, g.anyActiveRegularContainer())
	if !isTerminalPhase(s.Phase) {
		switch {
		case isTerminalPhase(oldStatus.Phase):
			s.Phase = oldStatus.Phase
		case isTerminalPhase(pod.Status.Phase):
			s.Phase = pod.Status.Phase
		}
	}
	if s.Phase == oldStatus.Phase {
		s.Reason, s.Message = oldStatus.Reason, oldStatus.Message
		if s.Reason == "" {
			s.Reason = pod.Status.Reason
		}
		if s.Message == "" {
			s.Message = pod.Status.Message
		}
	}
	if isTerminalPhase(pod.Status.Phase) && s.Phase != pod.Status.Phase {
		logger.Error(nil, "Pod attempted illegal phase transition", "pod", klog.KObj(pod), "originalStatusPhase", pod.Status.Phase, "apiStatusPhase", s.Phase)
		s.Phase = pod.Status.Phase
	}

	g.applyProbes(&s)

	// Conditions: others' kept, DisruptionTarget as the node agent last set it, then ours.
	for _, c := range pod.Status.Conditions {
		if !IsOwnedCondition(c.Type) {
			s.Conditions = append(s.Conditions, c)
		}
	}
	if dt := findCondition(oldStatus.Conditions, v1.DisruptionTarget); dt != nil {
		if c := findCondition(s.Conditions, v1.DisruptionTarget); c != nil {
			*c = *dt
		} else {
			s.Conditions = append(s.Conditions, *dt)
		}
	}
	statuses := append(append([]v1.ContainerStatus(nil), s.InitContainerStatuses...), s.ContainerStatuses...)
	s.Conditions = append(s.Conditions,
		podReadyToStartContainersCondition(pod, g.podStatus),
		GeneratePodInitializedCondition(pod, &oldStatus, statuses, s.Phase),
		GeneratePodReadyCondition(pod, s.Conditions, statuses, s.Phase),
		GenerateContainersReadyCondition(pod, statuses, s.Phase),
		v1.PodCondition{Type: v1.PodScheduled, ObservedGeneration: pod.Generation, Status: v1.ConditionTrue},
	)
	UpdateLastTransitionTimes(&s, &oldStatus, now)
	// The resize conditions come with their own times.
	s.Conditions = append(s.Conditions, g.opts.resize...)

	// The node's IPs; a host-network pod has them as its own.
	if len(nodeIPs) > 0 {
		s.HostIP = nodeIPs[0].String()
		s.HostIPs = []v1.HostIP{{IP: s.HostIP}}
		if len(nodeIPs) > 1 {
			s.HostIPs = append(s.HostIPs, v1.HostIP{IP: nodeIPs[1].String()})
		}
		if pod.Spec.HostNetwork {
			if s.PodIP == "" {
				s.PodIP = s.HostIP
				s.PodIPs = []v1.PodIP{{IP: s.PodIP}}
			}
			if len(nodeIPs) > 1 && len(s.PodIPs) == 1 && isIPv4String(s.PodIPs[0].IP) != (nodeIPs[1].To4() != nil) {
				s.PodIPs = append(s.PodIPs, v1.PodIP{IP: nodeIPs[1].String()})
			}
		}
	}

	switch {
	case oldStatus.StartTime != nil && !oldStatus.StartTime.IsZero():
		s.StartTime = oldStatus.StartTime.DeepCopy()
	case pod.Status.StartTime != nil && !pod.Status.StartTime.IsZero():
		s.StartTime = pod.Status.StartTime.DeepCopy()
	default:
		s.StartTime = &now
	}
	return s
}

// applyProbes sets started and ready: a running container is started unless its startup
// probe has not passed, and an app container or sidecar is ready once started unless its
// readiness probe says otherwise; a regular init container is ready once it succeeded.
func (g *generator) applyProbes(s *v1.PodStatus) {
	started := func(cs *v1.ContainerStatus) bool {
		if cs.State.Running == nil {
			return false
		}
		if g.opts.probes != nil {
			if ok, known := g.opts.probes.Started(g.pod.UID, cs.Name, cs.ContainerID); known {
				return ok
			}
		}
		return true
	}
	ready := func(cs *v1.ContainerStatus) bool {
		if cs.State.Running == nil {
			return false
		}
		if g.opts.probes != nil {
			if ok, known := g.opts.probes.Ready(g.pod.UID, cs.Name, cs.ContainerID); known {
				return ok
			}
		}
		return true
	}
	for i := range s.ContainerStatuses {
		cs := &s.ContainerStatuses[i]
		st := started(cs)
		cs.Started = &st
		cs.Ready = st && ready(cs)
	}
	for i := range s.InitContainerStatuses {
		cs := &s.InitContainerStatuses[i]
		st := started(cs)
		cs.Started = &st
		spec := &g.pod.Spec.InitContainers[i]
		if spec.Name != cs.Name || !isSidecar(spec) {
			cs.Ready = cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0
			continue
		}
		cs.Ready = st && ready(cs)
	}
}

// sortPodIPs picks the pod's IPs: the first of the node's family, then the first of the other.
func sortPodIPs(ips []string, nodeIPs []net.IP) []string {
	primaryV4 := len(nodeIPs) == 0 || nodeIPs[0].To4() != nil
	var out []string
	for _, wantV4 := range []bool{primaryV4, !primaryV4} {
		for _, s := range ips {
			ip := net.ParseIP(s)
			if ip == nil || (ip.To4() != nil) != wantV4 {
				continue
			}
			out = append(out, ip.String())
			break
		}
	}
	return out
}

func isIPv4String(s string) bool {
	ip := net.ParseIP(s)
	return ip != nil && ip.To4() != nil
}
