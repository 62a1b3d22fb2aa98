package podstatus

import (
	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/types"
)

// restartingAllContainers is the reason of a container stopped because a sibling's restart
// rule restarts the whole pod in place.
const restartingAllContainers = "RestartingAllContainers"

// isSidecar reports a restartable init container (restartPolicy: Always).
func isSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// matchingRestartRule returns the first of the container's restart rules whose exit codes
// match exitCode.
func matchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := false
		for _, code := range rule.ExitCodes.Values {
			in = in || code == exitCode
		}
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
}

// ContainerShouldRestart decides whether a container that exited with exitCode runs again:
// its restart rules first, then its own restart policy, then the pod's.
func ContainerShouldRestart(c *v1.Container, spec *v1.PodSpec, exitCode int32) bool {
	if c.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(c, exitCode); ok {
			switch rule.Action {
			case v1.ContainerRestartRuleActionRestart, v1.ContainerRestartRuleActionRestartAllContainers:
				return true
			}
		}
		switch *c.RestartPolicy {
		case v1.ContainerRestartPolicyAlways:
			return true
		case v1.ContainerRestartPolicyOnFailure:
			return exitCode != 0
		case v1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch spec.RestartPolicy {
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	case v1.RestartPolicyNever:
		return false
	default: // Always, and the default
		return true
	}
}

// terminatedRestartable reports whether a container that terminated as t runs again.
func terminatedRestartable(c *v1.Container, spec *v1.PodSpec, t *v1.ContainerStateTerminated) bool {
	return ContainerShouldRestart(c, spec, t.ExitCode) || t.Reason == restartingAllContainers
}

// allContainersCouldRestart reports a pod with a RestartAllContainers rule.
func allContainersCouldRestart(spec *v1.PodSpec) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// shouldContainerBeRestarted reports whether the next SyncPod starts the container (again):
// never for a pod being deleted; always when it never ran, was only created or is unknown;
// as its restart policy says when it exited.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, podStatus *container.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	s := podStatus.FindContainerStatusByName(c.Name)
	switch {
	case s == nil:
		return true
	case s.State == container.ContainerStateRunning:
		return false
	case s.State == container.ContainerStateUnknown || s.State == container.ContainerStateCreated:
		return true
	}
	return ContainerShouldRestart(c, &pod.Spec, int32(s.ExitCode))
}

// phaseCounts tallies the containers as the phase needs them.
type phaseCounts struct {
	pendingInit, pendingSidecars   int
	failedInitNotRestartable       int
	running, waiting, unknown      int
	stopped, stoppedNotRestartable int
	succeeded                      int
}

func countPhase(spec *v1.PodSpec, statuses []v1.ContainerStatus) phaseCounts {
	var n phaseCounts
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		s, ok := findStatus(statuses, c.Name)
		if isSidecar(c) {
			switch {
			case !ok:
				n.unknown++
			case s.State.Running != nil:
				if s.Started == nil || !*s.Started {
					n.pendingSidecars++
				}
				n.running++
			case s.State.Terminated != nil, s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
				// A sidecar that stopped does not count for the phase.
			case s.State.Waiting != nil:
				n.pendingSidecars++
				n.waiting++
			default:
				n.pendingSidecars++
				n.unknown++
			}
			continue
		}
		var last *v1.ContainerStateTerminated
		switch {
		case !ok:
		case s.State.Terminated != nil:
			last = s.State.Terminated
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			last = s.LastTerminationState.Terminated
		}
		switch {
		case last == nil:
			n.pendingInit++
		case last.ExitCode != 0 && !terminatedRestartable(c, spec, last):
			n.failedInitNotRestartable++
		}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		s, ok := findStatus(statuses, c.Name)
		var last *v1.ContainerStateTerminated
		switch {
		case !ok:
			n.unknown++
		case s.State.Running != nil:
			n.running++
		case s.State.Terminated != nil:
			last = s.State.Terminated
			if last.ExitCode == 0 {
				n.succeeded++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			last = s.LastTerminationState.Terminated
		case s.State.Waiting != nil:
			n.waiting++
		default:
			n.unknown++
		}
		if last != nil {
			n.stopped++
			if !terminatedRestartable(c, spec, last) {
				n.stoppedNotRestartable++
			}
		}
	}
	return n
}

// podPhase is the kubelet's getPhase: the phase the containers' statuses put the pod in.
//
//   - Failed when an init container failed and will not run again.
//   - Pending while an init container has not succeeded, while a sidecar has not started
//     (before the pod first initialized), or while an app container waits to start.
//   - Running when every container started and one runs, or when all stopped and one of them
//     restarts.
//   - Succeeded / Failed when every app container stopped for good: Succeeded if all exited 0.
//     A terminal pod (podIsTerminal) gets its terminal phase whatever its restart policy,
//     except a static pod.
func podPhase(pod *v1.Pod, statuses []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	n := countPhase(&pod.Spec, statuses)
	if n.failedInitNotRestartable > 0 {
		return v1.PodFailed
	}
	switch {
	case n.pendingInit > 0 || (n.pendingSidecars > 0 && !podHasInitialized) || n.waiting > 0:
		return v1.PodPending
	case n.running > 0 && n.unknown == 0:
		return v1.PodRunning
	case n.running == 0 && n.stopped > 0 && n.unknown == 0:
		if podIsTerminal && !types.IsStaticPod(pod) {
			if n.stopped == n.succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		if n.stopped != n.stoppedNotRestartable {
			return v1.PodRunning // something restarts
		}
		if n.stopped == n.succeeded {
			return v1.PodSucceeded
		}
		return v1.PodFailed
	default:
		return v1.PodPending
	}
}

func isTerminalPhase(p v1.PodPhase) bool {
	return p == v1.PodFailed || p == v1.PodSucceeded
}
