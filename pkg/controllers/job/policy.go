package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// The Job's two policies, both pure: podFailurePolicy decides what a failed pod means
// (fail the Job, fail its index, not count it, count it), successPolicy when an Indexed Job
// has succeeded before all its indexes have.

// policyMatch is what a failed pod's match against a podFailurePolicy says.
type policyMatch struct {
	// failJobMessage, set when the pod matched a FailJob rule, is the Job's failure message.
	failJobMessage *string
	// count is false when the pod matched an Ignore rule: its failure counts towards no
	// backoff limit.
	count bool
	// action is the matched rule's action; nil when no rule matched.
	action *batchv1.PodFailurePolicyAction
}

// matchPodFailurePolicy matches a failed pod against the rules, in order; the first rule
// that matches decides. With no policy, or no rule matching, the failure counts.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) policyMatch {
	if policy == nil {
		return policyMatch{count: true}
	}
	for index, rule := range policy.Rules {
		action := rule.Action
		var failJob func() string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJob = func() string {
				return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
					cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, action, index)
			}
		case rule.OnPodConditions != nil:
			cond := matchOnPodConditions(&pod.Status, rule.OnPodConditions)
			if cond == nil {
				continue
			}
			failJob = func() string {
				return fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
					pod.Namespace, pod.Name, cond.Type, action, index)
			}
		default:
			continue
		}
		switch action {
		case batchv1.PodFailurePolicyActionIgnore:
			return policyMatch{count: false, action: &action}
		case batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
			return policyMatch{count: true, action: &action}
		case batchv1.PodFailurePolicyActionFailJob:
			msg := failJob()
			return policyMatch{failJobMessage: &msg, count: true, action: &action}
		}
		// An action this version does not know (validation refuses it) matches nothing,
		// as upstream's switch.
	}
	return policyMatch{count: true}
}

// matchOnExitCodes is the first terminated container, regular then init, whose non-zero
// exit code meets the requirement.
func matchOnExitCodes(status *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	if cs := matchExitCode(status.ContainerStatuses, req); cs != nil {
		return cs
	}
	return matchExitCode(status.InitContainerStatuses, req)
}

func matchExitCode(statuses []corev1.ContainerStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for i := range statuses {
		cs := &statuses[i]
		t := cs.State.Terminated
		if t == nil || t.ExitCode == 0 {
			continue
		}
		if req.ContainerName != nil && *req.ContainerName != cs.Name {
			continue
		}
		switch req.Operator {
		case batchv1.PodFailurePolicyOnExitCodesOpIn:
			if slices.Contains(req.Values, t.ExitCode) {
				return cs
			}
		case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
			if !slices.Contains(req.Values, t.ExitCode) {
				return cs
			}
		}
	}
	return nil
}

// matchOnPodConditions is the first pod condition that one of the patterns names with its
// status.
func matchOnPodConditions(status *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range status.Conditions {
		c := &status.Conditions[i]
		for _, p := range patterns {
			if c.Type == p.Type && c.Status == p.Status {
				return c
			}
		}
	}
	return nil
}

// failJobMessage is the message of the first failed pod that matches a FailJob rule.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) *string {
	if job.Spec.PodFailurePolicy == nil {
		return nil
	}
	for _, p := range pods {
		if isPodFailed(p, job) {
			if m := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); m.failJobMessage != nil {
				return m.failJobMessage
			}
		}
	}
	return nil
}

// countedFailures is how many of the failed pods count towards the backoff limit.
func countedFailures(job *batchv1.Job, failed []*corev1.Pod) int {
	n := len(failed)
	if job.Spec.PodFailurePolicy != nil {
		for _, p := range failed {
			if !matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).count {
				n--
			}
		}
	}
	return n
}

// matchSuccessPolicy reports whether the succeeded indexes meet a rule of the policy, and the
// SuccessCriteriaMet message naming the first such rule.
func matchSuccessPolicy(logger klog.Logger, policy *batchv1.SuccessPolicy, completions int32, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for index, rule := range policy.Rules {
		met := false
		if rule.SucceededIndexes != nil {
			required := parseIntervals(logger, *rule.SucceededIndexes, int(completions))
			if len(required) == 0 {
				continue // unreadable: validation should have refused it
			}
			met = meetsIndexesRule(required, succeeded, rule.SucceededCount)
		} else if rule.SucceededCount != nil {
			met = succeeded.total() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", index), true
		}
	}
	return "", false
}

// meetsIndexesRule reports whether succeeded covers all of required, or at least count of
// them when count is set.
func meetsIndexesRule(required, succeeded intervals, count *int32) bool {
	contains := 0
	r, s := 0, 0
	for r < len(required) && s < len(succeeded) {
		if overlap := min(required[r].Last, succeeded[s].Last) - max(required[r].First, succeeded[s].First) + 1; overlap > 0 {
			contains += overlap
		}
		switch {
		case succeeded[s].Last < required[r].Last:
			s++
		case succeeded[s].Last > required[r].Last:
			r++
		default:
			s++
			r++
		}
	}
	return contains == required.total() || (count != nil && contains >= int(*count))
}
