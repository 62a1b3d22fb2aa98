package podstatus

import (
	"bytes"
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The waiting reasons of a container that has not been started, and what the status says of a
// container the runtime lost.
const (
	// ContainerCreating: the container waits for its first start.
	ContainerCreating = "ContainerCreating"
	// PodInitializing: the pod has init containers and the container waits for them.
	PodInitializing = "PodInitializing"
	// ContainerStatusUnknown: the container ran but the runtime no longer knows it.
	ContainerStatusUnknown = "ContainerStatusUnknown"

	msgLostWhenDeleted    = "The container could not be located when the pod was deleted.  The container used to be Running"
	msgLostWhenTerminated = "The container could not be located when the pod was terminated"
	msgInitAssumedDone    = "Unable to get init container status from container runtime and pod has been initialized, treat it as exited normally"

	// lostContainerExitCode is the exit code given to a container the runtime lost.
	lostContainerExitCode = 137
)

// The bounds of a termination message read from a container's log (FallbackToLogsOnError).
const (
	TerminationMessageLogLines = 80
	TerminationMessageLogBytes = 2048
)

type containerKind int

const (
	appContainers containerKind = iota
	initContainers
	ephemeralContainers
)

// containerStatuses converts the runtime's view of one list of the pod's containers (app, init
// or ephemeral) into API statuses, from the previous API statuses of that list.
func (g *generator) containerStatuses(containers []v1.Container, previous []v1.ContainerStatus, kind containerKind) []v1.ContainerStatus {
	hasInit := len(g.pod.Spec.InitContainers) > 0
	defaultReason := ContainerCreating
	if hasInit {
		defaultReason = PodInitializing
	}
	old := make(map[string]*v1.ContainerStatus, len(previous))
	for i := range previous {
		old[previous[i].Name] = &previous[i]
	}

	// 1. Every container starts as waiting, or as it was when it last terminated.
	statuses := make(map[string]*v1.ContainerStatus, len(containers))
	for i := range containers {
		c := &containers[i]
		s := &v1.ContainerStatus{
			Name:  c.Name,
			Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}},
		}
		if o, ok := old[c.Name]; ok {
			if o.State.Terminated != nil {
				s = o.DeepCopy()
			} else {
				s.RestartCount = o.RestartCount
				s.LastTerminationState = *o.LastTerminationState.DeepCopy()
			}
		}
		s.VolumeMounts = volumeMountStatuses(c)
		statuses[c.Name] = s
	}

	// 2. A container that was running and that the runtime no longer has stopped somehow:
	// say so, rather than let it look as if it never started.
	for i := range containers {
		name := containers[i].Name
		o, ok := old[name]
		if !ok || g.podStatus.FindContainerStatusByName(name) != nil || o.State.Running == nil {
			continue
		}
		s := statuses[name]
		if s.State.Waiting == nil || s.State.Waiting.Reason != defaultReason || s.LastTerminationState.Terminated != nil {
			continue
		}
		s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  msgLostWhenDeleted,
			ExitCode: lostContainerExitCode,
		}
		if g.pod.DeletionTimestamp == nil {
			s.RestartCount++
		}
	}

	// 3. The runtime's containers, newest first: the newest instance is the state, the one
	// before it the last state.
	specs := make(map[string]*v1.Container, len(containers))
	for i := range containers {
		specs[containers[i].Name] = &containers[i]
	}
	runtimeStatuses := append([]*container.Status(nil), g.podStatus.ContainerStatuses...)
	sort.SliceStable(runtimeStatuses, func(i, j int) bool {
		return runtimeStatuses[i].CreatedAt.After(runtimeStatuses[j].CreatedAt)
	})
	seen := map[string]int{}
	for _, cs := range runtimeStatuses {
		spec, ok := specs[cs.Name]
		if !ok || seen[cs.Name] >= 2 {
			continue
		}
		converted := g.convert(cs, spec, old[cs.Name])
		if seen[cs.Name] == 0 {
			statuses[cs.Name] = converted
		} else {
			statuses[cs.Name].LastTerminationState = converted.State
		}
		seen[cs.Name]++
	}

	// 4. A container the next SyncPod will (re)start waits, with the reason its last start
	// failed.
	for i := range containers {
		c := &containers[i]
		s := statuses[c.Name]
		if kind == initContainers {
			cs := g.podStatus.FindContainerStatusByName(c.Name)
			if cs != nil && cs.State == container.ContainerStateExited && cs.ExitCode == 0 {
				continue
			}
			// The runtime removed an init container of a pod whose app containers exist: it
			// must have succeeded.
			if cs == nil && !isSidecar(c) && s.State.Waiting != nil && g.anyRegularContainerCreated() {
				s.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason:  "Completed",
					Message: msgInitAssumedDone,
				}}
				continue
			}
		}
		if !shouldContainerBeRestarted(c, g.pod, g.podStatus) || g.reasons == nil {
			continue
		}
		reason, message, ok := g.reasons.Get(g.pod.UID, c.Name)
		if !ok {
			continue
		}
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason.Error(), Message: message}}
	}

	// 5. A stable order: init containers in spec order, the others by name.
	out := make([]v1.ContainerStatus, 0, len(statuses))
	for i := range containers {
		out = append(out, *statuses[containers[i].Name])
	}
	if kind != initContainers {
		sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	}
	return out
}

// convert turns one runtime container into an API status.
func (g *generator) convert(cs *container.Status, spec *v1.Container, old *v1.ContainerStatus) *v1.ContainerStatus {
	id := cs.ID.String()
	s := &v1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.RestartCount),
		Image:        cs.Image,
		ImageID:      cs.ImageRef,
		ContainerID:  id,
		VolumeMounts: volumeMountStatuses(spec),
		Resources:    spec.Resources.DeepCopy(),
	}
	if s.Image == "" {
		s.Image = spec.Image
	}
	if len(spec.Resources.Requests) > 0 {
		s.AllocatedResources = spec.Resources.Requests.DeepCopy()
	}
	if cs.State == container.ContainerStateRunning && g.opts.actuated != nil {
		// A running container has the resources it runs with.
		if r, ok := g.opts.actuated(spec.Name); ok {
			s.Resources = r.DeepCopy()
		}
	}
	if old != nil {
		// Restart counts never go down, and a container replaced by a new one keeps the old
		// one's end as its last state, even when the runtime removed the old one.
		if old.RestartCount > s.RestartCount {
			s.RestartCount = old.RestartCount
		}
		if old.ContainerID != id && old.State.Terminated != nil {
			s.LastTerminationState.Terminated = old.State.Terminated.DeepCopy()
		} else if old.LastTerminationState.Terminated != nil {
			s.LastTerminationState.Terminated = old.LastTerminationState.Terminated.DeepCopy()
		}
	}
	switch {
	case cs.State == container.ContainerStateRunning:
		s.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
		if old != nil && old.State.Terminated != nil && old.RestartCount >= int32(cs.RestartCount) {
			s.RestartCount = old.RestartCount + 1
		}
		if old != nil && old.Started != nil && old.ContainerID == id {
			s.Started = old.Started
		}
	case cs.State == container.ContainerStateExited:
		s.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    int32(cs.ExitCode),
			Reason:      terminatedReason(cs),
			Message:     g.terminationMessage(cs, spec, old),
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: id,
		}
	case cs.State == container.ContainerStateUnknown && old != nil && old.State.Running != nil:
		// It ran and the runtime cannot say how it ended: it did not just never start.
		s.State.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  msgLostWhenTerminated,
			ExitCode: lostContainerExitCode,
		}
		s.RestartCount = old.RestartCount + 1
	default:
		// Created but not started, or unknown: waiting to run.
		s.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return s
}

// terminatedReason is the runtime's reason for an exit (Completed, Error, OOMKilled,
// ContainerCannotRun...), or Completed / Error by exit code when the runtime gave none.
func terminatedReason(cs *container.Status) string {
	switch {
	case cs.Reason != "":
		return cs.Reason
	case cs.ExitCode == 0:
		return "Completed"
	default:
		return "Error"
	}
}

// terminationMessage is the runtime's message (the termination message file, which the
// runtime reads), or — for terminationMessagePolicy FallbackToLogsOnError, a failed exit and
// no message — the tail of the container's log. A log already read for this container (in
// the old status) is not read again.
func (g *generator) terminationMessage(cs *container.Status, spec *v1.Container, old *v1.ContainerStatus) string {
	if cs.Message != "" || cs.ExitCode == 0 || cs.Reason == "ContainerCannotRun" ||
		spec.TerminationMessagePolicy != v1.TerminationMessageFallbackToLogsOnError || g.opts.logs == nil {
		return cs.Message
	}
	id := cs.ID.String()
	if old != nil {
		for _, t := range []*v1.ContainerStateTerminated{old.State.Terminated, old.LastTerminationState.Terminated} {
			if t != nil && t.ContainerID == id && t.Message != "" {
				return t.Message
			}
		}
	}
	tail := int64(TerminationMessageLogLines)
	var buf tailBuffer
	if err := g.opts.logs(g.opts.ctx, g.pod, cs.ID, &v1.PodLogOptions{TailLines: &tail}, &buf, &buf); err != nil {
		return "Error on reading termination message from logs: " + err.Error()
	}
	return buf.String()
}

// tailBuffer keeps the last TerminationMessageLogBytes bytes written to it.
type tailBuffer struct{ b bytes.Buffer }

func (t *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	t.b.Write(p)
	if extra := t.b.Len() - TerminationMessageLogBytes; extra > 0 {
		t.b.Next(extra)
	}
	return n, nil
}

func (t *tailBuffer) String() string { return t.b.String() }

// volumeMountStatuses reports the container's mounts; read-only mounts say whether they are
// recursively read-only.
func volumeMountStatuses(c *v1.Container) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		s := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
				mode = v1.RecursiveReadOnlyEnabled
			}
			s.RecursiveReadOnly = &mode
		}
		out = append(out, s)
	}
	return out
}

// anyRegularContainerCreated reports an app container the runtime has (created, running or
// exited).
func (g *generator) anyRegularContainerCreated() bool {
	for i := range g.pod.Spec.Containers {
		cs := g.podStatus.FindContainerStatusByName(g.pod.Spec.Containers[i].Name)
		if cs != nil && cs.State != container.ContainerStateUnknown {
			return true
		}
	}
	return false
}

// anyActiveRegularContainer reports an app container created in the pod's newest sandbox:
// the pod initialized in that sandbox.
func (g *generator) anyActiveRegularContainer() bool {
	if len(g.podStatus.SandboxStatuses) == 0 {
		return false
	}
	since := g.podStatus.SandboxStatuses[0].GetCreatedAt()
	for i := range g.pod.Spec.Containers {
		for _, cs := range g.podStatus.ContainerStatuses {
			if cs.Name == g.pod.Spec.Containers[i].Name && cs.CreatedAt.UnixNano() >= since {
				return true
			}
		}
	}
	return false
}
