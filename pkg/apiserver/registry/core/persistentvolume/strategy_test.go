package persistentvolume

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestSetDefaults(t *testing.T) {
	pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{
		Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.5m")},
		PersistentVolumeSource: corev1.PersistentVolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/d"}, RBD: &corev1.RBDPersistentVolumeSource{},
			ISCSI: &corev1.ISCSIPersistentVolumeSource{}, AzureDisk: &corev1.AzureDiskVolumeSource{},
			ScaleIO: &corev1.ScaleIOPersistentVolumeSource{},
		},
	}}
	SetDefaults(pv)
	s := pv.Spec
	if pv.Status.Phase != corev1.VolumePending || s.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *s.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("defaults: phase %q, policy %q, mode %v", pv.Status.Phase, s.PersistentVolumeReclaimPolicy, s.VolumeMode)
	}
	if q := s.Capacity[corev1.ResourceStorage]; q.String() != "1m" {
		t.Errorf("capacity rounded to %s, want 1m", q.String())
	}
	if *s.HostPath.Type != corev1.HostPathUnset || s.RBD.RBDPool != "rbd" || s.RBD.RadosUser != "admin" || s.RBD.Keyring != "/etc/ceph/keyring" ||
		s.ISCSI.ISCSIInterface != "default" || *s.AzureDisk.CachingMode != corev1.AzureDataDiskCachingReadWrite || *s.AzureDisk.FSType != "ext4" ||
		*s.AzureDisk.ReadOnly || *s.AzureDisk.Kind != corev1.AzureSharedBlobDisk || s.ScaleIO.StorageMode != "ThinProvisioned" || s.ScaleIO.FSType != "xfs" {
		t.Errorf("source defaults: %+v %+v %+v %+v %+v", s.HostPath, s.RBD, s.ISCSI, s.AzureDisk, s.ScaleIO)
	}
	kept := volume(func(pv *corev1.PersistentVolume) {
		pv.Status.Phase = corev1.VolumeBound
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
		pv.Spec.HostPath.Type = ptr.To(corev1.HostPathDirectory)
	})
	SetDefaults(kept)
	if kept.Status.Phase != corev1.VolumeBound || kept.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *kept.Spec.HostPath.Type != corev1.HostPathDirectory {
		t.Errorf("set values changed: %+v", kept)
	}
}

func TestStrategies(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakePassiveClock(now)
	main := newStrategy(clk)
	status := statusStrategy{main}

	pv := volume(func(pv *corev1.PersistentVolume) {
		pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, Message: "m"}
	})
	main.PrepareForCreate(ctx, pv)
	if pv.Status.Phase != corev1.VolumePending || pv.Status.Message != "" || !pv.Status.LastPhaseTransitionTime.Time.Equal(now) {
		t.Errorf("status after create: %+v", pv.Status)
	}

	// A spec write keeps the status.
	written := volume(func(pv *corev1.PersistentVolume) {
		pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeFailed}
	})
	main.PrepareForUpdate(ctx, written, pv)
	if !reflect.DeepEqual(written.Status, pv.Status) {
		t.Errorf("status after a spec write: %+v", written.Status)
	}

	later := metav1.NewTime(now.Add(time.Hour))
	clk.SetTime(later.Time)
	tests := []struct {
		name      string
		phase     corev1.PersistentVolumePhase
		given     *metav1.Time
		wantStamp time.Time
	}{
		{"same phase keeps the time", corev1.VolumePending, nil, now},
		{"a new phase is stamped", corev1.VolumeBound, nil, later.Time},
		{"a new phase with the old time is stamped", corev1.VolumeBound, pv.Status.LastPhaseTransitionTime, later.Time},
		{"a new phase with the writer's time keeps it", corev1.VolumeBound, ptr.To(metav1.NewTime(now.Add(time.Minute))), now.Add(time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := volume(func(w *corev1.PersistentVolume) {
				w.Spec.StorageClassName = "ignored"
				w.Status = corev1.PersistentVolumeStatus{Phase: tc.phase, LastPhaseTransitionTime: tc.given}
			})
			status.PrepareForUpdate(ctx, w, pv)
			if w.Spec.StorageClassName != "" || !w.Status.LastPhaseTransitionTime.Time.Equal(tc.wantStamp) {
				t.Errorf("class %q, transition %v, want the spec kept and %v", w.Spec.StorageClassName, w.Status.LastPhaseTransitionTime, tc.wantStamp)
			}
		})
	}
	if errs := status.ValidateUpdate(ctx, volume(), pv); len(errs) != 0 {
		t.Errorf("status write: %v", errs)
	}
	if errs := main.ValidateUpdate(ctx, volume(func(pv *corev1.PersistentVolume) { pv.Spec.HostPath.Path = "/x" }), pv); len(errs) != 1 {
		t.Errorf("spec write of the source: %v, want one error", errs)
	}
	if main.NamespaceScoped() || status.NamespaceScoped() {
		t.Error("volumes are cluster-scoped")
	}
	if set := main.GetResetFields()["v1"]; set.String() != ".status" {
		t.Errorf("main resets %v", set)
	}
	if set := status.GetResetFields()["v1"]; set.String() != ".spec" {
		t.Errorf("status resets %v", set)
	}
}

func TestFields(t *testing.T) {
	want := fields.Set{"metadata.name": "pv-1", "name": "pv-1"}
	if got := Fields(volume()); !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
}

func TestWarnings(t *testing.T) {
	pv := volume(func(pv *corev1.PersistentVolume) {
		pv.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "x", corev1.MountOptionAnnotation: "ro"}
		pv.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		pv.Spec.NodeAffinity = affinity("beta.kubernetes.io/arch", "amd64")
		pv.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{RBD: &corev1.RBDPersistentVolumeSource{}}
	})
	want := []string{
		`metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead`,
		`metadata.annotations[volume.beta.kubernetes.io/mount-options]: deprecated since v1.31; use "mountOptions" attribute instead`,
		"spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended approach is to use dynamic provisioning.",
		`spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/arch is deprecated since v1.14; use "kubernetes.io/arch" instead`,
		"spec.rbd: deprecated in v1.28, non-functional in v1.31+",
	}
	if got := Strategy.WarningsOnCreate(context.Background(), pv); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
	if got := Strategy.WarningsOnUpdate(context.Background(), volume(), pv); got != nil {
		t.Errorf("warnings of a plain volume: %q", got)
	}
}

func TestTable(t *testing.T) {
	created := metav1.NewTime(now.Add(-3 * time.Hour))
	deleted := metav1.NewTime(now)
	list := &corev1.PersistentVolumeList{Items: []corev1.PersistentVolume{
		*volume(func(pv *corev1.PersistentVolume) { pv.CreationTimestamp = created; pv.Spec.VolumeMode = nil }),
		*volume(func(pv *corev1.PersistentVolume) {
			pv.Name, pv.CreationTimestamp, pv.DeletionTimestamp = "pv-2", created, &deleted
			pv.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "beta"}
			pv.Spec.StorageClassName = "manual"
			pv.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "ns", Name: "data"}
			pv.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany, corev1.ReadWriteOnce}
			pv.Spec.VolumeAttributesClassName = ptr.To("gold")
			pv.Status = corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound, Reason: "Why"}
		}),
	}}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	want := [][]any{
		{"pv-1", "1Gi", "RWO", "Retain", "Pending", "", "", "<unset>", "", "3h", "<unset>"},
		{"pv-2", "1Gi", "RWO,RWX", "Retain", "Terminating", "ns/data", "beta", "gold", "Why", "3h", "Filesystem"},
	}
	for i, row := range tbl.Rows {
		if !reflect.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %v, want %v", i, row.Cells, want[i])
		}
	}
}
