package pod

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// nodeLostReason is the pod status reason the node lifecycle controller sets
// when it deletes pods of an unreachable node; such pods print as "Unknown".
const nodeLostReason = "NodeLost"

// Rows of finished pods carry a Completed condition so that `kubectl get
// pods` can tell them apart from running ones.
var (
	succeededConditions = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	failedConditions    = []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
)

// NewTableConvertor returns the columns of `kubectl get pods`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Pod] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Ready", Type: "string", Description: "Ready containers out of all containers (sidecars included)."},
		{Name: "Status", Type: "string", Description: "Summary of the pod's phase and its containers' states."},
		{Name: "Restarts", Type: "string", Description: "Container restarts, and how long ago the last one ended."},
		table.AgeColumn(),
		{Name: "IP", Type: "string", Priority: 1, Description: "First IP address of the pod."},
		{Name: "Node", Type: "string", Priority: 1, Description: "Node the pod is bound to."},
		{Name: "Nominated Node", Type: "string", Priority: 1, Description: "Node on which preemption made room for the pod."},
		{Name: "Readiness Gates", Type: "string", Priority: 1, Description: "Readiness gates whose condition is true, out of all gates."},
	}, podRow)
}

func podRow(pod *corev1.Pod, now time.Time) metav1.TableRow {
	var row metav1.TableRow
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		row.Conditions = succeededConditions
	case corev1.PodFailed:
		row.Conditions = failedConditions
	}

	s := summarizeForTable(pod)
	restarts := strconv.Itoa(s.restarts)
	if s.restarts != 0 && !s.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", s.restarts, table.Since(s.lastRestart, now))
	}

	row.Cells = []any{
		pod.Name,
		fmt.Sprintf("%d/%d", s.ready, s.total),
		s.status,
		restarts,
		table.Age(pod, now),
		table.OrNone(firstPodIP(pod)),
		table.OrNone(pod.Spec.NodeName),
		table.OrNone(pod.Status.NominatedNodeName),
		readinessGatesCell(pod),
	}
	return row
}

// podSummary is what the READY, STATUS and RESTARTS cells show.
type podSummary struct {
	status       string
	ready, total int
	restarts     int
	lastRestart  time.Time
}

// summarizeForTable derives READY, STATUS and RESTARTS the way kubectl users
// know them: the first init container that has not finished decides the status
// while the pod initializes; after that the app containers do, the last one
// listed taking precedence.
func summarizeForTable(pod *corev1.Pod) podSummary {
	s := podSummary{status: string(pod.Status.Phase), total: len(pod.Spec.Containers)}
	if pod.Status.Reason != "" {
		s.status = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			s.status = corev1.PodReasonSchedulingGated
		}
	}

	sidecars := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if isSidecarContainer(&pod.Spec.InitContainers[i]) {
			sidecars[pod.Spec.InitContainers[i].Name] = true
			s.total++ // sidecars keep running, so they count as pod containers
		}
	}

	// Restarts counted while walking init containers; once the pod is
	// initialized only sidecar restarts (plus app containers) count.
	var sidecarRestarts int
	var sidecarLastRestart time.Time
	initializing := false
	for i, cs := range pod.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		s.lastRestart = laterOf(s.lastRestart, lastTermination(cs))
		sidecar := sidecars[cs.Name]
		if sidecar {
			sidecarRestarts += int(cs.RestartCount)
			sidecarLastRestart = laterOf(sidecarLastRestart, lastTermination(cs))
		}

		if t := cs.State.Terminated; t != nil && t.ExitCode == 0 {
			continue // finished successfully
		}
		if sidecar && cs.Started != nil && *cs.Started {
			if cs.Ready {
				s.ready++
			}
			continue // a started sidecar lets the next init container run
		}
		initializing = true
		switch {
		case cs.State.Terminated != nil:
			s.status = "Init:" + terminatedStateName(cs.State.Terminated)
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
			s.status = "Init:" + cs.State.Waiting.Reason
		default:
			s.status = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		break
	}

	if !initializing || firstConditionTrue(pod, corev1.PodInitialized) {
		s.restarts, s.lastRestart = sidecarRestarts, sidecarLastRestart
		running := false
		errorReason := ""
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			cs := pod.Status.ContainerStatuses[i]
			s.restarts += int(cs.RestartCount)
			s.lastRestart = laterOf(s.lastRestart, lastTermination(cs))
			switch {
			case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
				s.status = cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				s.status = terminatedStateName(cs.State.Terminated)
				if cs.State.Terminated.ExitCode != 0 {
					errorReason = s.status
				}
			case cs.Ready && cs.State.Running != nil:
				running = true
				s.ready++
			}
		}
		// "Completed" from one container must not hide others still running
		// or one that failed.
		if s.status == "Completed" {
			switch {
			case running && anyConditionTrue(pod, corev1.PodReady):
				s.status = "Running"
			case errorReason != "":
				s.status = errorReason
			case running:
				s.status = "NotReady"
			}
		}
	}

	if pod.DeletionTimestamp != nil {
		switch {
		case pod.Status.Reason == nodeLostReason:
			s.status = "Unknown"
		case pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed:
			s.status = "Terminating"
		}
	}
	return s
}

// terminatedStateName names a terminated container's state: its reason
// ("Completed", "Error", "OOMKilled"), else the signal, else the exit code.
func terminatedStateName(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Reason != "":
		return t.Reason
	case t.Signal != 0:
		return fmt.Sprintf("Signal:%d", t.Signal)
	default:
		return fmt.Sprintf("ExitCode:%d", t.ExitCode)
	}
}

func isSidecarContainer(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

func lastTermination(cs corev1.ContainerStatus) time.Time {
	if t := cs.LastTerminationState.Terminated; t != nil {
		return t.FinishedAt.Time
	}
	return time.Time{}
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// firstConditionTrue reports whether the pod's first condition of type t is true.
func firstConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// anyConditionTrue reports whether any of the pod's conditions of type t is
// true; kubectl judges the Ready condition this way.
func anyConditionTrue(pod *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func firstPodIP(pod *corev1.Pod) string {
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return pod.Status.PodIP
}

// readinessGatesCell is "true/all" over spec.readinessGates, each judged by the
// first status condition of its type.
func readinessGatesCell(pod *corev1.Pod) string {
	if len(pod.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	passed := 0
	for _, g := range pod.Spec.ReadinessGates {
		if firstConditionTrue(pod, g.ConditionType) {
			passed++
		}
	}
	return fmt.Sprintf("%d/%d", passed, len(pod.Spec.ReadinessGates))
}
