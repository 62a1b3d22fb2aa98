package replicaset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func valid() *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.ReplicaSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	SetDefaults(rs)
	return rs
}

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

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(rs *appsv1.ReplicaSet)
		want   []string
	}{
		{"valid", func(*appsv1.ReplicaSet) {}, nil},
		{"negative replicas", func(rs *appsv1.ReplicaSet) { rs.Spec.Replicas = ptr.To[int32](-2) },
			[]string{"spec.replicas: Invalid value: -2: must be greater than or equal to 0"}},
		{"negative minReadySeconds", func(rs *appsv1.ReplicaSet) { rs.Spec.MinReadySeconds = -1 },
			[]string{"spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"}},
		// Upstream's message names deployments for ReplicaSets too.
		{"empty selector", func(rs *appsv1.ReplicaSet) { rs.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for deployment"}},
		{"unselected template", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Labels = nil },
			[]string{"spec.template.metadata.labels: Invalid value: null: `selector` does not match template `labels`"}},
		{"restart never", func(rs *appsv1.ReplicaSet) { rs.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"ephemeral containers", func(rs *appsv1.ReplicaSet) {
			rs.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", Image: "x", TerminationMessagePolicy: "File", ImagePullPolicy: "Always"}}}
		}, []string{"spec.template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := valid()
			tt.mutate(rs)
			expectErrors(t, Strategy.Validate(context.Background(), rs), tt.want...)
		})
	}
	old, rs := valid(), valid()
	rs.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpExists}}}
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), rs, old), `spec.selector: Invalid value: {"matchExpressions":[{"key":"app","operator":"Exists"}]}: field is immutable`)
}

func TestValidateStatus(t *testing.T) {
	old := valid()
	rs := valid()
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 1, FullyLabeledReplicas: 2, ReadyReplicas: 1, AvailableReplicas: 1, ObservedGeneration: -1}
	expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), rs, old),
		"status.observedGeneration: Invalid value: -1", "status.fullyLabeledReplicas: Invalid value: 2: cannot be greater than status.replicas")
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	rs := valid()
	rs.Status.Replicas = 3
	Strategy.PrepareForCreate(ctx, rs)
	if rs.Generation != 1 || rs.Status.Replicas != 0 || Strategy.DefaultGarbageCollectionPolicy(ctx) != rest.DeleteDependents {
		t.Errorf("after create: generation %d, status %+v", rs.Generation, rs.Status)
	}
	old := rs.DeepCopy()
	old.Status.Replicas = 2
	annotated := old.DeepCopy()
	annotated.Annotations = map[string]string{"a": "b"}
	annotated.Status = appsv1.ReplicaSetStatus{}
	Strategy.PrepareForUpdate(ctx, annotated, old)
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](2)
	Strategy.PrepareForUpdate(ctx, scaled, old)
	if annotated.Generation != 1 || annotated.Status.Replicas != 2 || scaled.Generation != 2 {
		t.Errorf("generations after an annotation and a spec change: %d, %d; want 1, 2 (status %+v)", annotated.Generation, scaled.Generation, annotated.Status)
	}
	reported := old.DeepCopy()
	reported.Spec.Replicas = ptr.To[int32](7)
	reported.Status.ReadyReplicas = 1
	StatusStrategy.PrepareForUpdate(ctx, reported, old)
	if *reported.Spec.Replicas != 1 || reported.Status.ReadyReplicas != 1 {
		t.Errorf("a status write: spec %+v status %+v", reported.Spec, reported.Status)
	}
	if f := Fields(old); f["status.replicas"] != "2" || f["metadata.name"] != "web-1" {
		t.Errorf("fields %v", f)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rs := valid()
	rs.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	rs.Spec.Replicas = ptr.To[int32](3)
	rs.Status = appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 1}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), &appsv1.ReplicaSetList{Items: []appsv1.ReplicaSet{*rs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"web-1", int64(3), int64(2), int64(1), "90s", "c", "busybox", "app=web"}
	if len(tbl.ColumnDefinitions) != len(want) {
		t.Fatalf("%d columns, want %d", len(tbl.ColumnDefinitions), len(want))
	}
	for i, cell := range tbl.Rows[0].Cells {
		if cell != want[i] {
			t.Errorf("cell %d (%s) is %#v, want %#v", i, tbl.ColumnDefinitions[i].Name, cell, want[i])
		}
	}
}
