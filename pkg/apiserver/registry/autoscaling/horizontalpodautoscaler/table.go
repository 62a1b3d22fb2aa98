package horizontalpodautoscaler

import (
	"fmt"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get hpa`, as upstream's
// printHorizontalPodAutoscaler.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*autoscalingv2.HorizontalPodAutoscaler] {
	spec, status := autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc(), autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Reference", Type: "string", Description: spec["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: spec["metrics"]},
		{Name: "MinPods", Type: "string", Description: spec["minReplicas"]},
		{Name: "MaxPods", Type: "string", Description: spec["maxReplicas"]},
		{Name: "Replicas", Type: "string", Description: status["currentReplicas"]},
		table.AgeColumn(),
	}, func(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) metav1.TableRow {
		minPods := "<unset>"
		if h.Spec.MinReplicas != nil {
			minPods = fmt.Sprintf("%d", *h.Spec.MinReplicas)
		}
		ref := h.Spec.ScaleTargetRef.Kind + "/" + h.Spec.ScaleTargetRef.Name
		return metav1.TableRow{Cells: []any{h.Name, ref, FormatMetrics(h.Spec.Metrics, h.Status.CurrentMetrics), minPods,
			int64(h.Spec.MaxReplicas), int64(h.Status.CurrentReplicas), table.Age(h, now)}}
	})
}

// maxShownMetrics is how many targets the TARGETS cell shows before "+ N more...".
const maxShownMetrics = 2

// FormatMetrics is the TARGETS cell: each metric as current/target ("cpu: 42%/80%",
// "<unknown>/10 (avg)"), the current value read from the status at the same index, as
// upstream's formatHPAMetrics.
func FormatMetrics(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	var list []string
	for i := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, formatMetric(&specs[i], st))
	}
	if len(list) > maxShownMetrics {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:maxShownMetrics], ", "), len(list)-maxShownMetrics)
	}
	return strings.Join(list, ", ")
}

const unknown = "<unknown>"

func quantity(q *resource.Quantity) string {
	if q == nil {
		return unknown
	}
	return q.String()
}

func percent(p *int32) string {
	if p == nil {
		return unknown
	}
	return fmt.Sprintf("%d%%", *p)
}

// valueOrAverage formats a target given as a value or an average value (Object and External
// metrics), current being the status's value for it.
func valueOrAverage(target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := unknown
		if current != nil && current.AverageValue != nil {
			cur = current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s (avg)", cur, target.AverageValue.String())
	}
	cur := unknown
	if current != nil {
		cur = quantity(current.Value)
	}
	return fmt.Sprintf("%s/%s", cur, quantity(target.Value))
}

// resourceTarget formats a (container) resource's target, an average value or a utilization.
func resourceTarget(name string, target autoscalingv2.MetricTarget, current *autoscalingv2.MetricValueStatus) string {
	if target.AverageValue != nil {
		cur := unknown
		if current != nil {
			cur = quantity(current.AverageValue)
		}
		return fmt.Sprintf("%s: %s/%s", name, cur, target.AverageValue.String())
	}
	cur := unknown
	if current != nil && current.AverageUtilization != nil {
		cur = percent(current.AverageUtilization)
	}
	want := "<auto>"
	if target.AverageUtilization != nil {
		want = percent(target.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, cur, want)
}

func formatMetric(spec *autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.External != nil {
			cur = &st.External.Current
		}
		return valueOrAverage(spec.External.Target, cur)
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		cur := unknown
		if st != nil && st.Pods != nil {
			cur = quantity(st.Pods.Current.AverageValue)
		}
		return fmt.Sprintf("%s/%s", cur, quantity(spec.Pods.Target.AverageValue))
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Object != nil {
			cur = &st.Object.Current
		}
		return valueOrAverage(spec.Object.Target, cur)
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return resourceTarget(spec.Resource.Name.String(), spec.Resource.Target, cur)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return resourceTarget(spec.ContainerResource.Name.String(), spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}
