package daemonset

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
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func valid() *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	SetDefaults(ds)
	return ds
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

func TestDefaults(t *testing.T) {
	ds := valid()
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru.MaxUnavailable.IntValue() != 1 ||
		ru.MaxSurge.IntValue() != 0 || ru.MaxSurge.Type != intstr.Int || *ds.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("defaults: %+v", ds.Spec)
	}
}

func TestValidate(t *testing.T) {
	num := func(n int32) *intstr.IntOrString { return ptr.To(intstr.FromInt32(n)) }
	tests := []struct {
		name   string
		mutate func(ds *appsv1.DaemonSet)
		want   []string
	}{
		{"valid", func(*appsv1.DaemonSet) {}, nil},
		{"surge instead", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: num(0), MaxSurge: ptr.To(intstr.FromString("10%"))}
		}, nil},
		// As upstream: no selector is not "required", it selects nothing.
		{"no selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = nil },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"agent\"}: `selector` does not match template `labels`"}},
		{"empty selector", func(ds *appsv1.DaemonSet) { ds.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for daemonset"}},
		{"restart never", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"deadline", func(ds *appsv1.DaemonSet) { ds.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](3) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in DaemonSet is not Supported"}},
		{"both surge and unavailable", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxSurge = num(1) },
			[]string{"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 1: may not be set when maxUnavailable is non-zero"}},
		{"neither", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = num(0) },
			[]string{"spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"}},
		{"over 100%", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("101%"))
		}, []string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "101%": must not be greater than 100%`}},
		{"rolling without parameters", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy.RollingUpdate = nil },
			[]string{"spec.updateStrategy.rollingUpdate: Required value"}},
		{"on delete", func(ds *appsv1.DaemonSet) {
			ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		}, nil},
		{"unknown strategy", func(ds *appsv1.DaemonSet) { ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: "Never"} },
			[]string{`spec.updateStrategy: Unsupported value: {"type":"Never"}: supported values: "RollingUpdate", "OnDelete"`}},
		{"negative history", func(ds *appsv1.DaemonSet) { ds.Spec.RevisionHistoryLimit = ptr.To[int32](-3) },
			[]string{"spec.revisionHistoryLimit: Invalid value: -3: must be greater than or equal to 0"}},
		{"negative minReadySeconds", func(ds *appsv1.DaemonSet) { ds.Spec.MinReadySeconds = -1 },
			[]string{"spec.minReadySeconds: Invalid value: -1: must be greater than or equal to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds := valid()
			tt.mutate(ds)
			expectErrors(t, Strategy.Validate(context.Background(), ds), tt.want...)
		})
	}
	old, ds := valid(), valid()
	ds.Spec.Selector.MatchLabels = map[string]string{"app": "agent", "v": "2"}
	ds.Spec.Template.Labels = ds.Spec.Selector.MatchLabels
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), ds, old), `spec.selector: Invalid value: {"matchLabels":{"app":"agent","v":"2"}}: field is immutable`)
}

func TestValidateStatus(t *testing.T) {
	old := valid()
	old.Status.CollisionCount = ptr.To[int32](4)
	ds := valid()
	ds.Status = appsv1.DaemonSetStatus{NumberReady: -1, CollisionCount: ptr.To[int32](3)}
	expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), ds, old),
		"status.numberReady: Invalid value: -1", "status.collisionCount: Invalid value: 3: cannot be decremented")
}

func TestTemplateGeneration(t *testing.T) {
	ctx := context.Background()
	ds := valid()
	ds.Status.NumberReady = 2
	Strategy.PrepareForCreate(ctx, ds)
	if ds.Generation != 1 || TemplateGeneration(ds) != 1 || ds.Annotations[appsv1.DeprecatedTemplateGeneration] != "1" || ds.Status.NumberReady != 0 {
		t.Fatalf("after create: generation %d, annotations %v, status %+v", ds.Generation, ds.Annotations, ds.Status)
	}

	// A change to the template moves both generations.
	newImage := ds.DeepCopy()
	newImage.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	Strategy.PrepareForUpdate(ctx, newImage, ds)
	if newImage.Generation != 2 || TemplateGeneration(newImage) != 2 {
		t.Errorf("after a template change: generation %d, template generation %d; want 2, 2", newImage.Generation, TemplateGeneration(newImage))
	}
	// Another change to the spec, the generation only.
	history := newImage.DeepCopy()
	history.Spec.RevisionHistoryLimit = ptr.To[int32](3)
	Strategy.PrepareForUpdate(ctx, history, newImage)
	if history.Generation != 3 || TemplateGeneration(history) != 2 {
		t.Errorf("after a spec change: generation %d, template generation %d; want 3, 2", history.Generation, TemplateGeneration(history))
	}
	// Nobody sets it by hand, nor removes it.
	forged := history.DeepCopy()
	forged.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "40"}
	Strategy.PrepareForUpdate(ctx, forged, history)
	removed := history.DeepCopy()
	removed.Annotations = nil
	Strategy.PrepareForUpdate(ctx, removed, history)
	reported := history.DeepCopy()
	reported.Annotations = nil
	reported.Spec.MinReadySeconds = 9
	StatusStrategy.PrepareForUpdate(ctx, reported, history)
	if TemplateGeneration(forged) != 2 || TemplateGeneration(removed) != 2 || TemplateGeneration(reported) != 2 || reported.Spec.MinReadySeconds != 0 {
		t.Errorf("template generations after a forged, a removed, a status write: %d %d %d", TemplateGeneration(forged), TemplateGeneration(removed), TemplateGeneration(reported))
	}
	// A created DaemonSet that brings a higher one keeps it (a restore, as upstream).
	restored := valid()
	restored.Annotations = map[string]string{appsv1.DeprecatedTemplateGeneration: "7"}
	Strategy.PrepareForCreate(ctx, restored)
	if TemplateGeneration(restored) != 7 {
		t.Errorf("restored template generation %d, want 7", TemplateGeneration(restored))
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ds := valid()
	ds.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Minute))
	ds.Spec.Template.Spec.NodeSelector = map[string]string{"kubernetes.io/os": "linux"}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, NumberReady: 2, UpdatedNumberScheduled: 1, NumberAvailable: 2}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"agent", int64(3), int64(3), int64(2), int64(1), int64(2), "kubernetes.io/os=linux", "10m", "c", "busybox", "app=agent"}
	if len(tbl.ColumnDefinitions) != len(want) {
		t.Fatalf("%d columns, want %d", len(tbl.ColumnDefinitions), len(want))
	}
	for i, cell := range tbl.Rows[0].Cells {
		if cell != want[i] {
			t.Errorf("cell %d (%s) is %#v, want %#v", i, tbl.ColumnDefinitions[i].Name, cell, want[i])
		}
	}
}
