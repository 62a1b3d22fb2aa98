package apiserver

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The annotations in which autoscaling/v1 carries what only v2 can say, as kube-apiserver
// names them.
const (
	hpaMetricsAnnotation    = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentAnnotation    = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation   = "autoscaling.alpha.kubernetes.io/behavior"
)

func cpuTarget(percent int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &percent},
	}}
}

func deploymentRef(name string) autoscalingv2.CrossVersionObjectReference {
	return autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: name, APIVersion: "apps/v1"}
}

// TestAutoscalingDiscovery: HorizontalPodAutoscalers are served at autoscaling/v2, the
// preferred version, and at v1, with upstream's short name, category and status subresource.
func TestAutoscalingDiscovery(t *testing.T) {
	c := sharedCluster(t)
	groups, err := c.Client.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == "autoscaling" })
	if i < 0 {
		t.Fatalf("no autoscaling group in %+v", groups.Groups)
	}
	g := groups.Groups[i]
	if g.PreferredVersion.Version != "v2" || len(g.Versions) != 2 || g.Versions[0].Version != "v2" || g.Versions[1].Version != "v1" {
		t.Errorf("autoscaling versions %+v, preferred %+v; want v2, v1", g.Versions, g.PreferredVersion)
	}
	for _, gv := range []string{"autoscaling/v2", "autoscaling/v1"} {
		list, err := c.Client.Discovery().ServerResourcesForGroupVersion(gv)
		if err != nil {
			t.Fatalf("%s: %v", gv, err)
		}
		got := map[string]metav1.APIResource{}
		for _, r := range list.APIResources {
			got[r.Name] = r
		}
		hpa, status := got["horizontalpodautoscalers"], got["horizontalpodautoscalers/status"]
		if !hpa.Namespaced || hpa.Kind != "HorizontalPodAutoscaler" || fmt.Sprint(hpa.ShortNames) != "[hpa]" || fmt.Sprint(hpa.Categories) != "[all]" ||
			!slices.Contains(hpa.Verbs, "watch") || !slices.Contains(hpa.Verbs, "deletecollection") {
			t.Errorf("%s horizontalpodautoscalers: %+v", gv, hpa)
		}
		if status.Kind != "HorizontalPodAutoscaler" || fmt.Sprint(status.Verbs) != "[get patch update]" {
			t.Errorf("%s horizontalpodautoscalers/status: %+v", gv, status)
		}
	}
}

// TestAutoscalingVersions: one stored autoscaler, read and written at both versions. A v1
// autoscaler reads at v2 with its CPU target as a metric; a v2 one with several metrics and a
// behavior reads at v1 with the others in the annotations, and a v1 update that keeps them
// keeps the v2 fields; a v1 autoscaler without a target gets 80% CPU.
func TestAutoscalingVersions(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	v1 := c.Client.AutoscalingV1().HorizontalPodAutoscalers(ns)
	v2 := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)

	created, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MaxReplicas:    5, TargetCPUUtilizationPercentage: ptr.To[int32](50),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating at v1: %v", err)
	}
	if *created.Spec.MinReplicas != 1 || *created.Spec.TargetCPUUtilizationPercentage != 50 || created.Generation != 1 || len(created.Annotations) != 0 {
		t.Errorf("created at v1: %+v", created)
	}
	atV2, err := v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading at v2: %v", err)
	}
	if len(atV2.Spec.Metrics) != 1 || atV2.Spec.Metrics[0].Resource == nil || *atV2.Spec.Metrics[0].Resource.Target.AverageUtilization != 50 ||
		*atV2.Spec.MinReplicas != 1 || atV2.Spec.Behavior != nil || atV2.ResourceVersion != created.ResourceVersion || len(atV2.Annotations) != 0 {
		t.Errorf("v1 autoscaler at v2: %+v", atV2.Spec)
	}

	// v2 adds a Pods metric and a behavior; v1 sees them in annotations.
	atV2.Spec.Metrics = append([]autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
	}}}, atV2.Spec.Metrics...)
	atV2.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
	updated, err := v2.Update(ctx, atV2, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating at v2: %v", err)
	}
	if updated.Generation != 2 || *updated.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 60 || len(updated.Spec.Behavior.ScaleDown.Policies) != 1 ||
		updated.Spec.Behavior.ScaleUp == nil || len(updated.Spec.Behavior.ScaleUp.Policies) != 2 {
		t.Errorf("behavior defaults at v2: generation %d, %+v", updated.Generation, updated.Spec.Behavior)
	}
	atV1, err := v1.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := `[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]`; atV1.Annotations[hpaMetricsAnnotation] != want {
		t.Errorf("metrics annotation %q, want %q", atV1.Annotations[hpaMetricsAnnotation], want)
	}
	if b := atV1.Annotations[hpaBehaviorAnnotation]; !strings.HasPrefix(b, `{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}`) ||
		!strings.Contains(b, `"ScaleDown":{"StabilizationWindowSeconds":60,"SelectPolicy":"Max"`) {
		t.Errorf("behavior annotation %s", b)
	}
	if *atV1.Spec.TargetCPUUtilizationPercentage != 50 {
		t.Errorf("v1 target %d, want 50", *atV1.Spec.TargetCPUUtilizationPercentage)
	}

	// A v1 client's update keeps what only the annotations say.
	atV1.Spec.MaxReplicas = 8
	atV1.Annotations["team"] = "a"
	if _, err := v1.Update(ctx, atV1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating at v1: %v", err)
	}
	atV2, err = v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if atV2.Spec.MaxReplicas != 8 || len(atV2.Spec.Metrics) != 2 || atV2.Spec.Metrics[0].Pods == nil || atV2.Spec.Behavior == nil ||
		*atV2.Spec.Behavior.ScaleDown.StabilizationWindowSeconds != 60 || fmt.Sprint(atV2.Annotations) != "map[team:a]" {
		t.Errorf("after the v1 update, at v2: %+v, annotations %v", atV2.Spec, atV2.Annotations)
	}

	// Several metrics created at v2.
	multi := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "multi"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: deploymentRef("api"), MaxReplicas: 10,
			Metrics: []autoscalingv2.MetricSpec{
				{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "main", APIVersion: "networking.k8s.io/v1"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "requests-per-second"},
					Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10k"))}}},
				{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue-length"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("30"))}}},
				{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
					Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("512Mi"))}}},
				cpuTarget(70),
			},
		},
	}
	if _, err := v2.Create(ctx, multi, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating at v2: %v", err)
	}
	multiV1, err := v1.Get(ctx, "multi", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var others []autoscalingv1.MetricSpec
	if err := json.Unmarshal([]byte(multiV1.Annotations[hpaMetricsAnnotation]), &others); err != nil {
		t.Fatalf("metrics annotation %q: %v", multiV1.Annotations[hpaMetricsAnnotation], err)
	}
	if len(others) != 3 || others[0].Object == nil || others[0].Object.TargetValue.String() != "10k" || others[1].External == nil ||
		others[1].External.TargetAverageValue.String() != "30" || others[2].Resource == nil || others[2].Resource.TargetAverageValue.String() != "512Mi" ||
		*multiV1.Spec.TargetCPUUtilizationPercentage != 70 || *multiV1.Spec.MinReplicas != 1 {
		t.Errorf("v2 autoscaler at v1: %+v, others %+v", multiV1.Spec, others)
	}
	if _, ok := multiV1.Annotations[hpaBehaviorAnnotation]; ok {
		t.Errorf("behavior annotation without a behavior")
	}
	// v1 lists convert each item.
	list, err := v1.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != "multi" || list.Items[0].Annotations[hpaMetricsAnnotation] == "" {
		t.Errorf("v1 list: %+v, %v", list, err)
	}

	// No target at v1: 80% CPU, at both versions.
	bare, err := v1.Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bare"},
		Spec:       autoscalingv1.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "ReplicationController", Name: "rc", APIVersion: "v1"}, MaxReplicas: 2},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating at v1 without a target: %v", err)
	}
	if bare.Spec.TargetCPUUtilizationPercentage == nil || *bare.Spec.TargetCPUUtilizationPercentage != 80 {
		t.Errorf("v1 without a target: %+v", bare.Spec)
	}
}

// TestAutoscalingStatus: status is written through the status subresource only, at either
// version; v1 sees the current CPU utilization and the conditions in its annotation.
func TestAutoscalingStatus(t *testing.T) {
	c := quietCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	v1 := c.Client.AutoscalingV1().HorizontalPodAutoscalers(ns)
	v2 := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	h, err := v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: deploymentRef("web"), MaxReplicas: 4},
		Status:     autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 9},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Status.CurrentReplicas != 0 || len(h.Spec.Metrics) != 1 || *h.Spec.Metrics[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("created: status %+v, metrics %+v", h.Status, h.Spec.Metrics)
	}

	h.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: 3, DesiredReplicas: 4, ObservedGeneration: ptr.To[int64](1),
		CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
			Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To[int32](42), AverageValue: ptr.To(resource.MustParse("120m"))}}}},
		Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale", LastTransitionTime: metav1.Now()}},
	}
	h.Spec.MaxReplicas = 40 // the status endpoint keeps the stored spec
	h, err = v2.UpdateStatus(ctx, h, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status at v2: %v", err)
	}
	if h.Status.CurrentReplicas != 3 || h.Spec.MaxReplicas != 4 || h.Generation != 1 {
		t.Errorf("after status at v2: %+v, maxReplicas %d", h.Status, h.Spec.MaxReplicas)
	}
	atV1, err := v1.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if atV1.Status.CurrentCPUUtilizationPercentage == nil || *atV1.Status.CurrentCPUUtilizationPercentage != 42 || atV1.Status.CurrentReplicas != 3 ||
		!strings.Contains(atV1.Annotations[hpaConditionsAnnotation], `"type":"AbleToScale","status":"True"`) ||
		atV1.Annotations[hpaCurrentAnnotation] != `[{"type":"Resource","resource":{"name":"cpu","currentAverageUtilization":42,"currentAverageValue":"120m"}}]` {
		t.Errorf("status at v1: %+v, annotations %v", atV1.Status, atV1.Annotations)
	}

	// At v1 too; the main resource never writes status.
	atV1.Status.CurrentReplicas = 4
	atV1, err = v1.UpdateStatus(ctx, atV1, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status at v1: %v", err)
	}
	atV1.Status.CurrentReplicas = 1
	atV1.Spec.MaxReplicas = 6
	if _, err := v1.Update(ctx, atV1, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h, err = v2.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h.Status.CurrentReplicas != 4 || h.Spec.MaxReplicas != 6 || len(h.Status.Conditions) != 1 || h.Generation != 2 {
		t.Errorf("after v1 writes: status %+v, maxReplicas %d, generation %d", h.Status, h.Spec.MaxReplicas, h.Generation)
	}

	h.Status.DesiredReplicas = -1
	if _, err := v2.UpdateStatus(ctx, h, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !hasCause(err, "status.desiredReplicas", "must be greater than or equal to 0") {
		t.Errorf("negative desiredReplicas: %v", err)
	}
}

// TestAutoscalingValidation: invalid autoscalers are refused with 422 naming upstream's fields,
// at either version.
func TestAutoscalingValidation(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	v2 := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns)
	_, err := v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Name: "web", APIVersion: "v1"},
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](0)}}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 3600}}}},
		},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid v2 autoscaler: %v, want 422", err)
	}
	for field, msg := range map[string]string{
		"spec.maxReplicas":                                   "must be set and greater than 0",
		"spec.scaleTargetRef.kind":                           "Required value",
		"spec.scaleTargetRef.apiVersion":                     "apiVersion must specify API group",
		"spec.metrics[0].resource.target.averageUtilization": "must be greater than 0",
		"spec.behavior.scaleUp.policies[0].periodSeconds":    "must be less than or equal to 1800",
	} {
		if !hasCause(err, field, msg) {
			t.Errorf("no cause %s: %s in %v", field, msg, err)
		}
	}

	_, err = c.Client.AutoscalingV1().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To[int32](5), MaxReplicas: 2, TargetCPUUtilizationPercentage: ptr.To[int32](-3),
		},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !hasCause(err, "spec.maxReplicas", "must be greater than or equal to `minReplicas`") ||
		!hasCause(err, "spec.metrics[0].resource.target.averageUtilization", "must be greater than 0") {
		t.Errorf("invalid v1 autoscaler: %v", err)
	}
	// Scaling to zero needs an Object or External metric.
	_, err = v2.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "zero"},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: deploymentRef("web"), MinReplicas: ptr.To[int32](0), MaxReplicas: 2},
	}, metav1.CreateOptions{})
	if !hasCause(err, "spec.metrics", "must specify at least one Object or External metric to support scaling to zero replicas") {
		t.Errorf("minReplicas 0 with CPU only: %v", err)
	}
}

// TestAutoscalingTable: `kubectl get hpa` columns, at both versions.
func TestAutoscalingTable(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	_, err := c.Client.AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "php-apache"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: deploymentRef("php-apache"), MaxReplicas: 10, Metrics: []autoscalingv2.MetricSpec{
			cpuTarget(50),
			{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("1k"))}}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"v2", "v1"} {
		tbl := tableOf(t, ctx, c.Client, "/apis/autoscaling/"+v+"/namespaces/"+ns+"/horizontalpodautoscalers", "")
		if got := columnNames(tbl); got != "[Name Reference Targets MinPods MaxPods Replicas Age]" {
			t.Errorf("%s columns %s", v, got)
		}
		if len(tbl.Rows) != 1 {
			t.Fatalf("%s rows %+v", v, tbl.Rows)
		}
		cells := fmt.Sprint(tbl.Rows[0].Cells[:6])
		if want := "[php-apache Deployment/php-apache cpu: <unknown>/50%, <unknown>/1k 1 10 0]"; cells != want {
			t.Errorf("%s row %s, want %s", v, cells, want)
		}
	}
}

// TestComponentStatuses: componentstatuses list the scheduler, the controller manager and
// etcd-0 through client-go, with upstream's deprecation warning; etcd, which the test's API
// server stores in, is healthy. (What the scheduler and the controller manager say depends on
// what listens at 10259 and 10257 on this machine: only that each says something is checked.)
func TestComponentStatuses(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	recorder := &warningRecorder{}
	config := rest.CopyConfig(c.Config)
	config.WarningHandler = recorder
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	list, err := client.CoreV1().ComponentStatuses().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing componentstatuses: %v", err)
	}
	expectWarnings(t, "a list of componentstatuses", recorder.take(), []string{"v1 ComponentStatus is deprecated in v1.19+"})
	var names []string
	for _, cs := range list.Items {
		names = append(names, cs.Name)
		if len(cs.Conditions) != 1 || cs.Conditions[0].Type != corev1.ComponentHealthy {
			t.Errorf("%s: conditions %+v", cs.Name, cs.Conditions)
			continue
		}
		cond := cs.Conditions[0]
		switch {
		case cs.Name == "etcd-0" && (cond.Status != corev1.ConditionTrue || cond.Message != "ok"):
			t.Errorf("etcd-0: %+v, want Healthy", cond)
		case cond.Status == corev1.ConditionTrue && cond.Message == "":
			t.Errorf("%s healthy with no message", cs.Name)
		case cond.Status != corev1.ConditionTrue && cond.Message == "" && cond.Error == "":
			t.Errorf("%s unhealthy with no message or error: %+v", cs.Name, cond)
		}
	}
	slices.Sort(names)
	if fmt.Sprint(names) != "[controller-manager etcd-0 scheduler]" {
		t.Errorf("components %v", names)
	}

	etcd, err := client.CoreV1().ComponentStatuses().Get(ctx, "etcd-0", metav1.GetOptions{})
	if err != nil || etcd.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("get etcd-0: %+v, %v", etcd, err)
	}
	if _, err := client.CoreV1().ComponentStatuses().Get(ctx, "kubelet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get kubelet: %v, want 404", err)
	}
	recorder.take()

	tbl := tableOf(t, ctx, c.Client, "/api/v1/componentstatuses", "")
	if got := columnNames(tbl); got != "[Name Status Message Error]" || len(tbl.Rows) != 3 {
		t.Errorf("table %s, %d rows", got, len(tbl.Rows))
	}
	// get and list only.
	err = client.CoreV1().ComponentStatuses().Delete(ctx, "etcd-0", metav1.DeleteOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete: %v, want 405", err)
	}
}
