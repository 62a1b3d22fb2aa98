package pod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mergeMatchLabelKeys turns the matchLabelKeys (and mismatchLabelKeys) of a new pod's
// inter-pod affinity terms and topology spread constraints into requirements of their label
// selectors, with the values of the pod's own labels, as Kubernetes does on create. The
// scheduler then needs only the selectors.
func mergeMatchLabelKeys(pod *corev1.Pod) {
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			mergeTerms(pod.Labels, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
		if a.PodAntiAffinity != nil {
			mergeTerms(pod.Labels, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution, a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		}
	}
	for i := range pod.Spec.TopologySpreadConstraints {
		c := &pod.Spec.TopologySpreadConstraints[i]
		addRequirements(c.LabelSelector, pod.Labels, c.MatchLabelKeys, metav1.LabelSelectorOpIn)
	}
}

func mergeTerms(podLabels map[string]string, required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm) {
	merge := func(t *corev1.PodAffinityTerm) {
		addRequirements(t.LabelSelector, podLabels, t.MatchLabelKeys, metav1.LabelSelectorOpIn)
		addRequirements(t.LabelSelector, podLabels, t.MismatchLabelKeys, metav1.LabelSelectorOpNotIn)
	}
	for i := range required {
		merge(&required[i])
	}
	for i := range preferred {
		merge(&preferred[i].PodAffinityTerm)
	}
}

// addRequirements adds "key op (value)" for each key the pod has a label for. A nil selector
// matches nothing and stays nil.
func addRequirements(sel *metav1.LabelSelector, podLabels map[string]string, keys []string, op metav1.LabelSelectorOperator) {
	if sel == nil {
		return
	}
	for _, key := range keys {
		if value, ok := podLabels[key]; ok {
			sel.MatchExpressions = append(sel.MatchExpressions, metav1.LabelSelectorRequirement{
				Key: key, Operator: op, Values: []string{value},
			})
		}
	}
}
