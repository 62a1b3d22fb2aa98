package priorityclass

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

// SetDefaults makes pods of a class preempt lower-priority pods unless the class says
// otherwise, as upstream defaults it.
func SetDefaults(pc *schedulingv1.PriorityClass) {
	if pc.PreemptionPolicy == nil {
		policy := corev1.PreemptLowerPriority
		pc.PreemptionPolicy = &policy
	}
}
