package horizontalpodautoscaler

import (
	"encoding/json"
	"fmt"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/apimachinery/pkg/runtime"
)

// The annotations in which an autoscaling/v1 HorizontalPodAutoscaler carries what its version
// cannot say, as kube-apiserver names them.
const (
	// MetricSpecsAnnotation holds the metrics other than CPU utilization, as v1 MetricSpecs.
	MetricSpecsAnnotation = "autoscaling.alpha.kubernetes.io/metrics"
	// MetricStatusesAnnotation holds every current metric, as v1 MetricStatuses.
	MetricStatusesAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	// ConditionsAnnotation holds the status conditions, as v1 conditions.
	ConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	// BehaviorSpecsAnnotation holds the scaling behavior.
	BehaviorSpecsAnnotation = "autoscaling.alpha.kubernetes.io/behavior"
	// The tolerance annotations are never written; like kube-apiserver, berth drops them.
	toleranceScaleDownAnnotation = "autoscaling.alpha.kubernetes.io/scale-down-tolerance"
	toleranceScaleUpAnnotation   = "autoscaling.alpha.kubernetes.io/scale-up-tolerance"

	// DefaultCPUUtilization is the CPU utilization target of an autoscaler given no metric.
	DefaultCPUUtilization = 80
)

var roundTripAnnotations = []string{
	MetricSpecsAnnotation, MetricStatusesAnnotation, ConditionsAnnotation, BehaviorSpecsAnnotation,
	toleranceScaleDownAnnotation, toleranceScaleUpAnnotation,
}

// DropRoundTripAnnotations returns annotations without the ones conversions write. It returns
// annotations itself when it has none of them, and a copy otherwise.
func DropRoundTripAnnotations(annotations map[string]string) map[string]string {
	out, _ := dropRoundTrip(annotations)
	return out
}

// dropRoundTrip is DropRoundTripAnnotations, also saying whether it copied.
func dropRoundTrip(annotations map[string]string) (map[string]string, bool) {
	found := false
	for _, k := range roundTripAnnotations {
		if _, ok := annotations[k]; ok {
			found = true
			break
		}
	}
	if !found {
		return annotations, false
	}
	out := copyMap(annotations)
	for _, k := range roundTripAnnotations {
		delete(out, k)
	}
	return out, true
}

// RegisterConversions registers the conversions between autoscaling/v1 HorizontalPodAutoscalers
// and the stored autoscaling/v2 ones, with upstream's semantics:
//
//	autoscaling/v1                          autoscaling/v2
//	spec.targetCPUUtilizationPercentage     a Resource cpu metric with an Utilization target
//	status.currentCPUUtilizationPercentage  a Resource cpu current metric's averageUtilization
//	annotation .../metrics                  the other metrics
//	annotation .../current-metrics          status.currentMetrics (all of them)
//	annotation .../conditions               status.conditions
//	annotation .../behavior                 spec.behavior
//
// A v1 autoscaler with no metric at all gets the implicit CPU target of 80%. Like upstream's
// generated conversions, the output may share pointers with the input; annotations are copied
// before they change.
func RegisterConversions(s *runtime.Scheme) error {
	funcs := []struct {
		from, to any
		fn       conversion.ConversionFunc
	}{
		{(*autoscalingv1.HorizontalPodAutoscaler)(nil), (*autoscalingv2.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
			return ToV2(a.(*autoscalingv1.HorizontalPodAutoscaler), b.(*autoscalingv2.HorizontalPodAutoscaler))
		}},
		{(*autoscalingv2.HorizontalPodAutoscaler)(nil), (*autoscalingv1.HorizontalPodAutoscaler)(nil), func(a, b any, _ conversion.Scope) error {
			return ToV1(a.(*autoscalingv2.HorizontalPodAutoscaler), b.(*autoscalingv1.HorizontalPodAutoscaler))
		}},
		{(*autoscalingv1.HorizontalPodAutoscalerList)(nil), (*autoscalingv2.HorizontalPodAutoscalerList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*autoscalingv1.HorizontalPodAutoscalerList), b.(*autoscalingv2.HorizontalPodAutoscalerList)
			out.ListMeta = in.ListMeta
			out.Items = nil
			if in.Items != nil {
				out.Items = make([]autoscalingv2.HorizontalPodAutoscaler, len(in.Items))
				for i := range in.Items {
					if err := ToV2(&in.Items[i], &out.Items[i]); err != nil {
						return err
					}
				}
			}
			return nil
		}},
		{(*autoscalingv2.HorizontalPodAutoscalerList)(nil), (*autoscalingv1.HorizontalPodAutoscalerList)(nil), func(a, b any, _ conversion.Scope) error {
			in, out := a.(*autoscalingv2.HorizontalPodAutoscalerList), b.(*autoscalingv1.HorizontalPodAutoscalerList)
			out.ListMeta = in.ListMeta
			out.Items = nil
			if in.Items != nil {
				out.Items = make([]autoscalingv1.HorizontalPodAutoscaler, len(in.Items))
				for i := range in.Items {
					if err := ToV1(&in.Items[i], &out.Items[i]); err != nil {
						return err
					}
				}
			}
			return nil
		}},
	}
	for _, f := range funcs {
		if err := s.AddConversionFunc(f.from, f.to, f.fn); err != nil {
			return fmt.Errorf("register conversion %T to %T: %w", f.from, f.to, err)
		}
	}
	return nil
}

// isCPUUtilization reports whether m is the metric v1's targetCPUUtilizationPercentage says.
func isCPUUtilization(m *autoscalingv2.MetricSpec) bool {
	return m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
		m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil
}

func cpuUtilizationMetric(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{
		Type: autoscalingv2.ResourceMetricSourceType,
		Resource: &autoscalingv2.ResourceMetricSource{
			Name:   corev1.ResourceCPU,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
		},
	}
}

// ToV1 converts a stored (autoscaling/v2) autoscaler to autoscaling/v1. TypeMeta is left to the
// scheme.
func ToV1(in *autoscalingv2.HorizontalPodAutoscaler, out *autoscalingv1.HorizontalPodAutoscaler) error {
	*out = autoscalingv1.HorizontalPodAutoscaler{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	// Only the annotations this conversion writes may be on the result.
	annotations, copied := dropRoundTrip(in.Annotations)
	set := func(key string, v any) error {
		enc, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("encoding the %s annotation: %w", key, err)
		}
		if !copied {
			annotations = copyMap(annotations)
			copied = true
		}
		annotations[key] = string(enc)
		return nil
	}

	var others []autoscalingv1.MetricSpec
	for i := range in.Spec.Metrics {
		m := &in.Spec.Metrics[i]
		if isCPUUtilization(m) {
			if out.Spec.TargetCPUUtilizationPercentage == nil {
				v := *m.Resource.Target.AverageUtilization
				out.Spec.TargetCPUUtilizationPercentage = &v
			}
			continue
		}
		others = append(others, metricSpecToV1(m))
	}
	for i := range in.Status.CurrentMetrics {
		m := &in.Status.CurrentMetrics[i]
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU && m.Resource.Current.AverageUtilization != nil {
			v := *m.Resource.Current.AverageUtilization
			out.Status.CurrentCPUUtilizationPercentage = &v
		}
	}

	if len(others) > 0 {
		if err := set(MetricSpecsAnnotation, others); err != nil {
			return err
		}
	}
	// All current metrics, CPU utilization too: the annotation keeps its raw value as well.
	if len(in.Status.CurrentMetrics) > 0 {
		current := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
		for i := range in.Status.CurrentMetrics {
			current[i] = metricStatusToV1(&in.Status.CurrentMetrics[i])
		}
		if err := set(MetricStatusesAnnotation, current); err != nil {
			return err
		}
	}
	if in.Spec.Behavior != nil {
		if err := set(BehaviorSpecsAnnotation, behaviorToAnnotation(in.Spec.Behavior)); err != nil {
			return err
		}
	}
	if len(in.Status.Conditions) > 0 {
		conditions := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			conditions[i] = autoscalingv1.HorizontalPodAutoscalerCondition{
				Type:               autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
				Status:             c.Status,
				LastTransitionTime: c.LastTransitionTime,
				Reason:             c.Reason,
				Message:            c.Message,
				ObservedGeneration: c.ObservedGeneration,
			}
		}
		if err := set(ConditionsAnnotation, conditions); err != nil {
			return err
		}
	}
	out.Annotations = annotations
	return nil
}

// ToV2 converts an autoscaling/v1 autoscaler to the stored autoscaling/v2 form. Annotations
// that do not decode are ignored, as upstream ignores them.
func ToV2(in *autoscalingv1.HorizontalPodAutoscaler, out *autoscalingv2.HorizontalPodAutoscaler) error {
	*out = autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   out.TypeMeta,
		ObjectMeta: in.ObjectMeta,
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    in.Spec.MinReplicas,
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: in.Status.ObservedGeneration,
			LastScaleTime:      in.Status.LastScaleTime,
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	if in.Spec.TargetCPUUtilizationPercentage != nil {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(*in.Spec.TargetCPUUtilizationPercentage)}
	}
	if in.Status.CurrentCPUUtilizationPercentage != nil {
		v := *in.Status.CurrentCPUUtilizationPercentage
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{
			Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{
				Name:    corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: &v},
			},
		}}
	}

	annotations := in.Annotations
	if enc, ok := annotations[MetricSpecsAnnotation]; ok {
		var others []autoscalingv1.MetricSpec
		if json.Unmarshal([]byte(enc), &others) == nil {
			// The other metrics first, then the CPU utilization target, as upstream orders them.
			metrics := make([]autoscalingv2.MetricSpec, 0, len(others)+len(out.Spec.Metrics))
			for i := range others {
				metrics = append(metrics, metricSpecToV2(&others[i]))
			}
			out.Spec.Metrics = append(metrics, out.Spec.Metrics...)
		}
	}
	if enc, ok := annotations[BehaviorSpecsAnnotation]; ok {
		var b behaviorAnnotation
		if json.Unmarshal([]byte(enc), &b) == nil && (b.ScaleUp != nil || b.ScaleDown != nil) {
			out.Spec.Behavior = behaviorFromAnnotation(&b)
		}
	}
	if enc, ok := annotations[MetricStatusesAnnotation]; ok {
		// They say more than currentCPUUtilizationPercentage: they replace it.
		var current []autoscalingv1.MetricStatus
		if json.Unmarshal([]byte(enc), &current) == nil {
			out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(current))
			for i := range current {
				out.Status.CurrentMetrics[i] = metricStatusToV2(&current[i])
			}
		}
	}
	// autoscaling/v1's controller used to target 80% CPU when given no target; v2 says so.
	if len(out.Spec.Metrics) == 0 {
		out.Spec.Metrics = []autoscalingv2.MetricSpec{cpuUtilizationMetric(DefaultCPUUtilization)}
	}
	if enc, ok := annotations[ConditionsAnnotation]; ok {
		var conditions []autoscalingv1.HorizontalPodAutoscalerCondition
		if json.Unmarshal([]byte(enc), &conditions) == nil {
			out.Status.Conditions = make([]autoscalingv2.HorizontalPodAutoscalerCondition, len(conditions))
			for i, c := range conditions {
				out.Status.Conditions[i] = autoscalingv2.HorizontalPodAutoscalerCondition{
					Type:               autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type),
					Status:             c.Status,
					LastTransitionTime: c.LastTransitionTime,
					Reason:             c.Reason,
					Message:            c.Message,
					ObservedGeneration: c.ObservedGeneration,
				}
			}
		}
	}
	out.Annotations = DropRoundTripAnnotations(annotations)
	return nil
}

func metricSpecToV1(in *autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName:   s.Metric.Name,
			Selector:     s.Metric.Selector,
			AverageValue: s.Target.AverageValue,
		}
		if s.Target.Value != nil {
			o.TargetValue = *s.Target.Value
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		p := &autoscalingv1.PodsMetricSource{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Target.AverageValue != nil {
			p.TargetAverageValue = *s.Target.AverageValue
		}
		out.Pods = p
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv1.ResourceMetricSource{
			Name:                     s.Name,
			TargetAverageUtilization: s.Target.AverageUtilization,
			TargetAverageValue:       s.Target.AverageValue,
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{
			Name:                     s.Name,
			Container:                s.Container,
			TargetAverageUtilization: s.Target.AverageUtilization,
			TargetAverageValue:       s.Target.AverageValue,
		}
	}
	if s := in.External; s != nil {
		out.External = &autoscalingv1.ExternalMetricSource{
			MetricName:         s.Metric.Name,
			MetricSelector:     s.Metric.Selector,
			TargetValue:        s.Target.Value,
			TargetAverageValue: s.Target.AverageValue,
		}
	}
	return out
}

// utilizationOrAverage is the target type v1's (utilization, average value) pair stands for.
func utilizationOrAverage(utilization *int32) autoscalingv2.MetricTargetType {
	if utilization == nil {
		return autoscalingv2.AverageValueMetricType
	}
	return autoscalingv2.UtilizationMetricType
}

func metricSpecToV2(in *autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target:          autoscalingv2.MetricTarget{AverageValue: s.AverageValue},
		}
		value := s.TargetValue
		if s.AverageValue == nil {
			o.Target.Type = autoscalingv2.ValueMetricType
			o.Target.Value = &value
		} else {
			o.Target.Type = autoscalingv2.AverageValueMetricType
			// v1 always serializes targetValue: a zero one beside an average value was unset.
			if !value.IsZero() {
				o.Target.Value = &value
			}
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		avg := s.TargetAverageValue
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg},
		}
	}
	if s := in.Resource; s != nil {
		out.Resource = &autoscalingv2.ResourceMetricSource{
			Name: s.Name,
			Target: autoscalingv2.MetricTarget{
				Type:               utilizationOrAverage(s.TargetAverageUtilization),
				AverageValue:       s.TargetAverageValue,
				AverageUtilization: s.TargetAverageUtilization,
			},
		}
	}
	if s := in.ContainerResource; s != nil {
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{
			Name:      s.Name,
			Container: s.Container,
			Target: autoscalingv2.MetricTarget{
				Type:               utilizationOrAverage(s.TargetAverageUtilization),
				AverageValue:       s.TargetAverageValue,
				AverageUtilization: s.TargetAverageUtilization,
			},
		}
	}
	if s := in.External; s != nil {
		typ := autoscalingv2.ValueMetricType
		if s.TargetValue == nil {
			typ = autoscalingv2.AverageValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Target: autoscalingv2.MetricTarget{Type: typ, Value: s.TargetValue, AverageValue: s.TargetAverageValue},
		}
	}
	return out
}

func metricStatusToV1(in *autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		o := &autoscalingv1.ObjectMetricStatus{
			Target:     autoscalingv1.CrossVersionObjectReference(s.DescribedObject),
			MetricName: s.Metric.Name,
			Selector:   s.Metric.Selector,
		}
		if s.Current.Value != nil {
			o.CurrentValue = *s.Current.Value
		}
		if s.Current.AverageValue != nil {
			avg := *s.Current.AverageValue
			o.AverageValue = &avg
		}
		out.Object = o
	}
	if s := in.Pods; s != nil {
		p := &autoscalingv1.PodsMetricStatus{MetricName: s.Metric.Name, Selector: s.Metric.Selector}
		if s.Current.AverageValue != nil {
			p.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Pods = p
	}
	if s := in.Resource; s != nil {
		r := &autoscalingv1.ResourceMetricStatus{Name: s.Name, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.Resource = r
	}
	if s := in.ContainerResource; s != nil {
		r := &autoscalingv1.ContainerResourceMetricStatus{Name: s.Name, Container: s.Container, CurrentAverageUtilization: s.Current.AverageUtilization}
		if s.Current.AverageValue != nil {
			r.CurrentAverageValue = *s.Current.AverageValue
		}
		out.ContainerResource = r
	}
	if s := in.External; s != nil {
		e := &autoscalingv1.ExternalMetricStatus{MetricName: s.Metric.Name, MetricSelector: s.Metric.Selector, CurrentAverageValue: s.Current.AverageValue}
		if s.Current.Value != nil {
			e.CurrentValue = *s.Current.Value
		}
		out.External = e
	}
	return out
}

func metricStatusToV2(in *autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	if s := in.Object; s != nil {
		value := s.CurrentValue
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(s.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: &value, AverageValue: s.AverageValue},
		}
	}
	if s := in.Pods; s != nil {
		avg := s.CurrentAverageValue
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: &avg},
		}
	}
	if s := in.Resource; s != nil {
		avg := s.CurrentAverageValue
		out.Resource = &autoscalingv2.ResourceMetricStatus{
			Name:    s.Name,
			Current: autoscalingv2.MetricValueStatus{AverageValue: &avg, AverageUtilization: s.CurrentAverageUtilization},
		}
	}
	if s := in.ContainerResource; s != nil {
		avg := s.CurrentAverageValue
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{
			Name:      s.Name,
			Container: s.Container,
			Current:   autoscalingv2.MetricValueStatus{AverageValue: &avg, AverageUtilization: s.CurrentAverageUtilization},
		}
	}
	if s := in.External; s != nil {
		value := s.CurrentValue
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: s.MetricName, Selector: s.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: &value, AverageValue: s.CurrentAverageValue},
		}
	}
	return out
}

// behaviorAnnotation is the JSON of the behavior annotation as kube-apiserver writes it: it
// encodes its internal type, whose fields have no json tags, so the keys are the Go field
// names and unset pointers are null ({"ScaleUp":{"StabilizationWindowSeconds":0,...}}).
type behaviorAnnotation struct {
	ScaleUp   *rulesAnnotation
	ScaleDown *rulesAnnotation
}

type rulesAnnotation struct {
	StabilizationWindowSeconds *int32
	SelectPolicy               *autoscalingv2.ScalingPolicySelect
	Policies                   []policyAnnotation
	Tolerance                  *resource.Quantity
}

type policyAnnotation struct {
	Type          autoscalingv2.HPAScalingPolicyType
	Value         int32
	PeriodSeconds int32
}

func behaviorToAnnotation(in *autoscalingv2.HorizontalPodAutoscalerBehavior) behaviorAnnotation {
	rules := func(r *autoscalingv2.HPAScalingRules) *rulesAnnotation {
		if r == nil {
			return nil
		}
		out := &rulesAnnotation{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		if r.Policies != nil {
			out.Policies = make([]policyAnnotation, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = policyAnnotation(p)
			}
		}
		return out
	}
	return behaviorAnnotation{ScaleUp: rules(in.ScaleUp), ScaleDown: rules(in.ScaleDown)}
}

func behaviorFromAnnotation(in *behaviorAnnotation) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	rules := func(r *rulesAnnotation) *autoscalingv2.HPAScalingRules {
		if r == nil {
			return nil
		}
		out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds, SelectPolicy: r.SelectPolicy, Tolerance: r.Tolerance}
		if r.Policies != nil {
			out.Policies = make([]autoscalingv2.HPAScalingPolicy, len(r.Policies))
			for i, p := range r.Policies {
				out.Policies[i] = autoscalingv2.HPAScalingPolicy(p)
			}
		}
		return out
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(in.ScaleUp), ScaleDown: rules(in.ScaleDown)}
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	return out
}
