package horizontalpodautoscaler

import (
	"context"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
)

func validHPA() *autoscalingv2.HorizontalPodAutoscaler {
	h := fullV2()
	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	return h
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   []string // "type field", in order
	}{
		{name: "valid", mutate: func(*autoscalingv2.HorizontalPodAutoscaler) {}},
		{name: "no target", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
		}, want: []string{"FieldValueRequired spec.scaleTargetRef.kind", "FieldValueRequired spec.scaleTargetRef.name", "FieldValueInvalid spec.scaleTargetRef.apiVersion"}},
		{name: "core apiVersion for a Deployment", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef.APIVersion = "v1"
		}, want: []string{"FieldValueInvalid spec.scaleTargetRef.apiVersion"}},
		{name: "core apiVersion for a ReplicationController", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: "ReplicationController", Name: "rc", APIVersion: "v1"}
		}},
		{name: "bad name", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef.Name = "a/b"
		}, want: []string{"FieldValueInvalid spec.scaleTargetRef.name"}},
		{name: "max replicas unset", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MaxReplicas = 0
		}, want: []string{"FieldValueRequired spec.maxReplicas", "FieldValueInvalid spec.maxReplicas"}},
		{name: "max below min", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas, h.Spec.MaxReplicas = ptr.To[int32](5), 3
		}, want: []string{"FieldValueInvalid spec.maxReplicas"}},
		{name: "negative min", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To[int32](-1)
		}, want: []string{"FieldValueInvalid spec.minReplicas"}},
		{name: "zero min with object metrics", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To[int32](0)
		}},
		{name: "zero min without object or external metrics", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.MinReplicas = ptr.To[int32](0)
			h.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)}
		}, want: []string{"FieldValueForbidden spec.metrics"}},
		{name: "unknown metric type", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Magic"}}
		}, want: []string{"FieldValueNotSupported spec.metrics[0].type", "FieldValueNotSupported spec.metrics[0].type"}},
		{name: "missing source", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType}}
		}, want: []string{"FieldValueRequired spec.metrics[0].pods"}},
		{name: "two sources", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			m := cpuUtilizationMetric(50)
			m.Pods = h.Spec.Metrics[2].Pods
			h.Spec.Metrics = []autoscalingv2.MetricSpec{m}
		}, want: []string{"FieldValueForbidden spec.metrics[0].pods"}},
		{name: "resource target", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[7].Resource.Target = autoscalingv2.MetricTarget{Type: "Percent", AverageUtilization: ptr.To[int32](0), AverageValue: q("1")}
		}, want: []string{"FieldValueInvalid spec.metrics[7].resource.target.type", "FieldValueInvalid spec.metrics[7].resource.target.averageUtilization",
			"FieldValueForbidden spec.metrics[7].resource.target.averageValue"}},
		{name: "container resource", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[4].ContainerResource.Container = ""
			h.Spec.Metrics[4].ContainerResource.Name = ""
		}, want: []string{"FieldValueRequired spec.metrics[4].containerResource.name", "FieldValueRequired spec.metrics[4].containerResource.container"}},
		{name: "object metric", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[0].Object.Metric.Name = ""
			h.Spec.Metrics[0].Object.Target = autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType}
		}, want: []string{"FieldValueRequired spec.metrics[0].object.metric.name", "FieldValueRequired spec.metrics[0].object.target.averageValue"}},
		{name: "external both targets, negative", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics[5].External.Target.AverageValue = q("-1")
		}, want: []string{"FieldValueInvalid spec.metrics[5].external.target.averageValue", "FieldValueForbidden spec.metrics[5].external.target.value"}},
		{name: "behavior", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleUp.StabilizationWindowSeconds = ptr.To[int32](3601)
			h.Spec.Behavior.ScaleUp.SelectPolicy = ptr.To[autoscalingv2.ScalingPolicySelect]("Most")
			h.Spec.Behavior.ScaleUp.Tolerance = q("-1")
			h.Spec.Behavior.ScaleDown.Policies = []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 1801}}
		}, want: []string{"FieldValueInvalid spec.behavior.scaleUp.stabilizationWindowSeconds", "FieldValueNotSupported spec.behavior.scaleUp.selectPolicy",
			"FieldValueInvalid spec.behavior.scaleUp.tolerance", "FieldValueNotSupported spec.behavior.scaleDown.policies[0].type",
			"FieldValueInvalid spec.behavior.scaleDown.policies[0].value", "FieldValueInvalid spec.behavior.scaleDown.policies[0].periodSeconds"}},
		{name: "no policies", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior.ScaleDown.Policies = nil
		}, want: []string{"FieldValueRequired spec.behavior.scaleDown.policies"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := validHPA()
			tc.mutate(h)
			errs := Strategy.Validate(context.Background(), h)
			if got := describe(errs); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n got %q\nwant %q\n(%v)", got, tc.want, errs.ToAggregate())
			}
		})
	}
}

func describe(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, string(e.Type)+" "+e.Field)
	}
	return out
}

func TestValidateMessages(t *testing.T) {
	h := validHPA()
	h.Spec.MaxReplicas = 1
	h.Spec.MinReplicas = ptr.To[int32](2)
	h.Spec.ScaleTargetRef.APIVersion = "v1"
	got := Strategy.Validate(context.Background(), h).ToAggregate().Error()
	want := "[spec.maxReplicas: Invalid value: 1: must be greater than or equal to `minReplicas`, " +
		`spec.scaleTargetRef.apiVersion: Invalid value: "v1": apiVersion must specify API group]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestValidateUpdate(t *testing.T) {
	old := validHPA()
	old.ResourceVersion = "1"
	old.Spec.ScaleTargetRef.APIVersion = "extensions" // no group version, accepted before
	h := old.DeepCopy()
	h.Spec.MaxReplicas = 20
	if errs := Strategy.ValidateUpdate(context.Background(), h, old); len(errs) != 0 {
		t.Errorf("unchanged apiVersion and kind are not checked again: %v", errs)
	}
	h.Spec.ScaleTargetRef.Kind = "StatefulSet"
	if got := describe(Strategy.ValidateUpdate(context.Background(), h, old)); len(got) != 1 || got[0] != "FieldValueInvalid spec.scaleTargetRef.apiVersion" {
		t.Errorf("changed kind: %v", got)
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	h := validHPA()
	h.Status.CurrentReplicas = 9
	h.Annotations[MetricSpecsAnnotation] = "[]"
	Strategy.PrepareForCreate(ctx, h)
	if h.Status.CurrentReplicas != 0 || h.Generation != 1 || h.Annotations[MetricSpecsAnnotation] != "" || h.Annotations["team"] != "a" {
		t.Errorf("PrepareForCreate: %+v", h)
	}

	old := h.DeepCopy()
	old.ResourceVersion = "1"
	old.Status.CurrentReplicas = 3
	upd := old.DeepCopy()
	upd.Status.CurrentReplicas = 7
	Strategy.PrepareForUpdate(ctx, upd, old)
	if upd.Status.CurrentReplicas != 3 || upd.Generation != 1 {
		t.Errorf("update without spec change: status %d generation %d", upd.Status.CurrentReplicas, upd.Generation)
	}
	upd.Spec.MaxReplicas = 11
	Strategy.PrepareForUpdate(ctx, upd, old)
	if upd.Generation != 2 {
		t.Errorf("spec change: generation %d, want 2", upd.Generation)
	}

	st := old.DeepCopy()
	st.Spec.MaxReplicas = 99
	st.Status.CurrentReplicas = 5
	StatusStrategy.PrepareForUpdate(ctx, st, old)
	if st.Spec.MaxReplicas != old.Spec.MaxReplicas || st.Status.CurrentReplicas != 5 {
		t.Errorf("status update: spec %d status %d", st.Spec.MaxReplicas, st.Status.CurrentReplicas)
	}
	st.Status.DesiredReplicas = -1
	st.Status.Conditions = []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, ObservedGeneration: ptr.To[int64](-2)}}
	want := []string{"FieldValueInvalid status.conditions[0].observedGeneration", "FieldValueInvalid status.desiredReplicas"}
	if got := describe(StatusStrategy.ValidateUpdate(ctx, st, old)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("status validation: %v, want %v", got, want)
	}

	for _, v := range []string{"autoscaling/v1", "autoscaling/v2"} {
		if _, ok := Strategy.GetResetFields()[fieldpathVersion(v)]; !ok {
			t.Errorf("no reset fields at %s", v)
		}
		if _, ok := StatusStrategy.GetResetFields()[fieldpathVersion(v)]; !ok {
			t.Errorf("no status reset fields at %s", v)
		}
	}
}
