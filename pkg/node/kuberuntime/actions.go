package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// killReason says why a container is killed; it picks the grace period (a probe's own
// terminationGracePeriodSeconds wins over the pod's).
type killReason string

const (
	reasonStartupProbe        killReason = "StartupProbe"
	reasonLivenessProbe       killReason = "LivenessProbe"
	reasonFailedPostStartHook killReason = "FailedPostStartHook"
	reasonUnknown             killReason = "Unknown"
)

// containerToKill is a running container SyncPod must stop, and why.
type containerToKill struct {
	spec    *v1.Container
	name    string
	message string
	reason  killReason
}

// podActions is the plan computePodActions makes and SyncPod carries out.
type podActions struct {
	// KillPod stops every container and the sandbox (step 2).
	KillPod bool
	// CreateSandbox makes a new sandbox (step 4); it implies KillPod, and the init
	// containers start over.
	CreateSandbox bool
	// SandboxID is the current sandbox, the one containers start in when none is created.
	SandboxID string
	// Attempt is the new sandbox's attempt number.
	Attempt uint32
	// InitContainersToStart are indexes into spec.initContainers, in start order: the next
	// regular init container and the sidecars (restartPolicy Always) to (re)start.
	InitContainersToStart []int
	// ContainersToStart are indexes into spec.containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into spec.ephemeralContainers.
	EphemeralContainersToStart []int
	// ContainersToKill are running containers to stop before anything starts (step 3).
	ContainersToKill map[container.ContainerID]containerToKill
	// ContainersToUpdate are running containers resized in place (step 5), by resource, in
	// the order of their updates.
	ContainersToUpdate map[v1.ResourceName][]containerToUpdate
	// UpdatePodResources says the pod's cgroup must follow its allocation (step 5): a
	// container restarts for its resize, or starts with other resources than it ran with.
	UpdatePodResources bool
}

func (p podActions) String() string {
	kill := make([]string, 0, len(p.ContainersToKill))
	for id, k := range p.ContainersToKill {
		kill = append(kill, fmt.Sprintf("%s(%s): %s", k.name, id.ID, k.message))
	}
	return fmt.Sprintf("KillPod: %t, CreateSandbox: %t, SandboxID: %q, Attempt: %d, UpdatePodResources: %t, InitContainersToStart: %v, ContainersToStart: %v, EphemeralContainersToStart: %v, ContainersToUpdate: %v, ContainersToKill: %v",
		p.KillPod, p.CreateSandbox, p.SandboxID, p.Attempt, p.UpdatePodResources, p.InitContainersToStart, p.ContainersToStart, p.EphemeralContainersToStart, p.ContainersToUpdate, kill)
}

// ProbeResult is a probe's verdict on a container.
type ProbeResult int

const (
	ProbeUnknown ProbeResult = iota
	ProbeSuccess
	ProbeFailure
)

// ProbeResults is what the prober knows of running containers; found is false until a
// probe has run. A nil ProbeResults (no prober) passes every probe.
type ProbeResults interface {
	Liveness(id container.ContainerID) (result ProbeResult, found bool)
	Startup(id container.ContainerID) (result ProbeResult, found bool)
}

// isSidecar reports an init container that keeps running (restartPolicy: Always).
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// restartPolicy is the pod's restart policy; the API defaults it to Always.
func restartPolicy(pod *v1.Pod) v1.RestartPolicy {
	if pod.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return pod.Spec.RestartPolicy
}

// shouldRestartOnFailure reports whether failed containers restart.
func shouldRestartOnFailure(pod *v1.Pod) bool {
	return restartPolicy(pod) != v1.RestartPolicyNever
}

// computePodActions plans one SyncPod: whether the sandbox must be (re)created, which
// running containers must be killed and why, which are resized in place, and which init, app
// and ephemeral containers to start. It is a pure function of the pod (with its allocated
// resources), its status in the runtime, the probes and the containers' actuated resources
// (nil: no resizing).
func computePodActions(pod *v1.Pod, status *container.PodStatus, probes ProbeResults, actuated ActuatedLookup) podActions {
	createSandbox, attempt, sandboxID := podSandboxChanged(pod, status)
	changes := podActions{
		KillPod:           createSandbox,
		CreateSandbox:     createSandbox,
		SandboxID:         sandboxID,
		Attempt:           attempt,
		ContainersToStart: []int{},
		ContainersToKill:  map[container.ContainerID]containerToKill{},
	}

	// A new sandbox kills everything and starts over from the first init container.
	if createSandbox {
		if !shouldRestartOnFailure(pod) && attempt != 0 && len(status.ContainerStatuses) != 0 {
			// A pod that never restarts and already ran gets no new sandbox: it only has
			// to be killed. (With no containers at all, sandbox creation failed before;
			// try again.)
			changes.CreateSandbox = false
			return changes
		}
		var toStart []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if restartPolicy(pod) == v1.RestartPolicyOnFailure && containerSucceeded(c, status) {
				continue
			}
			toStart = append(toStart, i)
		}
		// Nothing to start and initialization is done: no sandbox is needed.
		if len(toStart) == 0 && hasAnyRegularContainerCreated(pod, status) {
			changes.CreateSandbox = false
			return changes
		}
		if len(pod.Spec.InitContainers) != 0 {
			changes.InitContainersToStart = []int{0}
			return changes
		}
		changes.ContainersToStart = toStart
		return changes
	}

	// Ephemeral containers start even while the pod initializes, and never restart.
	for i := range pod.Spec.EphemeralContainers {
		if status.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			changes.EphemeralContainersToStart = append(changes.EphemeralContainersToStart, i)
		}
	}

	initialized := computeInitContainerActions(pod, status, probes, actuated, &changes)
	if changes.KillPod || !initialized {
		return changes
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := status.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != container.ContainerStateRunning {
			if shouldContainerBeRestarted(c, pod, status) {
				changes.ContainersToStart = append(changes.ContainersToStart, i)
				if cs != nil && cs.State == container.ContainerStateUnknown {
					// It might still run: kill it first so that two never run at once.
					changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: cs.Name, reason: reasonUnknown,
						message: fmt.Sprintf("Container is in %q state, try killing it before restart", cs.State)}
				}
			}
			continue
		}
		// Running: keep it unless its spec changed or a probe failed.
		restart := shouldRestartOnFailure(pod)
		var message string
		var reason killReason
		switch {
		case cs.Hash != HashContainer(c):
			message = fmt.Sprintf("Container %s definition changed", c.Name)
			restart = true // a changed spec restarts whatever the policy
		case probeFailed(probes, ProbeResults.Liveness, cs.ID):
			message = fmt.Sprintf("Container %s failed liveness probe", c.Name)
			reason = reasonLivenessProbe
		case probeFailed(probes, ProbeResults.Startup, cs.ID):
			message = fmt.Sprintf("Container %s failed startup probe", c.Name)
			reason = reasonStartupProbe
		case planResize(c, cs, actuated, &changes):
			// Its resize policy restarts it, whatever the pod's restart policy.
			changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: cs.Name, message: fmt.Sprintf("Container %s resize requires restart", c.Name)}
			changes.ContainersToStart = append(changes.ContainersToStart, i)
			continue
		default:
			keep++
			continue
		}
		if restart {
			message += ", will be restarted"
			changes.ContainersToStart = append(changes.ContainersToStart, i)
		}
		changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: cs.Name, message: message, reason: reason}
	}

	// Nothing runs and nothing will: the pod is done; stop what is left (sidecars
	// included, which must not keep a finished pod alive).
	if keep == 0 && len(changes.ContainersToStart) == 0 {
		changes.KillPod = true
		changes.InitContainersToStart = nil
		return changes
	}
	if !changes.UpdatePodResources {
		changes.UpdatePodResources = startsResized(pod.Spec.InitContainers, changes.InitContainersToStart, actuated) ||
			startsResized(pod.Spec.Containers, changes.ContainersToStart, actuated)
	}
	return changes
}

// computeInitContainerActions adds the init containers' actions to changes and reports
// whether the pod is initialized. Regular init containers run one at a time, in order, each
// to completion; sidecars start in order too, the next init container starting once the
// sidecar before it runs (and passed its startup probe), and they keep running: an exited
// sidecar restarts. The loop walks the init containers backwards, because the runtime may
// have removed the completed ones: the last one with a status says how far initialization
// got.
func computeInitContainerActions(pod *v1.Pod, status *container.PodStatus, probes ProbeResults, actuated ActuatedLookup, changes *podActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	active := activeContainerStatuses(status)
	// A regular container started in this sandbox means initialization finished (the
	// completed init containers may be gone).
	initialized := hasAnyActiveRegularContainer(pod, active)
	previousInitialized := initialized
	var toStart []int // collected backwards

	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		cs := findStatus(active, c.Name)
		if cs == nil {
			if previousInitialized && isSidecar(c) {
				toStart = append(toStart, i) // its status vanished; it must run
			}
			continue
		}
		if previousInitialized && !isSidecar(c) {
			continue // completed long ago; only sidecars matter now
		}

		switch cs.State {
		case container.ContainerStateCreated:
			// Created but never started: the start failed; start it again.
			toStart = append(toStart, i)

		case container.ContainerStateRunning:
			if !isSidecar(c) {
				break // a regular init container still working
			}
			if c.StartupProbe != nil && probes != nil {
				result, found := probes.Startup(cs.ID)
				if !found || result == ProbeUnknown {
					break // wait for the startup probe before starting the next one
				}
				if result == ProbeFailure {
					changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: c.Name, reason: reasonStartupProbe,
						message: fmt.Sprintf("Init container %s failed startup probe", c.Name)}
					toStart = append(toStart, i)
					break
				}
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !previousInitialized {
				toStart = append(toStart, i+1) // started for the first time: next one
			}
			if cs.Hash != HashContainer(c) {
				changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: c.Name,
					message: fmt.Sprintf("Init container %s definition changed", c.Name)}
				toStart = append(toStart, i)
				break
			}
			if c.LivenessProbe != nil && probeFailed(probes, ProbeResults.Liveness, cs.ID) {
				changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: c.Name, reason: reasonLivenessProbe,
					message: fmt.Sprintf("Init container %s failed liveness probe", c.Name)}
				toStart = append(toStart, i)
				break
			}
			if planResize(c, cs, actuated, changes) {
				changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: c.Name,
					message: fmt.Sprintf("Container %s resize requires restart", c.Name)}
				toStart = append(toStart, i)
			}

		case container.ContainerStateExited:
			if isSidecar(c) {
				toStart = append(toStart, i)
				break
			}
			if cs.ExitCode != 0 {
				if !shouldRestartOnFailure(pod) {
					changes.KillPod = true // a failed init container fails the pod
					changes.InitContainersToStart = nil
					return false
				}
				toStart = append(toStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				toStart = append(toStart, i+1)
			}

		default: // unknown: it may still run
			if !isSidecar(c) && !shouldRestartOnFailure(pod) {
				changes.KillPod = true
				changes.InitContainersToStart = nil
				return false
			}
			changes.ContainersToKill[cs.ID] = containerToKill{spec: c, name: c.Name, reason: reasonUnknown,
				message: fmt.Sprintf("Init container is in %q state, try killing it before restart", cs.State)}
			toStart = append(toStart, i)
		}
		previousInitialized = true
	}
	if !previousInitialized {
		toStart = append(toStart, 0) // nothing ran yet: start with the first
	}
	for i := len(toStart) - 1; i >= 0; i-- {
		changes.InitContainersToStart = append(changes.InitContainersToStart, toStart[i])
	}
	return initialized
}

// podSandboxChanged reports whether the pod needs a new sandbox, the attempt number of the
// sandbox to run and the id of the newest sandbox. A new sandbox is needed when there is
// none, when several are ready, when the newest is not ready, when the pod's network
// namespace mode changed, or when a pod-network sandbox has no IP.
func podSandboxChanged(pod *v1.Pod, status *container.PodStatus) (bool, uint32, string) {
	if len(status.SandboxStatuses) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	newest := status.SandboxStatuses[0]
	next := newest.GetMetadata().GetAttempt() + 1
	switch {
	case ready > 1:
		return true, next, newest.Id
	case newest.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		return true, next, newest.Id
	case newest.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkNamespaceMode(pod):
		return true, next, ""
	case !pod.Spec.HostNetwork && newest.Network != nil && newest.Network.Ip == "":
		return true, next, newest.Id
	}
	return false, newest.GetMetadata().GetAttempt(), newest.Id
}

// shouldContainerBeRestarted applies the restart policy to a container that does not run.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, status *container.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false // a pod being deleted restarts nothing
	}
	cs := status.FindContainerStatusByName(c.Name)
	switch {
	case cs == nil:
		return true
	case cs.State == container.ContainerStateRunning:
		return false
	case cs.State == container.ContainerStateUnknown || cs.State == container.ContainerStateCreated:
		return true
	}
	switch restartPolicy(pod) {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return cs.ExitCode != 0
	}
	return true
}

func containerSucceeded(c *v1.Container, status *container.PodStatus) bool {
	cs := status.FindContainerStatusByName(c.Name)
	return cs != nil && cs.State == container.ContainerStateExited && cs.ExitCode == 0
}

// hasAnyRegularContainerCreated reports an app container that was created, in any sandbox:
// proof that initialization completed once.
func hasAnyRegularContainerCreated(pod *v1.Pod, status *container.PodStatus) bool {
	for i := range pod.Spec.Containers {
		cs := status.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if cs != nil && cs.State != container.ContainerStateUnknown {
			return true
		}
	}
	return false
}

// activeContainerStatuses returns the statuses of the containers of the current sandbox:
// those created since the newest sandbox was (a pod's containers are only ever created in
// its newest sandbox, and SyncPod creates the sandbox before them), the newest first.
func activeContainerStatuses(status *container.PodStatus) []*container.Status {
	if len(status.SandboxStatuses) == 0 {
		return nil
	}
	since := status.SandboxStatuses[0].CreatedAt
	var active []*container.Status
	for _, cs := range status.ContainerStatuses {
		if cs.CreatedAt.UnixNano() >= since {
			active = append(active, cs)
		}
	}
	return active
}

func hasAnyActiveRegularContainer(pod *v1.Pod, active []*container.Status) bool {
	for i := range pod.Spec.Containers {
		if findStatus(active, pod.Spec.Containers[i].Name) != nil {
			return true
		}
	}
	return false
}

func findStatus(statuses []*container.Status, name string) *container.Status {
	for _, cs := range statuses {
		if cs.Name == name {
			return cs
		}
	}
	return nil
}

// probeFailed reports a probe that ran and failed.
func probeFailed(probes ProbeResults, get func(ProbeResults, container.ContainerID) (ProbeResult, bool), id container.ContainerID) bool {
	if probes == nil {
		return false
	}
	result, found := get(probes, id)
	return found && result == ProbeFailure
}

// networkNamespaceMode is the sandbox network namespace the pod wants.
func networkNamespaceMode(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}
