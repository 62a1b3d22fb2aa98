package horizontalpodautoscaler

import (
	"context"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func fieldpathVersion(v string) fieldpath.APIVersion { return fieldpath.APIVersion(v) }

func TestTable(t *testing.T) {
	now := time.Date(2025, 3, 4, 6, 6, 7, 0, time.UTC)
	conv := newTableConvertor(clocktesting.NewFakePassiveClock(now))

	cpu := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "php-apache", CreationTimestamp: metav1.NewTime(now.Add(-5 * time.Minute))},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "php-apache", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{cpuUtilizationMetric(80)},
		},
	}
	full := fullV2()
	full.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	full.Spec.MinReplicas = nil
	list := &autoscalingv2.HorizontalPodAutoscalerList{Items: []autoscalingv2.HorizontalPodAutoscaler{*cpu, *full}}

	tbl, err := conv.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if want := []string{"Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas", "Age"}; !apiequality.Semantic.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	want := [][]any{
		{"php-apache", "Deployment/php-apache", "cpu: <unknown>/80%", "1", int64(10), int64(0), "5m"},
		{"web", "Deployment/web", "9k/10k, <unknown>/200m (avg) + 6 more...", "<unset>", int64(10), int64(3), "60m"},
	}
	for i, row := range tbl.Rows {
		if !apiequality.Semantic.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %#v, want %#v", i, row.Cells, want[i])
		}
	}
}

func TestFormatMetrics(t *testing.T) {
	full := fullV2()
	tests := []struct {
		name     string
		specs    []autoscalingv2.MetricSpec
		statuses []autoscalingv2.MetricStatus
		want     string
	}{
		{name: "none", want: "<none>"},
		{name: "cpu unknown", specs: []autoscalingv2.MetricSpec{cpuUtilizationMetric(80)}, want: "cpu: <unknown>/80%"},
		{name: "cpu current", specs: []autoscalingv2.MetricSpec{cpuUtilizationMetric(80)}, statuses: full.Status.CurrentMetrics[5:], want: "cpu: 65%/80%"},
		{name: "pods and memory", specs: full.Spec.Metrics[2:4], statuses: full.Status.CurrentMetrics[1:3], want: "900/1k, memory: 400Mi/512Mi"},
		{name: "container and externals", specs: full.Spec.Metrics[4:6], statuses: full.Status.CurrentMetrics[3:5], want: "cpu: 55%/60%, 25/30"},
		{name: "external average unknown", specs: full.Spec.Metrics[6:7], want: "<unknown>/5 (avg)"},
		{name: "utilization target unset", specs: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{Name: "cpu"}}}, want: "cpu: <unknown>/<auto>"},
		{name: "unknown type", specs: []autoscalingv2.MetricSpec{{Type: "Magic"}}, want: "<unknown type>"},
		{name: "more", specs: full.Spec.Metrics[:3], want: "<unknown>/10k, <unknown>/200m (avg) + 1 more..."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatMetrics(tc.specs, tc.statuses); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
