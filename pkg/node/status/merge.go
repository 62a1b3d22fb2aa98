package status

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/berth-cluster/berth/pkg/node/podstatus"
	nodetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// The pure half of the status manager: what a status becomes before it is stored, how it
// merges with the API's, and the patch that gets it there. Nothing here does I/O.

// maxPodTerminationMessageBytes bounds the termination messages of all a pod's containers
// together; each container gets an even share.
const maxPodTerminationMessageBytes = 12 * 1024

func isTerminal(p v1.PodPhase) bool { return p == v1.PodFailed || p == v1.PodSucceeded }

// comparedCondition reports a condition type whose changes count as a change of status: the
// ones the node agent sets and DisruptionTarget, which it shares.
func comparedCondition(t v1.PodConditionType) bool {
	return podstatus.IsOwnedCondition(t) || t == v1.DisruptionTarget
}

// keepOthersFields copies into dst the status fields that others own (the scheduler, the
// resource claim controller, ...) and the node agent does not set.
func keepOthersFields(dst, src *v1.PodStatus) {
	dst.NominatedNodeName = src.NominatedNodeName
	dst.Resize = src.Resize
	dst.ResourceClaimStatuses = src.ResourceClaimStatuses
	dst.ExtendedResourceClaimStatus = src.ExtendedResourceClaimStatus
	dst.NodeAllocatableResourceClaimStatuses = src.NodeAllocatableResourceClaimStatuses
	dst.VolumeHealth = src.VolumeHealth
	dst.AllocatedResources = src.AllocatedResources
	dst.Resources = src.Resources
}

// statusEqual reports whether two statuses are the same as far as the node agent is concerned:
// its conditions agree in status, reason, message and generation (not in times), and every
// other field it sets is equal.
func statusEqual(a, b *v1.PodStatus) bool {
	conds := func(s *v1.PodStatus) map[v1.PodConditionType]v1.PodCondition {
		m := map[v1.PodConditionType]v1.PodCondition{}
		for _, c := range s.Conditions {
			if comparedCondition(c.Type) {
				m[c.Type] = c
			}
		}
		return m
	}
	ca, cb := conds(a), conds(b)
	if len(ca) != len(cb) {
		return false
	}
	for t, x := range ca {
		y, ok := cb[t]
		if !ok || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	ac := a.DeepCopy()
	ac.Conditions = b.Conditions
	keepOthersFields(ac, b)
	return apiequality.Semantic.DeepEqual(ac, b)
}

// normalizeStatus makes a status compare equal to its round trip through the API: times to
// whole seconds, termination messages within the pod's share, container statuses in their
// order (init containers as in the spec, the others by name).
func normalizeStatus(pod *v1.Pod, s *v1.PodStatus) {
	perContainer := maxPodTerminationMessageBytes
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		perContainer /= n
	}
	seconds := func(t *metav1.Time) { *t = t.Rfc3339Copy() }
	state := func(c *v1.ContainerState) {
		if c.Running != nil {
			seconds(&c.Running.StartedAt)
		}
		if c.Terminated != nil {
			seconds(&c.Terminated.StartedAt)
			seconds(&c.Terminated.FinishedAt)
			if len(c.Terminated.Message) > perContainer {
				c.Terminated.Message = c.Terminated.Message[:perContainer]
			}
		}
	}
	if s.StartTime != nil {
		seconds(s.StartTime)
	}
	for i := range s.Conditions {
		seconds(&s.Conditions[i].LastProbeTime)
		seconds(&s.Conditions[i].LastTransitionTime)
	}
	for _, list := range [][]v1.ContainerStatus{s.ContainerStatuses, s.InitContainerStatuses, s.EphemeralContainerStatuses} {
		for i := range list {
			state(&list[i].State)
			state(&list[i].LastTerminationState)
		}
	}
	byName := func(l []v1.ContainerStatus) {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Name < l[j].Name })
	}
	byName(s.ContainerStatuses)
	byName(s.EphemeralContainerStatuses)
	order := map[string]int{}
	for i, c := range pod.Spec.InitContainers {
		order[c.Name] = i
	}
	sort.SliceStable(s.InitContainerStatuses, func(i, j int) bool {
		return order[s.InitContainerStatuses[i].Name] < order[s.InitContainerStatuses[j].Name]
	})
}

// checkContainerStateTransition refuses a status that brings back to life a container that
// terminated for good (the restart policy says it does not run again).
func checkContainerStateTransition(old, next *v1.PodStatus, spec *v1.PodSpec) error {
	if spec.RestartPolicy == v1.RestartPolicyAlways {
		return nil
	}
	check := func(olds, news []v1.ContainerStatus, containers []v1.Container, what string) error {
		for _, o := range olds {
			if o.State.Terminated == nil {
				continue
			}
			var c *v1.Container
			for i := range containers {
				if containers[i].Name == o.Name {
					c = &containers[i]
				}
			}
			if c == nil && what == "init container" {
				return fmt.Errorf("found mismatch between pod spec and status, container: %v", o.Name)
			}
			if c != nil && what == "init container" && c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
				continue
			}
			if c != nil && podstatus.ContainerShouldRestart(c, spec, o.State.Terminated.ExitCode) {
				continue
			}
			for _, n := range news {
				if n.Name == o.Name && n.State.Terminated == nil {
					return fmt.Errorf("terminated %s %v attempted illegal transition to non-terminated state", what, n.Name)
				}
			}
		}
		return nil
	}
	for i := range spec.InitContainers {
		for _, r := range spec.InitContainers[i].RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
				return nil
			}
		}
	}
	for i := range spec.Containers {
		for _, r := range spec.Containers[i].RestartPolicyRules {
			if r.Action == v1.ContainerRestartRuleActionRestartAllContainers {
				return nil
			}
		}
	}
	if err := check(old.ContainerStatuses, next.ContainerStatuses, spec.Containers, "container"); err != nil {
		return err
	}
	return check(old.InitContainerStatuses, next.InitContainerStatuses, spec.InitContainers, "init container")
}

// mergePodStatus is the status to write over the API's: the node agent's status, with the
// conditions it does not set kept as the API has them (PodScheduled when it sets none,
// DisruptionTarget, readiness gates, ...), and the fields others own. A pod does not become
// terminal while its containers could still run, and never leaves a terminal phase.
func mergePodStatus(pod *v1.Pod, api, local v1.PodStatus, couldHaveRunningContainers bool, now metav1.Time) (v1.PodStatus, error) {
	merged := *local.DeepCopy()
	keepOthersFields(&merged, &api)

	toTerminal := !isTerminal(api.Phase) && isTerminal(local.Phase)
	if toTerminal && couldHaveRunningContainers {
		merged.Phase, merged.Reason, merged.Message = api.Phase, api.Reason, api.Message
	}
	var illegal error
	if isTerminal(api.Phase) && merged.Phase != api.Phase {
		illegal = fmt.Errorf("pod %s/%s attempted illegal phase transition from %s to %s", pod.Namespace, pod.Name, api.Phase, merged.Phase)
		merged.Phase, merged.Reason, merged.Message = api.Phase, api.Reason, api.Message
	}

	// Conditions, in the API's order: ours replace theirs, the rest stay (but a resize
	// condition we no longer have: the resize is over); ours that are new follow.
	ours := map[v1.PodConditionType]v1.PodCondition{}
	var order []v1.PodConditionType
	for _, c := range local.Conditions {
		switch {
		case podstatus.IsOwnedCondition(c.Type):
		case c.Type == v1.DisruptionTarget && toTerminal && !couldHaveRunningContainers:
			if old := findCondition(api.Conditions, c.Type); old != nil && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			} else if c.LastTransitionTime.IsZero() {
				c.LastTransitionTime = now
			}
		default:
			continue
		}
		ours[c.Type] = c
		order = append(order, c.Type)
	}
	merged.Conditions = nil
	for _, c := range api.Conditions {
		if o, ok := ours[c.Type]; ok {
			c = o
			delete(ours, c.Type)
		} else if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
			continue
		}
		merged.Conditions = append(merged.Conditions, c)
	}
	for _, t := range order {
		if c, ok := ours[t]; ok {
			merged.Conditions = append(merged.Conditions, c)
		}
	}

	// A terminal pod's containers are not ready.
	if isTerminal(merged.Phase) {
		cr, r := podstatus.TerminalReadyConditions(pod, merged.Phase)
		for _, want := range []v1.PodCondition{cr, r} {
			if c := findCondition(merged.Conditions, want.Type); c != nil && c.Status == v1.ConditionTrue {
				want.LastTransitionTime = now
				*c = want
			}
		}
	}
	return merged, illegal
}

func findCondition(conditions []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// statusPatch is the strategic merge patch of pods/status that turns api into merged, with
// the pod's UID as a precondition; unchanged when it would change nothing.
func statusPatch(uid types.UID, api, merged v1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldData, err := json.Marshal(v1.Pod{Status: api})
	if err != nil {
		return nil, false, fmt.Errorf("marshal the API status: %w", err)
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: merged})
	if err != nil {
		return nil, false, fmt.Errorf("marshal the new status: %w", err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("create the status patch: %w", err)
	}
	return patch, bytes.Equal(patch, []byte(fmt.Sprintf(`{"metadata":{"uid":%q}}`, uid))), nil
}

// canBeDeleted reports whether the node agent may finish deleting the API's pod: it is being
// deleted, it is not a mirror pod (whose deletion belongs to the static pod's lifecycle), its
// phase in the API is terminal and none of its containers can still run.
func canBeDeleted(apiPod *v1.Pod, couldHaveRunningContainers bool) bool {
	return apiPod.DeletionTimestamp != nil && !nodetypes.IsMirrorPod(apiPod) &&
		isTerminal(apiPod.Status.Phase) && !couldHaveRunningContainers
}

// terminatedStatus is the status TerminatePod stores: every container that has not
// terminated (the app containers once the pod initialized, the init containers that ran) is
// terminated with ContainerStatusUnknown, and the phase is Failed unless it is terminal
// already (a static pod's phase stays as it is).
func terminatedStatus(pod *v1.Pod, old v1.PodStatus) v1.PodStatus {
	s := *old.DeepCopy()
	lost := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason:   podstatus.ContainerStatusUnknown,
		Message:  "The container could not be located when the pod was terminated",
		ExitCode: 137,
	}}
	if hasPodInitialized(pod) {
		for i := range s.ContainerStatuses {
			if s.ContainerStatuses[i].State.Terminated == nil {
				s.ContainerStatuses[i].State = *lost.DeepCopy()
			}
		}
	}
	init := s.InitContainerStatuses
	ran := 0
	for i := len(init) - 1; i >= 0; i-- {
		if init[i].State.Waiting == nil || init[i].LastTerminationState.Terminated != nil {
			ran = i + 1
			break
		}
	}
	if ran == 0 && len(init) > 0 {
		ran = 1
	}
	for i := 0; i < ran; i++ {
		if init[i].State.Terminated == nil {
			init[i].State = *lost.DeepCopy()
		}
	}
	if !nodetypes.IsStaticPod(pod) && !isTerminal(s.Phase) {
		s.Phase = v1.PodFailed
	}
	return s
}

// hasPodInitialized reports, from the API's view of pod, whether its init containers are done:
// an app container ran, or the last init container succeeded (or, a sidecar, started).
func hasPodInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.LastTerminationState.Terminated != nil || s.State.Waiting == nil {
			return true
		}
	}
	n := len(pod.Status.InitContainerStatuses)
	if n == 0 || n > len(pod.Spec.InitContainers) {
		return false
	}
	c, s := pod.Spec.InitContainers[n-1], pod.Status.InitContainerStatuses[n-1]
	if c.Name != s.Name {
		return false
	}
	if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
		return s.State.Running != nil && s.Started != nil && *s.Started
	}
	for _, t := range []*v1.ContainerStateTerminated{s.LastTerminationState.Terminated, s.State.Terminated} {
		if t != nil && t.ExitCode == 0 {
			return true
		}
	}
	return false
}
