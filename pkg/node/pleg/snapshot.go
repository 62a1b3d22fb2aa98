package pleg

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// plegState is a container's (or sandbox's) state as the PLEG compares it: the runtime's
// states, plus "non-existent" for a container the runtime does not list.
type plegState string

const (
	plegRunning     plegState = "running"
	plegExited      plegState = "exited"
	plegUnknown     plegState = "unknown"
	plegNonExistent plegState = "non-existent"
)

// podSnapshot is one pod's containers and sandboxes by ID (without the runtime prefix).
// A nil snapshot is a pod the runtime does not list at all.
type podSnapshot map[string]plegState

// convertState maps a runtime state to the PLEG's. A created container is "unknown": the node
// agent acts on it only once it runs or exits.
func convertState(s container.State) plegState {
	switch s {
	case container.ContainerStateRunning:
		return plegRunning
	case container.ContainerStateExited:
		return plegExited
	default:
		return plegUnknown
	}
}

func convertSandboxState(s runtimeapi.PodSandboxState) plegState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return plegRunning
	}
	return plegExited
}

// snapshotOfPod is the snapshot of a pod as the runtime's GetPods lists it.
func snapshotOfPod(p *container.Pod) podSnapshot {
	if p == nil {
		return nil
	}
	s := make(podSnapshot, len(p.Containers)+len(p.Sandboxes))
	for _, c := range p.Containers {
		s[c.ID.ID] = convertState(c.State)
	}
	for _, sb := range p.Sandboxes {
		s[sb.ID.ID] = convertState(sb.State)
	}
	return s
}

// snapshotOfStatus is the snapshot of a pod as the runtime's GetPodStatus reads it; a status
// with no container and no sandbox is a pod the runtime no longer has (nil).
func snapshotOfStatus(st *container.PodStatus) podSnapshot {
	if st == nil || (len(st.ContainerStatuses) == 0 && len(st.SandboxStatuses) == 0) {
		return nil
	}
	s := make(podSnapshot, len(st.ContainerStatuses)+len(st.SandboxStatuses))
	for _, c := range st.ContainerStatuses {
		s[c.ID.ID] = convertState(c.State)
	}
	for _, sb := range st.SandboxStatuses {
		s[sb.Id] = convertSandboxState(sb.State)
	}
	return s
}

// stateOf is a container's state in a snapshot.
func (s podSnapshot) stateOf(id string) plegState {
	if st, ok := s[id]; ok {
		return st
	}
	return plegNonExistent
}

// computeEvents is the PLEG's diff: the events that turn the old snapshot of pod uid into the
// new one, container by container in ID order. It is a pure function.
func computeEvents(uid types.UID, old, cur podSnapshot) []*PodLifecycleEvent {
	ids := make([]string, 0, len(old)+len(cur))
	for id := range old {
		ids = append(ids, id)
	}
	for id := range cur {
		if _, ok := old[id]; !ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var events []*PodLifecycleEvent
	for _, id := range ids {
		events = append(events, containerEvents(uid, id, old.stateOf(id), cur.stateOf(id))...)
	}
	return events
}

// containerEvents is the events of one container going from oldState to newState.
func containerEvents(uid types.UID, id string, oldState, newState plegState) []*PodLifecycleEvent {
	if oldState == newState {
		return nil
	}
	ev := func(t PodLifeCycleEventType) *PodLifecycleEvent {
		return &PodLifecycleEvent{ID: uid, Type: t, Data: id}
	}
	switch newState {
	case plegRunning:
		return []*PodLifecycleEvent{ev(ContainerStarted)}
	case plegExited:
		return []*PodLifecycleEvent{ev(ContainerDied)}
	case plegUnknown:
		return []*PodLifecycleEvent{ev(ContainerChanged)}
	default: // non-existent
		if oldState == plegExited {
			// Its death was reported already.
			return []*PodLifecycleEvent{ev(ContainerRemoved)}
		}
		return []*PodLifecycleEvent{ev(ContainerDied), ev(ContainerRemoved)}
	}
}

// eventState is the state a CRI container event says its container is now in.
func eventState(t runtimeapi.ContainerEventType) plegState {
	switch t {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		return plegRunning
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		return plegExited
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		return plegNonExistent
	default: // CONTAINER_CREATED_EVENT
		return plegUnknown
	}
}
