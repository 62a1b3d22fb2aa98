package priorityclass

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
)

func TestSetDefaults(t *testing.T) {
	never := corev1.PreemptNever
	tests := []struct {
		name string
		in   *corev1.PreemptionPolicy
		want corev1.PreemptionPolicy
	}{
		{name: "unset becomes PreemptLowerPriority", in: nil, want: corev1.PreemptLowerPriority},
		{name: "Never kept", in: &never, want: corev1.PreemptNever},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pc := &schedulingv1.PriorityClass{PreemptionPolicy: tc.in}
			SetDefaults(pc)
			if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != tc.want {
				t.Errorf("preemptionPolicy = %v, want %v", pc.PreemptionPolicy, tc.want)
			}
		})
	}
}
