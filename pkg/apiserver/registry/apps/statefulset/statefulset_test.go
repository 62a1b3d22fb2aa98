package statefulset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func claim(name string) corev1.PersistentVolumeClaim {
	return corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
}

func valid() *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "ns", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim("data")},
		},
	}
	SetDefaults(s)
	return s
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
	s := valid()
	ru := s.Spec.UpdateStrategy.RollingUpdate
	p := s.Spec.PersistentVolumeClaimRetentionPolicy
	if s.Spec.PodManagementPolicy != appsv1.OrderedReadyPodManagement || s.Spec.UpdateStrategy.Type != appsv1.RollingUpdateStatefulSetStrategyType ||
		ru == nil || *ru.Partition != 0 || ru.MaxUnavailable.IntValue() != 1 ||
		p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType || p.WhenScaled != appsv1.RetainPersistentVolumeClaimRetentionPolicyType ||
		*s.Spec.Replicas != 1 || *s.Spec.RevisionHistoryLimit != 10 {
		t.Errorf("defaults: %+v", s.Spec)
	}
	c := s.Spec.VolumeClaimTemplates[0]
	if *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || c.Status.Phase != corev1.ClaimPending {
		t.Errorf("claim template defaults: %+v", c)
	}
	// As upstream: the type given without parameters gets none.
	bare := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType}}}
	SetDefaults(bare)
	if bare.Spec.UpdateStrategy.RollingUpdate != nil {
		t.Errorf("rollingUpdate defaulted for an explicit RollingUpdate type: %+v", bare.Spec.UpdateStrategy.RollingUpdate)
	}
	// Quantities are rounded up to milli-units.
	odd := &appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim("x")}}}
	odd.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("1.0001m")
	SetDefaults(odd)
	if q := odd.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2m" {
		t.Errorf("storage %s, want 2m", q.String())
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *appsv1.StatefulSet)
		want   []string
	}{
		{"valid", func(*appsv1.StatefulSet) {}, nil},
		{"no service", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "" }, nil},
		{"bad service name", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "DB" },
			[]string{`spec.serviceName: Invalid value: "DB"`}},
		{"name not a DNS label", func(s *appsv1.StatefulSet) { s.Name = "db.one" },
			[]string{`metadata.name: Invalid value: "db.one"`}},
		{"no pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "" },
			[]string{"spec.podManagementPolicy: Required value"}},
		{"bad pod management policy", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Random" },
			[]string{`spec.podManagementPolicy: Invalid value: "Random": must be 'OrderedReady' or 'Parallel'`}},
		{"no update strategy", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{} },
			[]string{"spec.updateStrategy: Required value"}},
		{"on delete with parameters", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			[]string{`spec.updateStrategy.rollingUpdate: Invalid value: {"partition":0,"maxUnavailable":1}: only allowed for updateStrategy 'RollingUpdate'`}},
		{"recreate", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.RecreateStatefulSetStrategyType}
		}, []string{"spec.updateStrategy: Invalid value: {\"type\":\"Recreate\"}: must be 'RollingUpdate' or 'OnDelete'"}},
		{"negative partition", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](-1) },
			[]string{"spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"}},
		{"zero unavailable", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromString("0%"))
		},
			[]string{`spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "0%": cannot be 0`}},
		{"bad retention", func(s *appsv1.StatefulSet) { s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			[]string{`spec.persistentVolumeClaimRetentionPolicy.whenScaled: Unsupported value: "Keep": supported values: "Retain", "Delete"`}},
		{"negative ordinal", func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} },
			[]string{"spec.ordinals.start: Invalid value: -1: must be greater than or equal to 0"}},
		{"empty selector", func(s *appsv1.StatefulSet) { s.Spec.Selector = &metav1.LabelSelector{} },
			[]string{"spec.selector: Invalid value: {}: empty selector is invalid for statefulset"}},
		{"no selector", func(s *appsv1.StatefulSet) { s.Spec.Selector = nil },
			[]string{"spec.selector: Required value", "spec.template.metadata.labels: Invalid value"}},
		{"unselected template", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "web"} },
			[]string{"spec.template.metadata.labels: Invalid value: {\"app\":\"web\"}: `selector` does not match template `labels`"}},
		{"restart on failure", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure },
			[]string{`spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"`}},
		{"deadline", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.ActiveDeadlineSeconds = ptr.To[int64](1) },
			[]string{"spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in StatefulSet is not Supported"}},
		{"mount of no volume", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates = nil },
			[]string{`spec.template.spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		{"claim without access modes", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = nil },
			[]string{"spec.volumeClaimTemplates[0].spec.accessModes: Required value: at least 1 access mode is required"}},
		{"claim with mixed modes", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany, "Sometimes"}
		}, []string{`spec.volumeClaimTemplates[0].spec.accessModes: Unsupported value: "Sometimes"`,
			"spec.volumeClaimTemplates[0].spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"}},
		{"claim without storage", func(s *appsv1.StatefulSet) { s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests = nil },
			[]string{"spec.volumeClaimTemplates[0].spec.resources[storage]: Required value"}},
		{"claim of zero storage", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, []string{`spec.volumeClaimTemplates[0].spec.resources[storage]: Invalid value: "0": must be greater than zero`}},
		{"claim volume mode", func(s *appsv1.StatefulSet) {
			s.Spec.VolumeClaimTemplates[0].Spec.VolumeMode = ptr.To[corev1.PersistentVolumeMode]("Tape")
		},
			[]string{`spec.volumeClaimTemplates[0].spec.volumeMode: Unsupported value: "Tape": supported values: "Block", "Filesystem"`}},
		{"hostname is the controller's", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Hostname = "NOT_A_NAME" }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := valid()
			tt.mutate(s)
			expectErrors(t, Strategy.Validate(context.Background(), s), tt.want...)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	old := valid()
	s := valid()
	s.Spec.ServiceName = "other"
	s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
	s.Spec.VolumeClaimTemplates = append(s.Spec.VolumeClaimTemplates, claim("logs"))
	s.Spec.Selector.MatchLabels["tier"] = "x"
	s.Spec.Template.Labels["tier"] = "x"
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), s, old),
		"spec.selector: Invalid value", "spec.volumeClaimTemplates: Invalid value", "spec.serviceName: Invalid value", "spec.podManagementPolicy: Invalid value")

	// What an update may change: replicas, the template, the update strategy, retention.
	s = valid()
	s.Spec.Replicas = ptr.To[int32](3)
	s.Spec.Template.Spec.Containers[0].Image = "busybox:2"
	s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](2)
	s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), s, old))

	// A stored StatefulSet whose template is invalid by today's rules may still be updated.
	old.Spec.Template.Spec.Containers[0].Name = "Bad_Name"
	s = old.DeepCopy()
	s.Spec.Replicas = ptr.To[int32](0)
	expectErrors(t, Strategy.ValidateUpdate(context.Background(), s, old))
}

func TestValidateStatus(t *testing.T) {
	old := valid()
	s := valid()
	s.Status = appsv1.StatefulSetStatus{Replicas: 1, ReadyReplicas: 1, CurrentReplicas: 2, AvailableReplicas: 1}
	expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), s, old),
		"status.currentReplicas: Invalid value: 2: cannot be greater than status.replicas")
	old.Status.CollisionCount = ptr.To[int32](1)
	s.Status = appsv1.StatefulSetStatus{AvailableReplicas: 0, ReadyReplicas: 0}
	expectErrors(t, StatusStrategy.ValidateUpdate(context.Background(), s, old), "status.collisionCount: Invalid value: 0: cannot be decremented")
}

func TestStrategy(t *testing.T) {
	ctx := context.Background()
	s := valid()
	s.Status.Replicas = 2
	Strategy.PrepareForCreate(ctx, s)
	if s.Generation != 1 || s.Status.Replicas != 0 {
		t.Errorf("after create: generation %d status %+v", s.Generation, s.Status)
	}
	old := s.DeepCopy()
	old.Status.Replicas = 1
	n := old.DeepCopy()
	n.Spec.Replicas = ptr.To[int32](2)
	n.Status = appsv1.StatefulSetStatus{}
	Strategy.PrepareForUpdate(ctx, n, old)
	if n.Generation != 2 || n.Status.Replicas != 1 {
		t.Errorf("after a spec change: generation %d status %+v", n.Generation, n.Status)
	}
	reported := old.DeepCopy()
	reported.Spec.Replicas = ptr.To[int32](5)
	StatusStrategy.PrepareForUpdate(ctx, reported, old)
	if *reported.Spec.Replicas != 1 {
		t.Errorf("a status write changed the spec")
	}
	old.Spec.RevisionHistoryLimit = ptr.To[int32](-1)
	if w := Strategy.WarningsOnCreate(ctx, old); len(w) != 1 || !strings.HasPrefix(w[0], "spec.revisionHistoryLimit: a negative value retains all historical revisions") {
		t.Errorf("warnings %v", w)
	}
	if errs := Strategy.Validate(ctx, old); len(errs) != 0 {
		t.Errorf("a negative revisionHistoryLimit is only a warning for StatefulSets: %v", errs)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	s := valid()
	s.CreationTimestamp = metav1.NewTime(now.Add(-3 * 24 * time.Hour))
	s.Spec.Replicas = ptr.To[int32](3)
	s.Status.ReadyReplicas = 2
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"db", "2/3", "3d", "c", "busybox"}
	if len(tbl.ColumnDefinitions) != len(want) {
		t.Fatalf("%d columns, want %d", len(tbl.ColumnDefinitions), len(want))
	}
	for i, cell := range tbl.Rows[0].Cells {
		if cell != want[i] {
			t.Errorf("cell %d (%s) is %#v, want %#v", i, tbl.ColumnDefinitions[i].Name, cell, want[i])
		}
	}
}
