package horizontalpodautoscaler

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SetDefaultsV1 applies upstream's autoscaling/v1 defaults: minReplicas 1. The CPU target a v1
// autoscaler without one gets is applied by the conversion, which sees the other metrics.
func SetDefaultsV1(h *autoscalingv1.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr.To[int32](1)
	}
}

// SetDefaults applies upstream's autoscaling/v2 defaults: minReplicas 1, a CPU utilization
// target of 80% when no metric is given, and, when a behavior is given, every unset part of
// its scaling rules (SetDefaultsBehavior).
func SetDefaults(h *autoscalingv2.HorizontalPodAutoscaler) {
	if h.Spec.MinReplicas == nil {
		h.Spec.MinReplicas = ptr.To[int32](1)
	}
	if len(h.Spec.Metrics) == 0 {
		h.Spec.Metrics = []autoscalingv2.MetricSpec{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{
					Type:               autoscalingv2.UtilizationMetricType,
					AverageUtilization: ptr.To[int32](DefaultCPUUtilization),
				},
			},
		}}
	}
	SetDefaultsBehavior(h)
}

// SetDefaultsBehavior fills a given behavior's scale-up and scale-down rules with the HPA
// controller's historic limits, field by field:
//
//	scaleUp:   no stabilization, selectPolicy Max, 4 pods or 100% per 15 s
//	scaleDown: stabilization window unset (the controller's flag decides, 300 s by default),
//	           selectPolicy Max, 100% per 15 s
func SetDefaultsBehavior(h *autoscalingv2.HorizontalPodAutoscaler) {
	b := h.Spec.Behavior
	if b == nil {
		return
	}
	b.ScaleUp = fillRules(b.ScaleUp, &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To[int32](0),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	})
	b.ScaleDown = fillRules(b.ScaleDown, &autoscalingv2.HPAScalingRules{
		SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
		},
	})
}

// fillRules returns defaults with every field set in given copied over it.
func fillRules(given, defaults *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if given == nil {
		return defaults
	}
	if given.StabilizationWindowSeconds != nil {
		defaults.StabilizationWindowSeconds = given.StabilizationWindowSeconds
	}
	if given.SelectPolicy != nil {
		defaults.SelectPolicy = given.SelectPolicy
	}
	if given.Policies != nil {
		defaults.Policies = given.Policies
	}
	if given.Tolerance != nil {
		defaults.Tolerance = given.Tolerance
	}
	return defaults
}
