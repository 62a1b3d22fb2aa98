package deployment

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func valid() *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	SetDefaults(d)
	return d
}

// expectErrors checks that errs are exactly the errors whose texts contain want, in order.
func expectErrors(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i].Error(), w) {
			t.Errorf("error %d is %q, want it to contain %q", i, errs[i].Error(), w)
		}
	}
}

func TestDefaults(t *testing.T) {
	d := valid()
	ru := d.Spec.Strategy.RollingUpdate
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		ru.MaxSurge.String() != "25%" || ru.MaxUnavailable.String() != "25%" ||
		*d.Spec.RevisionHistoryLimit != 10 || *d.Spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("defaults: %+v", d.Spec)
	}
	if d.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("template not defaulted: %+v", d.Spec.Template.Spec)
	}
	recreate := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}}}
	SetDefaults(recreate)
	if recreate.Spec.Strategy.RollingUpdate != nil {
		t.Errorf("a Recreate deployment got rolling update parameters")
	}
}

func TestValidate(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { return ptr.To(intstr.FromString(s)) }
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	tests := []struct {
		name   string
		mutate func(d *appsv1.Deployment)
		want   []string
	}{
		{"valid", func(*appsv1.Deployment) {}, nil},
		{"negative replicas", func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](-1) },
			[]string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
		{"no selector", func(d *appsv1.Deployment) { d.Spec.Selector = nil },
			[]string{"spec.selector: Required value", "spec.template.metadata.labels: Invalid value"}},
		{"empty selector", func(d *appsv1.Deployment) { d.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for deployment"}},
		{"bad selector operator", func(d *appsv1.Deployment) {
			d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}
		}, []string{`spec.selector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`, "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\"},\"matchExpressions\":[{\"key\":\"k\",\"operator\":\"Near\"}]}: invalid label selector"}},
		{"unselected template", func(d *appsv1.Deployment) { d.Spec.Template.Labels = map[string]string{"app": "db"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"db\"}: `selector` does not match template `labels`"}},
		{"restart on failure", func(d *appsv1.Deployment) { d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`}},
		{"deadline", func(d *appsv1.Deployment) { d.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](5) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"}},
		{"bad container name", func(d *appsv1.Deployment) { d.Spec.Template.Spec.Containers[0].Name = "C_1" },
			[]string{`spec.template.spec.containers[0].name: Invalid value: "C_1"`}},
		{"no surge, no unavailable", func(d *appsv1.Deployment) {
			d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: num(0), MaxUnavailable: pct("0%")}
		}, []string{"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: \"0%\": may not be 0 when `maxSurge` is 0"}},
		{"over 100%", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxUnavailable = pct("110%") },
			[]string{`spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater than 100%`}},
		{"not a percentage", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = pct("lots") },
			[]string{`spec.strategy.rollingUpdate.maxSurge: Invalid value: "lots": a valid percent string must be`}},
		{"negative surge", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate.MaxSurge = num(-1) },
			[]string{"spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0"}},
		{"recreate with parameters", func(d *appsv1.Deployment) { d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
			[]string{"spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"}},
		{"rolling without parameters", func(d *appsv1.Deployment) { d.Spec.Strategy.RollingUpdate = nil },
			[]string{"spec.strategy.rollingUpdate: Required value: this should be defaulted and never be nil"}},
		{"unknown strategy", func(d *appsv1.Deployment) { d.Spec.Strategy = appsv1.DeploymentStrategy{Type: "Sideways"} },
			[]string{`spec.strategy: Unsupported value: {"type":"Sideways"}: supported values: "Recreate", "RollingUpdate"`}},
		{"negative history", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](-1) },
			[]string{"spec.revisionHistoryLimit: Invalid value: -1: must be greater than or equal to 0"}},
		{"zero history", func(d *appsv1.Deployment) { d.Spec.RevisionHistoryLimit = ptr.To[int32](0) }, nil},
		{"deadline within minReadySeconds", func(d *appsv1.Deployment) {
			d.Spec.MinReadySeconds = 30
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](30)
		}, []string{"spec.progressDeadlineSeconds: Invalid value: 30: must be greater than minReadySeconds"}},
		{"negative minReadySeconds", func(d *appsv1.Deployment) { d.Spec.MinReadySeconds = -1 },
			[]string{"spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"}},
		{"bad name", func(d *appsv1.Deployment) { d.Name = "Web" }, []string{`metadata.name: Invalid value: "Web"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := valid()
			tt.mutate(d)
			expectErrors(t, Strategy.Validate(context.Background(), d), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := valid()
	d := valid()
	d.Spec.Selector.MatchLabels["tier"] = "front"
	d.Spec.Template.Labels["tier"] = "front"
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), d, old), "spec.selector: Invalid value: {\"matchLabels\":{\"app\":\"web\",\"tier\":\"front\"}}: field is immutable")
	d = valid()
	d.Spec.Replicas = ptr.To[int32](5)
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), d, old))
}

func TestValidateStatus(t *testing.T) {
	old := valid()
	old.Status.CollisionCount = ptr.To[int32](2)
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   []string
	}{
		{"valid", appsv1.DeploymentStatus{Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 1, CollisionCount: ptr.To[int32](3)}, nil},
		{"more ready than replicas", appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 2, CollisionCount: ptr.To[int32](2)},
			[]string{"status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"}},
		{"more available than ready", appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 1, AvailableReplicas: 2, CollisionCount: ptr.To[int32](2)},
			[]string{"status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas"}},
		{"negative", appsv1.DeploymentStatus{ObservedGeneration: -1, UnavailableReplicas: -1, TerminatingReplicas: ptr.To[int32](-1), CollisionCount: ptr.To[int32](2)},
			[]string{"status.observedGeneration: Invalid value: -1", "status.unavailableReplicas: Invalid value: -1", "status.terminatingReplicas: Invalid value: -1"}},
		{"collisions decremented", appsv1.DeploymentStatus{CollisionCount: ptr.To[int32](1)},
			[]string{"status.collisionCount: Invalid value: 1: cannot be decremented"}},
		{"collisions dropped", appsv1.DeploymentStatus{},
			[]string{"status.collisionCount: Invalid value: 0: cannot be decremented"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := valid()
			d.Status = tt.status
			expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), d, old), tt.want...)
		})
	}
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	d := valid()
	d.Status.Replicas = 4
	Strategy.PrepareForCreate(ctx, d)
	if d.Generation != 1 || d.Status.Replicas != 0 {
		t.Errorf("after create: generation %d, status %+v", d.Generation, d.Status)
	}
	if Strategy.DefaultGarbageCollectionPolicy(ctx) != rest.DeleteDependents {
		t.Errorf("garbage collection policy %v, want DeleteDependents", Strategy.DefaultGarbageCollectionPolicy(ctx))
	}

	old := d.DeepCopy()
	old.Status.Replicas = 1
	relabelled := old.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	relabelled.Status = appsv1.DeploymentStatus{}
	Strategy.PrepareForUpdate(ctx, relabelled, old)
	if relabelled.Generation != 1 || relabelled.Status.Replicas != 1 {
		t.Errorf("a label change: generation %d, status %+v; want 1 and the old status", relabelled.Generation, relabelled.Status)
	}
	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"note": "x"}
	Strategy.PrepareForUpdate(ctx, annotated, old)
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](3)
	Strategy.PrepareForUpdate(ctx, scaled, old)
	if annotated.Generation != 2 || scaled.Generation != 2 {
		t.Errorf("generations after an annotation and a spec change: %d, %d; want 2, 2", annotated.Generation, scaled.Generation)
	}

	reported := old.DeepCopy()
	reported.Spec.Replicas = ptr.To[int32](9)
	reported.Labels = map[string]string{"x": "y"}
	reported.Status.Replicas = 5
	StatusStrategy.PrepareForUpdate(ctx, reported, old)
	if *reported.Spec.Replicas != 1 || reported.Labels != nil || reported.Status.Replicas != 5 {
		t.Errorf("a status write changed the spec or labels: %+v %v", reported.Spec, reported.Labels)
	}
	if w := Strategy.WarningsOnCreate(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "a.b"}}); len(w) != 1 || !strings.Contains(w[0], "a DNS label is recommended") {
		t.Errorf("warnings for a dotted name: %v", w)
	}
}

func TestScaleTarget(t *testing.T) {
	d := valid()
	d.Status.Replicas = 2
	spec, status, selector, err := ScaleTarget.Replicas(d)
	if err != nil || spec != 1 || status != 2 || selector != "app=web" {
		t.Errorf("scale of a deployment: %d %d %q %v", spec, status, selector, err)
	}
	ScaleTarget.SetReplicas(d, 4)
	if *d.Spec.Replicas != 4 {
		t.Errorf("replicas %d after SetReplicas(4)", *d.Spec.Replicas)
	}
	d.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}
	if _, _, _, err := ScaleTarget.Replicas(d); err == nil {
		t.Errorf("a selector that does not parse gave a Scale")
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	d := valid()
	d.CreationTimestamp = metav1.NewTime(now.Add(-6 * time.Hour))
	d.Spec.Replicas = ptr.To[int32](3)
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "side", Image: "pause"})
	d.Status = appsv1.DeploymentStatus{ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 1}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), d, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "Name Ready Up-to-date Available Age Containers Images Selector" {
		t.Errorf("columns %s", got)
	}
	want := []any{"web", "2/3", int64(3), int64(1), "6h", "c,side", "busybox,pause", "app=web"}
	for i, cell := range tbl.Rows[0].Cells {
		if cell != want[i] {
			t.Errorf("cell %d (%s) is %#v, want %#v", i, names[i], cell, want[i])
		}
	}
}
