package replicationcontroller

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func valid() *corev1.ReplicationController {
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", ResourceVersion: "1"},
		Spec: corev1.ReplicationControllerSpec{Template: &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}},
	}
	SetDefaults(rc)
	return rc
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
	rc := valid()
	if rc.Spec.Selector["app"] != "web" || rc.Labels["app"] != "web" || *rc.Spec.Replicas != 1 ||
		rc.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("defaults: labels %v spec %+v", rc.Labels, rc.Spec)
	}
	own := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}},
		Spec: corev1.ReplicationControllerSpec{Selector: map[string]string{"app": "web", "v": "1"},
			Template: &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "v": "1", "x": "y"}}}},
	}
	SetDefaults(own)
	if len(own.Spec.Selector) != 2 || own.Labels["team"] != "a" || len(own.Labels) != 1 {
		t.Errorf("given selector and labels were replaced: %v %v", own.Spec.Selector, own.Labels)
	}
	none := &corev1.ReplicationController{}
	SetDefaults(none)
	if none.Spec.Selector != nil || *none.Spec.Replicas != 1 {
		t.Errorf("no template: %+v", none.Spec)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(rc *corev1.ReplicationController)
		want   []string
	}{
		{"valid", func(*corev1.ReplicationController) {}, nil},
		{"no template", func(rc *corev1.ReplicationController) { rc.Spec.Template = nil },
			[]string{"spec.template: Required value"}},
		{"no selector", func(rc *corev1.ReplicationController) { rc.Spec.Selector = nil },
			[]string{"spec.selector: Required value"}},
		{"no replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = nil },
			[]string{"spec.replicas: Required value"}},
		{"negative replicas", func(rc *corev1.ReplicationController) { rc.Spec.Replicas = ptr.To[int32](-1) },
			[]string{"spec.replicas: Invalid value: -1: must be greater than or equal to 0"}},
		{"unselected template", func(rc *corev1.ReplicationController) { rc.Spec.Selector = map[string]string{"app": "db"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"}},
		{"restart never", func(rc *corev1.ReplicationController) {
			rc.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		},
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"`}},
		{"deadline", func(rc *corev1.ReplicationController) { rc.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported"}},
		{"negative minReadySeconds", func(rc *corev1.ReplicationController) { rc.Spec.MinReadySeconds = -5 },
			[]string{"spec.minReadySeconds: Invalid value: -5: must be greater than or equal to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := valid()
			tt.mutate(rc)
			expectErrors(t, Strategy.Validate(context.Background(), rc), tt.want...)
		})
	}
	// Unlike apps/v1's, an RC's selector may change.
	old, rc := valid(), valid()
	rc.Spec.Selector = map[string]string{"app": "web", "v": "2"}
	rc.Spec.Template.Labels = map[string]string{"app": "web", "v": "2"}
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), rc, old))
}

func TestValidateStatus(t *testing.T) {
	old, rc := valid(), valid()
	rc.Status = corev1.ReplicationControllerStatus{Replicas: 2, ReadyReplicas: 1, AvailableReplicas: 2}
	expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), rc, old),
		"status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas")
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	rc := valid()
	rc.Status.Replicas = 3
	Strategy.PrepareForCreate(ctx, rc)
	if rc.Generation != 1 || rc.Status.Replicas != 0 {
		t.Errorf("after create: generation %d status %+v", rc.Generation, rc.Status)
	}
	if Strategy.DefaultGarbageCollectionPolicy(ctx) != rest.OrphanDependents {
		t.Errorf("core/v1 RCs orphan their pods by default, as upstream")
	}
	old := rc.DeepCopy()
	old.Status.Replicas = 1
	scaled := old.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](4)
	scaled.Status = corev1.ReplicationControllerStatus{}
	Strategy.PrepareForUpdate(ctx, scaled, old)
	if scaled.Generation != 2 || scaled.Status.Replicas != 1 {
		t.Errorf("after a spec change: generation %d, status %+v", scaled.Generation, scaled.Status)
	}
	reported := old.DeepCopy()
	reported.Spec.Replicas = ptr.To[int32](4)
	StatusStrategy.PrepareForUpdate(ctx, reported, old)
	if *reported.Spec.Replicas != 1 {
		t.Errorf("a status write changed the spec")
	}
	if f := Fields(old); f["status.replicas"] != "1" || f["metadata.namespace"] != "ns" {
		t.Errorf("fields %v", f)
	}
	spec, status, selector, _ := ScaleTarget.Replicas(old)
	if spec != 1 || status != 1 || selector != "app=web" {
		t.Errorf("scale of an RC: %d %d %q", spec, status, selector)
	}
	if w := Strategy.WarningsOnCreate(ctx, &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "web.v1"}}); len(w) != 1 {
		t.Errorf("warnings for a dotted name: %v", w)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	rc := valid()
	rc.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
	rc.Status = corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 1}
	noTemplate := corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Name: "empty", CreationTimestamp: rc.CreationTimestamp}}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(),
		&corev1.ReplicationControllerList{Items: []corev1.ReplicationController{*rc, noTemplate}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]any{{"web", int64(1), int64(1), int64(1), "2d", "c", "busybox", "app=web"}, {"empty", int64(0), int64(0), int64(0), "2d", "", "", "<none>"}}
	for r, row := range tbl.Rows {
		for i, cell := range row.Cells {
			if cell != want[r][i] {
				t.Errorf("row %d cell %d (%s) is %#v, want %#v", r, i, tbl.ColumnDefinitions[i].Name, cell, want[r][i])
			}
		}
	}
}
