package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The reasons and messages of the pod conditions the node agent sets, as the kubelet words them.
const (
	// UnknownContainerStatuses: no container status is known yet.
	UnknownContainerStatuses = "UnknownContainerStatuses"
	// PodCompleted: every container succeeded.
	PodCompleted = "PodCompleted"
	// PodFailed: the pod failed, its containers are not ready.
	PodFailed = "PodFailed"
	// ContainersNotReady: a container is not ready.
	ContainersNotReady = "ContainersNotReady"
	// ContainersNotInitialized: an init container has not succeeded yet.
	ContainersNotInitialized = "ContainersNotInitialized"
	// ReadinessGatesNotReady: a readiness gate's condition is not True.
	ReadinessGatesNotReady = "ReadinessGatesNotReady"

	// PodSandboxNotReady is the reason of a False PodReadyToStartContainers condition.
	PodSandboxNotReady = "PodSandboxNotReady"

	msgNoPodSandbox         = "no pod sandbox exists"
	msgMultipleSandboxes    = "multiple pod sandboxes are ready and need to be reconciled"
	msgSandboxNotReady      = "pod sandbox is not ready"
	msgNetworkNamespaceMode = "network namespace mode changed and sandbox needs to be recreated"
	msgNoIPAddress          = "pod sandbox has no IP address"
)

// generatedConditions are the pod conditions the node agent sets on every status it
// generates.
var generatedConditions = []v1.PodConditionType{
	v1.PodReadyToStartContainers,
	v1.PodInitialized,
	v1.PodReady,
	v1.ContainersReady,
	v1.PodScheduled,
}

// ownedConditions are those and the resize conditions, which a status has while a resize is
// pending or in progress: absent from the node agent's status, they are gone.
var ownedConditions = append([]v1.PodConditionType{v1.PodResizePending, v1.PodResizeInProgress}, generatedConditions...)

// IsOwnedCondition reports a condition type the node agent generates (the kubelet's
// PodConditionByKubelet). Other types belong to whoever set them and are kept as they are.
func IsOwnedCondition(t v1.PodConditionType) bool {
	for _, o := range ownedConditions {
		if o == t {
			return true
		}
	}
	return false
}

// transitionTracked are the condition types whose lastTransitionTime the node agent keeps.
// (The resize conditions carry their own, which move when their reason does.)
var transitionTracked = append([]v1.PodConditionType{v1.DisruptionTarget}, generatedConditions...)

// UpdateLastTransitionTimes gives each condition the node agent tracks its lastTransitionTime:
// the old condition's time when its status did not change, else the time already set, else
// now. A condition's time therefore moves only when its status changes.
func UpdateLastTransitionTimes(status, old *v1.PodStatus, now metav1.Time) {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		tracked := false
		for _, t := range transitionTracked {
			tracked = tracked || t == c.Type
		}
		if !tracked {
			continue
		}
		if oc := findCondition(old.Conditions, c.Type); oc != nil && oc.Status == c.Status {
			c.LastTransitionTime = oc.LastTransitionTime
		} else if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = now
		}
	}
}

func findCondition(conditions []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

func findStatus(statuses []v1.ContainerStatus, name string) (*v1.ContainerStatus, bool) {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i], true
		}
	}
	return nil, false
}

// readinessNames lists the containers that count for readiness (sidecars and app containers)
// in two groups: unknown (no status) and unready.
func readinessNames(pod *v1.Pod, statuses []v1.ContainerStatus) (unknown, unready []string) {
	check := func(c *v1.Container) {
		s, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case !s.Ready:
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	return unknown, unready
}

func listMessage(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

func namesMessage(what string, names []string) string {
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("containers with %s status: %s", what, fmt.Sprint(names))
}

// GenerateContainersReadyCondition is ContainersReady: True when every app container and
// sidecar is ready. statuses holds the init and app container statuses.
func GenerateContainersReadyCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.ContainersReady, ObservedGeneration: pod.Generation, Status: v1.ConditionFalse}
	if statuses == nil {
		cond.Reason = UnknownContainerStatuses
		return cond
	}
	unknown, unready := readinessNames(pod, statuses)
	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalReadyCondition(pod, v1.ContainersReady, phase)
	}
	if msg := listMessage(namesMessage("unknown", unknown), namesMessage("unready", unready)); msg != "" {
		cond.Reason, cond.Message = ContainersNotReady, msg
		return cond
	}
	cond.Status = v1.ConditionTrue
	return cond
}

// GeneratePodReadyCondition is Ready: ContainersReady, and every readiness gate's condition
// (looked up in conditions) True.
func GeneratePodReadyCondition(pod *v1.Pod, conditions []v1.PodCondition, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cr := GenerateContainersReadyCondition(pod, statuses, phase)
	cond := v1.PodCondition{Type: v1.PodReady, ObservedGeneration: pod.Generation, Status: cr.Status, Reason: cr.Reason, Message: cr.Message}
	if cr.Status != v1.ConditionTrue {
		return cond
	}
	var msgs []string
	for _, rg := range pod.Spec.ReadinessGates {
		c := findCondition(conditions, rg.ConditionType)
		if c == nil {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(rg.ConditionType)))
		} else if c.Status != v1.ConditionTrue {
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(rg.ConditionType), c.Status))
		}
	}
	if len(msgs) > 0 {
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, ReadinessGatesNotReady, strings.Join(msgs, ", ")
	}
	return cond
}

// NeedToReconcilePodReadiness reports a pod with readiness gates whose Ready condition, as the
// API holds it, no longer says what its conditions and container statuses there make it:
// someone else changed a gate's condition, and the pod needs a sync so that the node agent
// writes Ready again (the kubelet's HandlePodReconcile). A pod with no Ready condition yet
// waits for its first sync.
func NeedToReconcilePodReadiness(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := findCondition(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	statuses := append(append([]v1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...)
	want := GeneratePodReadyCondition(pod, pod.Status.Conditions, statuses, pod.Status.Phase)
	return cur.Status != want.Status || cur.Message != want.Message
}

// terminalReadyCondition is the Ready or ContainersReady condition of a pod in a terminal
// phase: False with reason PodCompleted or PodFailed.
func terminalReadyCondition(pod *v1.Pod, t v1.PodConditionType, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: t, ObservedGeneration: pod.Generation, Status: v1.ConditionFalse}
	switch phase {
	case v1.PodFailed:
		cond.Reason = PodFailed
	case v1.PodSucceeded:
		cond.Reason = PodCompleted
	}
	return cond
}

// TerminalReadyConditions returns ContainersReady and Ready for a pod in a terminal phase.
func TerminalReadyConditions(pod *v1.Pod, phase v1.PodPhase) (containersReady, ready v1.PodCondition) {
	return terminalReadyCondition(pod, v1.ContainersReady, phase), terminalReadyCondition(pod, v1.PodReady, phase)
}

// initContainerDone: a regular init container is done when ready (succeeded), a sidecar when
// started.
func initContainerDone(c *v1.Container, s *v1.ContainerStatus) bool {
	if isSidecar(c) {
		return s.Started != nil && *s.Started
	}
	return s.Ready
}

// GeneratePodInitializedCondition is Initialized: True once every init container succeeded
// (or, for a sidecar, started), or once any app container has run.
func GeneratePodInitializedCondition(pod *v1.Pod, old *v1.PodStatus, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodInitialized, ObservedGeneration: pod.Generation, Status: v1.ConditionTrue}
	if statuses == nil && len(pod.Spec.InitContainers) > 0 {
		cond.Status, cond.Reason = v1.ConditionFalse, UnknownContainerStatuses
		return cond
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s, ok := findStatus(statuses, c.Name)
		if !ok {
			unknown = append(unknown, c.Name)
		} else if !initContainerDone(c, s) {
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		cond.Reason = PodCompleted
		return cond
	}
	if anyRegularContainerStarted(&pod.Spec, statuses) {
		return cond
	}
	msg := listMessage(namesMessage("unknown", unknown), namesMessage("incomplete", incomplete))
	if msg == "" {
		return cond
	}
	// Once initialized, a pod whose containers all restart in place stays initialized.
	if old != nil {
		if oc := findCondition(old.Conditions, v1.PodInitialized); oc != nil && oc.Status == v1.ConditionTrue && allContainersCouldRestart(&pod.Spec) {
			return cond
		}
	}
	cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, ContainersNotInitialized, msg
	return cond
}

// anyRegularContainerStarted reports an app container that is running or has terminated.
func anyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for i := range spec.Containers {
		if s, ok := findStatus(statuses, spec.Containers[i].Name); ok && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// sandboxNotReadyMessage says why the pod needs a new sandbox, or "" when its newest sandbox
// is ready, alone, in the right network namespace mode and has an IP (the runtime's
// podSandboxChanged, as seen from the status).
func sandboxNotReadyMessage(pod *v1.Pod, podStatus *container.PodStatus) string {
	if podStatus == nil || len(podStatus.SandboxStatuses) == 0 {
		return msgNoPodSandbox
	}
	ready := 0
	for _, s := range podStatus.SandboxStatuses {
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	newest := podStatus.SandboxStatuses[0]
	switch {
	case ready > 1:
		return msgMultipleSandboxes
	case newest.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY:
		return msgSandboxNotReady
	case newest.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkNamespaceMode(pod):
		return msgNetworkNamespaceMode
	case !pod.Spec.HostNetwork && newest.GetNetwork() != nil && newest.GetNetwork().GetIp() == "":
		return msgNoIPAddress
	}
	return ""
}

func networkNamespaceMode(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}

// podReadyToStartContainersCondition is True when the pod has a ready sandbox with its network.
func podReadyToStartContainersCondition(pod *v1.Pod, podStatus *container.PodStatus) v1.PodCondition {
	cond := v1.PodCondition{Type: v1.PodReadyToStartContainers, ObservedGeneration: pod.Generation, Status: v1.ConditionTrue}
	if msg := sandboxNotReadyMessage(pod, podStatus); msg != "" {
		cond.Status, cond.Reason, cond.Message = v1.ConditionFalse, PodSandboxNotReady, msg
	}
	return cond
}
