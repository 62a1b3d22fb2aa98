package pod

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// updateCase changes old and/or new copies of a valid pod; want is nil when
// the update must be accepted.
type updateCase struct {
	name   string
	mutate func(old, cur *corev1.Pod)
	want   *wantErr
}

func updateCases() []updateCase {
	const specDiff = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"
	ungate := func(old, cur *corev1.Pod) { old.Spec.SchedulingGates, cur.Spec.SchedulingGates = nil, nil }
	return []updateCase{
		{"no change", func(old, cur *corev1.Pod) {}, nil},
		{"labels and annotations may change", func(old, cur *corev1.Pod) { cur.Labels["v"] = "2"; cur.Annotations["n"] = "x" }, nil},
		{"images may change", func(old, cur *corev1.Pod) {
			webCtr(cur).Image = "nginx:1.28"
			cur.Spec.InitContainers[0].Image = "migrate:v3"
		}, nil},
		{"image stays set", func(old, cur *corev1.Pod) { webCtr(cur).Image = "" },
			&wantErr{"spec.containers[0].image", required, ""}},
		{"activeDeadlineSeconds may go down", func(old, cur *corev1.Pod) { cur.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }, nil},
		{"activeDeadlineSeconds may be set", func(old, cur *corev1.Pod) { old.Spec.ActiveDeadlineSeconds = nil }, nil},
		{"activeDeadlineSeconds may not go up", func(old, cur *corev1.Pod) { cur.Spec.ActiveDeadlineSeconds = ptr.To[int64](7200) },
			&wantErr{"spec.activeDeadlineSeconds", invalid, "must be less than or equal to previous value"}},
		{"activeDeadlineSeconds may not be removed", func(old, cur *corev1.Pod) { cur.Spec.ActiveDeadlineSeconds = nil },
			&wantErr{"spec.activeDeadlineSeconds", invalid, "must not update from a positive integer to nil value"}},
		{"tolerations may be added", func(old, cur *corev1.Pod) {
			cur.Spec.Tolerations = append(cur.Spec.Tolerations, corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists})
		}, nil},
		{"tolerationSeconds may change", func(old, cur *corev1.Pod) { cur.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](30) }, nil},
		{"tolerations may not change", func(old, cur *corev1.Pod) { cur.Spec.Tolerations[1].Value = "other" },
			&wantErr{"spec.tolerations", forbidden, "existing toleration can not be modified except its tolerationSeconds"}},
		{"scheduling gates may be removed", func(old, cur *corev1.Pod) { cur.Spec.SchedulingGates = nil }, nil},
		{"scheduling gates may not be added", func(old, cur *corev1.Pod) {
			cur.Spec.SchedulingGates = append(cur.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: "example.com/more"})
		}, &wantErr{"spec.schedulingGates[1].name", forbidden, "only deletion is allowed, but found new scheduling gate 'example.com/more'"}},
		{"negative grace period may become 1", func(old, cur *corev1.Pod) {
			old.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-1)
			cur.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
			webCtr(old).Lifecycle.PreStop, webCtr(cur).Lifecycle.PreStop = nil, nil
		}, nil},
		{"grace period is otherwise immutable", func(old, cur *corev1.Pod) { cur.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10) },
			&wantErr{"spec", forbidden, specDiff}},
		{"restartPolicy is immutable", func(old, cur *corev1.Pod) { cur.Spec.RestartPolicy = corev1.RestartPolicyNever },
			&wantErr{"spec", forbidden, `"restartPolicy": "Never"`}},
		{"containers may not be added", func(old, cur *corev1.Pod) {
			cur.Spec.Containers = append(cur.Spec.Containers, minimalContainer("extra"))
		}, &wantErr{"spec.containers", forbidden, "pod updates may not add or remove containers"}},
		{"gated pods may gain node selectors", func(old, cur *corev1.Pod) { cur.Spec.NodeSelector["disk"] = "ssd" }, nil},
		{"gated pods may not change node selectors", func(old, cur *corev1.Pod) { cur.Spec.NodeSelector["kubernetes.io/os"] = "windows" },
			&wantErr{"spec.nodeSelector", invalid, "only additions to spec.nodeSelector are allowed (no mutations or deletions)"}},
		{"gated pods may gain node affinity requirements", func(old, cur *corev1.Pod) {
			nodeTerm(cur).MatchExpressions = append(nodeTerm(cur).MatchExpressions, corev1.NodeSelectorRequirement{Key: "disk", Operator: corev1.NodeSelectorOpExists})
		}, nil},
		{"gated pods may not drop node affinity requirements", func(old, cur *corev1.Pod) { nodeTerm(cur).MatchExpressions = nodeTerm(cur).MatchExpressions[1:] },
			&wantErr{"spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]", invalid, "only additions are allowed (no mutations or deletions)"}},
		{"scheduled pods keep their node selectors", func(old, cur *corev1.Pod) { ungate(old, cur); cur.Spec.NodeSelector["disk"] = "ssd" },
			&wantErr{"spec", forbidden, specDiff}},
		{"namespace is immutable", func(old, cur *corev1.Pod) { cur.Namespace = "other" },
			&wantErr{"metadata.namespace", invalid, "field is immutable"}},
		{"mirror annotation cannot be added", func(old, cur *corev1.Pod) {
			ungate(old, cur)
			old.Spec.NodeName, cur.Spec.NodeName = "node-1", "node-1"
			cur.Annotations[corev1.MirrorPodAnnotationKey] = "x"
		}, &wantErr{"metadata.annotations[kubernetes.io/config.mirror]", forbidden, "may not add mirror pod annotation"}},
		{"the new pod is validated too", func(old, cur *corev1.Pod) { cur.Labels["bad key"] = "v" },
			&wantErr{"metadata.labels", invalid, "name part must consist of alphanumeric characters"}},
	}
}

func TestValidatePodUpdate(t *testing.T) {
	for _, tc := range updateCases() {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := fullValidPod(), fullValidPod()
			old.ResourceVersion, cur.ResourceVersion = "1", "1"
			tc.mutate(old, cur)
			errs := ValidatePodUpdate(cur, old)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Errorf("unexpected errors:\n%s", errorLines(errs))
				}
				return
			}
			assertHasError(t, errs, *tc.want)
		})
	}
}

// The forbidden-change error shows what changed, as a diff of the specs.
func TestValidatePodUpdateShowsDiff(t *testing.T) {
	old, cur := fullValidPod(), fullValidPod()
	old.ResourceVersion, cur.ResourceVersion = "1", "1"
	cur.Spec.Hostname = "web-1"
	errs := ValidatePodUpdate(cur, old)
	if len(errs) != 1 || !strings.Contains(errs[0].Detail, `- "hostname": "web-0",`) || !strings.Contains(errs[0].Detail, `+ "hostname": "web-1",`) {
		t.Errorf("want one error with a diff of hostname, got:\n%s", errorLines(errs))
	}
}

// runningPod is the full pod as a node agent reports it once running.
func runningPod() *corev1.Pod {
	p := fullValidPod()
	p.Spec.SchedulingGates = nil
	p.Spec.NodeName = "node-1"
	p.Status = corev1.PodStatus{
		Phase:    corev1.PodRunning,
		QOSClass: corev1.PodQOSBurstable,
		HostIP:   "192.168.0.10", HostIPs: []corev1.HostIP{{IP: "192.168.0.10"}, {IP: "fd00::10"}},
		PodIP: "10.244.1.5", PodIPs: []corev1.PodIP{{IP: "10.244.1.5"}, {IP: "fd00:10:244::5"}},
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			{Type: "example.com/load-balancer-ready", Status: corev1.ConditionTrue},
		},
		InitContainerStatuses: []corev1.ContainerStatus{
			{Name: "migrate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "proxy", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
		},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "web", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
	}
	return p
}

func terminatedWith(code int32) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}
}

func statusCases() []updateCase {
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	return []updateCase{
		{"no change", func(old, cur *corev1.Pod) {}, nil},
		{"custom condition type", func(old, cur *corev1.Pod) { cur.Status.Conditions[1].Type = "a/b/c" },
			&wantErr{"status.conditions[1].Type", invalid, "a valid label key must consist of"}},
		{"condition observedGeneration", func(old, cur *corev1.Pod) { cur.Status.Conditions[0].ObservedGeneration = -1 },
			&wantErr{"status.conditions[0].observedGeneration", invalid, "must be a non-negative integer"}},
		{"nominatedNodeName", func(old, cur *corev1.Pod) {
			old.Spec.NodeName, cur.Spec.NodeName = "", ""
			cur.Status.NominatedNodeName = "Node_2"
		}, &wantErr{"status.nominatedNodeName", invalid, "a lowercase RFC 1123 subdomain"}},
		{"no nominatedNodeName once bound", func(old, cur *corev1.Pod) { cur.Status.NominatedNodeName = "node-2" },
			&wantErr{"status.nominatedNodeName", forbidden, "may not be set on pods that are already bound to a node"}},
		{"nodeName is not changed here", func(old, cur *corev1.Pod) { cur.Spec.NodeName = "node-2" },
			&wantErr{"status.nodeName", forbidden, "may not be changed directly"}},
		{"qosClass is immutable", func(old, cur *corev1.Pod) { cur.Status.QOSClass = corev1.PodQOSGuaranteed },
			&wantErr{"status.qosClass", invalid, "field is immutable"}},
		{"podIPs are IPs", func(old, cur *corev1.Pod) { cur.Status.PodIPs[1].IP = "fd00::zz" },
			&wantErr{"status.podIPs[1]", invalid, "must be a valid IP address"}},
		{"podIP is podIPs[0]", func(old, cur *corev1.Pod) { cur.Status.PodIP = "10.244.1.6" },
			&wantErr{"status.podIPs[0].ip", invalid, "must be equal to `podIP`"}},
		{"podIP and podIPs together", func(old, cur *corev1.Pod) { cur.Status.PodIPs = nil },
			&wantErr{"status.podIPs", invalid, "podIP and podIPs must either both be set or both be unset"}},
		{"one podIP per family", func(old, cur *corev1.Pod) { cur.Status.PodIPs[1].IP = "10.244.1.7" },
			&wantErr{"status.podIPs", invalid, "may specify no more than one IP for each IP family"}},
		{"hostIP is hostIPs[0]", func(old, cur *corev1.Pod) { cur.Status.HostIP = "192.168.0.11" },
			&wantErr{"status.hostIPs[0].ip", invalid, "must be equal to `hostIP`"}},
		{"observedGeneration", func(old, cur *corev1.Pod) { cur.Status.ObservedGeneration = -1 },
			&wantErr{"status.observedGeneration", invalid, "must be a non-negative integer"}},
		{"restartPolicy Always restarts", func(old, cur *corev1.Pod) {
			webCtr(old).RestartPolicy, webCtr(cur).RestartPolicy, webCtr(old).RestartPolicyRules, webCtr(cur).RestartPolicyRules = nil, nil, nil, nil
			old.Status.ContainerStatuses[0].State = terminatedWith(0)
		}, nil},
		{"restartPolicy Never does not", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyNever, corev1.RestartPolicyNever
			webCtr(old).RestartPolicy, webCtr(cur).RestartPolicy, webCtr(old).RestartPolicyRules, webCtr(cur).RestartPolicyRules = nil, nil, nil, nil
			old.Status.ContainerStatuses[0].State = terminatedWith(1)
		}, &wantErr{"status.containerStatuses[0].state", forbidden, "may not be transitioned to non-terminated state"}},
		{"container OnFailure restarts failures", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyNever, corev1.RestartPolicyNever
			old.Status.ContainerStatuses[0].State = terminatedWith(1)
		}, nil},
		{"container OnFailure keeps successes", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyNever, corev1.RestartPolicyNever
			old.Status.ContainerStatuses[0].State = terminatedWith(0)
		}, &wantErr{"status.containerStatuses[0].state", forbidden, "may not be transitioned to non-terminated state"}},
		{"restart rules restart matching exit codes", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyNever, corev1.RestartPolicyNever
			webCtr(old).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			webCtr(cur).RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			old.Status.ContainerStatuses[0].State = terminatedWith(42)
		}, nil},
		{"init containers do not run twice", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyOnFailure, corev1.RestartPolicyOnFailure
			cur.Status.InitContainerStatuses[0].State = running
		}, &wantErr{"status.initContainerStatuses[0].state", forbidden, "may not be transitioned to non-terminated state"}},
		{"sidecars restart", func(old, cur *corev1.Pod) {
			old.Spec.RestartPolicy, cur.Spec.RestartPolicy = corev1.RestartPolicyNever, corev1.RestartPolicyNever
			old.Status.InitContainerStatuses[1].State = terminatedWith(0)
		}, nil},
		{"ephemeral containers never restart", func(old, cur *corev1.Pod) {
			old.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: terminatedWith(0)}}
			cur.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "debug", State: running}}
		}, &wantErr{"status.ephemeralContainerStatuses[0].state", forbidden, "may not be transitioned to non-terminated state"}},
	}
}

func TestValidatePodStatusUpdate(t *testing.T) {
	for _, tc := range statusCases() {
		t.Run(tc.name, func(t *testing.T) {
			old, cur := runningPod(), runningPod()
			old.ResourceVersion, cur.ResourceVersion = "1", "1"
			tc.mutate(old, cur)
			errs := ValidatePodStatusUpdate(cur, old)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Errorf("unexpected errors:\n%s", errorLines(errs))
				}
				return
			}
			assertHasError(t, errs, *tc.want)
		})
	}
}

func bindingCases() []struct {
	name    string
	binding corev1.Binding
	want    *wantErr
} {
	return []struct {
		name    string
		binding corev1.Binding
		want    *wantErr
	}{
		{"to a node", corev1.Binding{Target: corev1.ObjectReference{Kind: "Node", Name: "node-1"}}, nil},
		{"kind may be empty", corev1.Binding{Target: corev1.ObjectReference{Name: "node-1"}}, nil},
		{"only nodes", corev1.Binding{Target: corev1.ObjectReference{Kind: "Pod", Name: "node-1"}},
			&wantErr{"target.kind", notSupported, `supported values: "Node", "<empty>"`}},
		{"name required", corev1.Binding{Target: corev1.ObjectReference{Kind: "Node"}},
			&wantErr{"target.name", required, ""}},
		{"name is a node name", corev1.Binding{Target: corev1.ObjectReference{Name: "Node_1"}},
			&wantErr{"target.name", invalid, "a lowercase RFC 1123 subdomain"}},
	}
}

func TestValidateBinding(t *testing.T) {
	for _, tc := range bindingCases() {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateBinding(&tc.binding)
			if tc.want == nil {
				if len(errs) != 0 {
					t.Errorf("unexpected errors:\n%s", errorLines(errs))
				}
				return
			}
			assertHasError(t, errs, *tc.want)
		})
	}
}
