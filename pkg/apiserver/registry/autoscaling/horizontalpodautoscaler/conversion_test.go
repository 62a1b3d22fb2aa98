package horizontalpodautoscaler

import (
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

var internal = schema.GroupVersion{Group: autoscalingv1.GroupName, Version: runtime.APIVersionInternal}

// newScheme registers the types as berth's API server does: both versions, and the v2 types
// as the group's internal ones.
func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypes(autoscalingv1.SchemeGroupVersion, &autoscalingv1.HorizontalPodAutoscaler{}, &autoscalingv1.HorizontalPodAutoscalerList{})
	s.AddKnownTypes(autoscalingv2.SchemeGroupVersion, &autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscalerList{})
	s.AddKnownTypes(internal, &autoscalingv2.HorizontalPodAutoscaler{}, &autoscalingv2.HorizontalPodAutoscalerList{})
	if err := RegisterConversions(s); err != nil {
		t.Fatalf("RegisterConversions: %v", err)
	}
	return s
}

func q(s string) *resource.Quantity { v := resource.MustParse(s); return &v }

var t0 = metav1.NewTime(time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC))

// fullV2 has every metric type, a current value for each, conditions and a behavior, in the
// forms that survive autoscaling/v1 (the CPU utilization target last, as v1 puts it back).
func fullV2() *autoscalingv2.HorizontalPodAutoscaler {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ing := autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "main", APIVersion: "networking.k8s.io/v1"}
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{"team": "a"}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](2),
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: ing, Metric: autoscalingv2.MetricIdentifier{Name: "requests-per-second", Selector: sel},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q("10k")}}},
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: ing, Metric: autoscalingv2.MetricIdentifier{Name: "latency"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("200m")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "packets-per-second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("1k")}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("512Mi")}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
					Name: corev1.ResourceCPU, Container: "app", Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](60)}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue-length", Selector: sel},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: q("30")}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue-per-pod"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("5")}}},
				cpuUtilizationMetric(70),
			},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleUp: &autoscalingv2.HPAScalingRules{
					StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
					Policies:  []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}},
					Tolerance: q("50m"),
				},
				ScaleDown: &autoscalingv2.HPAScalingRules{
					SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect),
					Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}},
				},
			},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: ptr.To[int64](3),
			LastScaleTime:      &t0,
			CurrentReplicas:    3,
			DesiredReplicas:    4,
			CurrentMetrics: []autoscalingv2.MetricStatus{
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
					DescribedObject: ing, Metric: autoscalingv2.MetricIdentifier{Name: "requests-per-second"},
					Current: autoscalingv2.MetricValueStatus{Value: q("9k"), AverageValue: q("3k")}}},
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
					Metric: autoscalingv2.MetricIdentifier{Name: "packets-per-second"}, Current: autoscalingv2.MetricValueStatus{AverageValue: q("900")}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceMemory, Current: autoscalingv2.MetricValueStatus{AverageValue: q("400Mi"), AverageUtilization: ptr.To[int32](40)}}},
				{Type: autoscalingv2.ContainerResourceMetricSourceType, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{
					Name: corev1.ResourceCPU, Container: "app", Current: autoscalingv2.MetricValueStatus{AverageValue: q("300m"), AverageUtilization: ptr.To[int32](55)}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue-length"}, Current: autoscalingv2.MetricValueStatus{Value: q("25"), AverageValue: q("6")}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
					Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageValue: q("250m"), AverageUtilization: ptr.To[int32](65)}}},
			},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, LastTransitionTime: t0, Reason: "ReadyForNewScale", Message: "ok", ObservedGeneration: ptr.To[int64](3)},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, LastTransitionTime: t0, Reason: "FailedGetResourceMetric"},
			},
		},
	}
}

func TestToV1Annotations(t *testing.T) {
	var v1 autoscalingv1.HorizontalPodAutoscaler
	if err := ToV1(fullV2(), &v1); err != nil {
		t.Fatal(err)
	}
	if v1.Spec.TargetCPUUtilizationPercentage == nil || *v1.Spec.TargetCPUUtilizationPercentage != 70 {
		t.Errorf("targetCPUUtilizationPercentage = %v, want 70", v1.Spec.TargetCPUUtilizationPercentage)
	}
	if v1.Status.CurrentCPUUtilizationPercentage == nil || *v1.Status.CurrentCPUUtilizationPercentage != 65 {
		t.Errorf("currentCPUUtilizationPercentage = %v, want 65", v1.Status.CurrentCPUUtilizationPercentage)
	}
	want := map[string]string{
		"team": "a",
		MetricSpecsAnnotation: `[{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"requests-per-second","targetValue":"10k","selector":{"matchLabels":{"app":"web"}}}},` +
			`{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"latency","targetValue":"0","averageValue":"200m"}},` +
			`{"type":"Pods","pods":{"metricName":"packets-per-second","targetAverageValue":"1k"}},` +
			`{"type":"Resource","resource":{"name":"memory","targetAverageValue":"512Mi"}},` +
			`{"type":"ContainerResource","containerResource":{"name":"cpu","targetAverageUtilization":60,"container":"app"}},` +
			`{"type":"External","external":{"metricName":"queue-length","metricSelector":{"matchLabels":{"app":"web"}},"targetValue":"30"}},` +
			`{"type":"External","external":{"metricName":"queue-per-pod","targetAverageValue":"5"}}]`,
		MetricStatusesAnnotation: `[{"type":"Object","object":{"target":{"kind":"Ingress","name":"main","apiVersion":"networking.k8s.io/v1"},"metricName":"requests-per-second","currentValue":"9k","averageValue":"3k"}},` +
			`{"type":"Pods","pods":{"metricName":"packets-per-second","currentAverageValue":"900"}},` +
			`{"type":"Resource","resource":{"name":"memory","currentAverageUtilization":40,"currentAverageValue":"400Mi"}},` +
			`{"type":"ContainerResource","containerResource":{"name":"cpu","currentAverageUtilization":55,"currentAverageValue":"300m","container":"app"}},` +
			`{"type":"External","external":{"metricName":"queue-length","currentValue":"25","currentAverageValue":"6"}},` +
			`{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":65,"currentAverageValue":"250m"}}]`,
		BehaviorSpecsAnnotation: `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}],"Tolerance":"50m"},` +
			`"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Min","Policies":[{"Type":"Percent","Value":10,"PeriodSeconds":60}],"Tolerance":null}}`,
		ConditionsAnnotation: `[{"type":"AbleToScale","status":"True","lastTransitionTime":"2025-03-04T05:06:07Z","reason":"ReadyForNewScale","message":"ok","observedGeneration":3},` +
			`{"type":"ScalingActive","status":"False","lastTransitionTime":"2025-03-04T05:06:07Z","reason":"FailedGetResourceMetric"}]`,
	}
	for k, w := range want {
		if got := v1.Annotations[k]; got != w {
			t.Errorf("annotation %s:\n got %s\nwant %s", k, got, w)
		}
	}
	if len(v1.Annotations) != len(want) {
		t.Errorf("annotations %v, want only %v", v1.Annotations, want)
	}
}

func TestRoundTripV2(t *testing.T) {
	s := newScheme(t)
	tests := map[string]*autoscalingv2.HorizontalPodAutoscaler{
		"every metric type": fullV2(),
		"cpu only": {
			ObjectMeta: metav1.ObjectMeta{Name: "cpu"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 3, MinReplicas: ptr.To[int32](1),
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "ReplicationController", Name: "rc", APIVersion: "v1"},
				Metrics:        []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)}},
		},
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			orig := in.DeepCopy()
			var v1 autoscalingv1.HorizontalPodAutoscaler
			if err := s.Convert(in, &v1, nil); err != nil {
				t.Fatal(err)
			}
			var back autoscalingv2.HorizontalPodAutoscaler
			if err := s.Convert(&v1, &back, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(&back, orig) {
				t.Errorf("v2 → v1 → v2:\n got %+v\nwant %+v", back, *orig)
			}
			if !apiequality.Semantic.DeepEqual(in, orig) {
				t.Errorf("conversion changed its input")
			}
			// And v1 → v2 → v1 from the v1 form, annotations and all.
			var again autoscalingv1.HorizontalPodAutoscaler
			if err := s.Convert(&back, &again, nil); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(again, v1) {
				t.Errorf("v1 → v2 → v1:\n got %+v\nwant %+v", again, v1)
			}
		})
	}
}

func TestToV2(t *testing.T) {
	tests := []struct {
		name        string
		in          autoscalingv1.HorizontalPodAutoscaler
		wantMetrics []autoscalingv2.MetricSpec
		wantCurrent []autoscalingv2.MetricStatus
		backV1      func(*autoscalingv1.HorizontalPodAutoscaler) // what v1 → v2 → v1 gives back
	}{
		{
			name:        "target CPU",
			in:          autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)}},
			wantMetrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)},
		},
		{
			name:        "no target: 80% CPU",
			in:          autoscalingv1.HorizontalPodAutoscaler{Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5}},
			wantMetrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(80)},
			backV1: func(h *autoscalingv1.HorizontalPodAutoscaler) {
				h.Spec.TargetCPUUtilizationPercentage = ptr.To[int32](80)
			},
		},
		{
			name: "current CPU",
			in: autoscalingv1.HorizontalPodAutoscaler{
				Spec:   autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)},
				Status: autoscalingv1.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentCPUUtilizationPercentage: ptr.To[int32](40)},
			},
			wantMetrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)},
			wantCurrent: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](40)}}}},
			// As upstream: back at v1 every current metric is in the annotation too.
			backV1: func(h *autoscalingv1.HorizontalPodAutoscaler) {
				h.Annotations = map[string]string{MetricStatusesAnnotation: `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":40,"currentAverageValue":"0"}}]`}
			},
		},
		{
			name: "other metrics before the CPU target",
			in: autoscalingv1.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					MetricSpecsAnnotation: `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]`,
				}},
				Spec: autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)},
			},
			wantMetrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "qps"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: q("10")}}},
				cpuUtilizationMetric(50),
			},
		},
		{
			name: "undecodable annotations are ignored",
			in: autoscalingv1.HorizontalPodAutoscaler{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{MetricSpecsAnnotation: "{", BehaviorSpecsAnnotation: "{}", "keep": "me"}},
				Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)},
			},
			wantMetrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(50)},
			backV1: func(h *autoscalingv1.HorizontalPodAutoscaler) {
				h.Annotations = map[string]string{"keep": "me"}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v2 autoscalingv2.HorizontalPodAutoscaler
			if err := ToV2(&tc.in, &v2); err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(v2.Spec.Metrics, tc.wantMetrics) {
				t.Errorf("metrics:\n got %+v\nwant %+v", v2.Spec.Metrics, tc.wantMetrics)
			}
			if !apiequality.Semantic.DeepEqual(v2.Status.CurrentMetrics, tc.wantCurrent) {
				t.Errorf("current metrics:\n got %+v\nwant %+v", v2.Status.CurrentMetrics, tc.wantCurrent)
			}
			for _, k := range roundTripAnnotations {
				if _, ok := v2.Annotations[k]; ok {
					t.Errorf("annotation %s kept at v2", k)
				}
			}
			if v2.Spec.Behavior != nil {
				t.Errorf("behavior %+v from an empty annotation", v2.Spec.Behavior)
			}
			var back autoscalingv1.HorizontalPodAutoscaler
			if err := ToV1(&v2, &back); err != nil {
				t.Fatal(err)
			}
			want := tc.in.DeepCopy()
			if tc.backV1 != nil {
				tc.backV1(want)
			}
			if !apiequality.Semantic.DeepEqual(&back, want) {
				t.Errorf("v1 → v2 → v1:\n got %+v\nwant %+v", back, *want)
			}
		})
	}
}

func TestConvertToVersionAndLists(t *testing.T) {
	s := newScheme(t)
	v1 := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](50)},
	}
	obj, err := s.ConvertToVersion(v1, internal)
	if err != nil {
		t.Fatal(err)
	}
	stored, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok || len(stored.Spec.Metrics) != 1 {
		t.Fatalf("internal: got %T %+v", obj, obj)
	}
	obj, err = s.ConvertToVersion(stored, autoscalingv1.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if back, ok := obj.(*autoscalingv1.HorizontalPodAutoscaler); !ok || back.APIVersion != "autoscaling/v1" || *back.Spec.TargetCPUUtilizationPercentage != 50 {
		t.Fatalf("v1: got %T %+v", obj, obj)
	}
	obj, err = s.ConvertToVersion(stored, autoscalingv2.SchemeGroupVersion)
	if err != nil {
		t.Fatal(err)
	}
	if v2, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler); !ok || v2.APIVersion != "autoscaling/v2" {
		t.Fatalf("v2: got %T %+v", obj, obj)
	}

	list := &autoscalingv2.HorizontalPodAutoscalerList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: []autoscalingv2.HorizontalPodAutoscaler{*fullV2(), *stored}}
	var v1List autoscalingv1.HorizontalPodAutoscalerList
	if err := s.Convert(list, &v1List, nil); err != nil {
		t.Fatal(err)
	}
	if v1List.ResourceVersion != "5" || len(v1List.Items) != 2 || *v1List.Items[0].Spec.TargetCPUUtilizationPercentage != 70 {
		t.Fatalf("v1 list: %+v", v1List)
	}
	var v2List autoscalingv2.HorizontalPodAutoscalerList
	if err := s.Convert(&v1List, &v2List, nil); err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(&v2List, list) {
		t.Errorf("list round trip:\n got %+v\nwant %+v", v2List, *list)
	}
}

func TestDefaults(t *testing.T) {
	h := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
	}}
	SetDefaults(h)
	want := autoscalingv2.HorizontalPodAutoscalerSpec{
		MinReplicas: ptr.To[int32](1),
		Metrics:     []autoscalingv2.MetricSpec{cpuUtilizationMetric(80)},
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{
					{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15},
					{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15},
				},
			},
			ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To[int32](60), SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}},
			},
		},
	}
	if !apiequality.Semantic.DeepEqual(h.Spec, want) {
		t.Errorf("v2 defaults:\n got %+v\nwant %+v", h.Spec, want)
	}
	noBehavior := &autoscalingv2.HorizontalPodAutoscaler{}
	SetDefaults(noBehavior)
	if noBehavior.Spec.Behavior != nil {
		t.Errorf("behavior defaulted from nothing: %+v", noBehavior.Spec.Behavior)
	}
	v1 := &autoscalingv1.HorizontalPodAutoscaler{}
	SetDefaultsV1(v1)
	if v1.Spec.MinReplicas == nil || *v1.Spec.MinReplicas != 1 || v1.Spec.TargetCPUUtilizationPercentage != nil {
		t.Errorf("v1 defaults: %+v", v1.Spec)
	}
}
