package persistentvolumeclaim

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

func TestSetDefaults(t *testing.T) {
	c := &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.0001m")},
		Limits:   corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")},
	}}}
	SetDefaults(c)
	if c.Status.Phase != corev1.ClaimPending || *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("defaults: phase %q, volume mode %v", c.Status.Phase, c.Spec.VolumeMode)
	}
	if q := c.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "2m" {
		t.Errorf("request rounded to %s, want 2m", q.String())
	}
	if q := c.Spec.Resources.Limits[corev1.ResourceStorage]; q.String() != "2Gi" {
		t.Errorf("limit %s, want 2Gi kept", q.String())
	}
	bound := &corev1.PersistentVolumeClaim{
		Spec:   corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeBlock)},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	SetDefaults(bound)
	if bound.Status.Phase != corev1.ClaimBound || *bound.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		t.Errorf("set values changed: phase %q, mode %s", bound.Status.Phase, *bound.Spec.VolumeMode)
	}
}

func TestPrepareForCreate(t *testing.T) {
	snapshots := "snapshot.storage.k8s.io"
	tests := []struct {
		name    string
		ds      *corev1.TypedLocalObjectReference
		ref     *corev1.TypedObjectReference
		wantDS  *corev1.TypedLocalObjectReference
		wantRef *corev1.TypedObjectReference
	}{
		{name: "none"},
		{name: "a claim as dataSource gets its dataSourceRef",
			ds:      &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"},
			wantDS:  &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"},
			wantRef: &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}},
		{name: "a snapshot as dataSource too",
			ds:      &corev1.TypedLocalObjectReference{APIGroup: &snapshots, Kind: "VolumeSnapshot", Name: "s"},
			wantDS:  &corev1.TypedLocalObjectReference{APIGroup: &snapshots, Kind: "VolumeSnapshot", Name: "s"},
			wantRef: &corev1.TypedObjectReference{APIGroup: &snapshots, Kind: "VolumeSnapshot", Name: "s"}},
		{name: "anything else in dataSource alone is dropped",
			ds: &corev1.TypedLocalObjectReference{Kind: "ConfigMap", Name: "c"}},
		{name: "dataSourceRef gets its dataSource",
			ref:     &corev1.TypedObjectReference{APIGroup: ptr.To("example.com"), Kind: "Populator", Name: "p"},
			wantDS:  &corev1.TypedLocalObjectReference{APIGroup: ptr.To("example.com"), Kind: "Populator", Name: "p"},
			wantRef: &corev1.TypedObjectReference{APIGroup: ptr.To("example.com"), Kind: "Populator", Name: "p"}},
		{name: "a reference to another namespace has no dataSource",
			ref:     &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "p", Namespace: ptr.To("other")},
			wantRef: &corev1.TypedObjectReference{Kind: "PersistentVolumeClaim", Name: "p", Namespace: ptr.To("other")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) { c.Spec.DataSource, c.Spec.DataSourceRef = tc.ds, tc.ref })
			Strategy.PrepareForCreate(context.Background(), c)
			if !reflect.DeepEqual(c.Status, corev1.PersistentVolumeClaimStatus{}) {
				t.Errorf("status kept on create: %+v", c.Status)
			}
			if !reflect.DeepEqual(c.Spec.DataSource, tc.wantDS) || !reflect.DeepEqual(c.Spec.DataSourceRef, tc.wantRef) {
				t.Errorf("data sources %+v %+v, want %+v %+v", c.Spec.DataSource, c.Spec.DataSourceRef, tc.wantDS, tc.wantRef)
			}
		})
	}
}

func TestPrepareForUpdate(t *testing.T) {
	ctx := context.Background()
	old := claim(bound("1Gi"), func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	})
	// A write from an old client: no status, the data source it knows.
	c := claim(func(c *corev1.PersistentVolumeClaim) {
		c.Status = corev1.PersistentVolumeClaimStatus{}
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	})
	Strategy.PrepareForUpdate(ctx, c, old)
	if c.Status.Phase != corev1.ClaimBound || c.Spec.DataSourceRef == nil || old.Spec.DataSourceRef == nil {
		t.Errorf("update: status %+v, refs %v %v", c.Status, c.Spec.DataSourceRef, old.Spec.DataSourceRef)
	}
	if errs := Strategy.ValidateUpdate(ctx, c, old); len(errs) != 1 { // the volume name only
		t.Errorf("update errors %v, want the volume name's only", errs)
	}

	// A status write keeps the spec.
	s := claim(bound("2Gi"), storage("5Gi"))
	StatusStrategy.PrepareForUpdate(ctx, s, old)
	if q := s.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "1Gi" || s.Status.Capacity.Storage().String() != "2Gi" {
		t.Errorf("status write: request %s, capacity %s", q.String(), s.Status.Capacity.Storage())
	}
	if errs := StatusStrategy.ValidateUpdate(ctx, s, old); len(errs) != 0 {
		t.Errorf("status write errors: %v", errs)
	}
	if w := StatusStrategy.WarningsOnUpdate(ctx, s, old); w != nil {
		t.Errorf("status warnings %v", w)
	}
	for strategy, want := range map[string]string{"main": "status", "status": "spec"} {
		resets := Strategy.GetResetFields()
		if strategy == "status" {
			resets = StatusStrategy.GetResetFields()
		}
		if set := resets["v1"]; set == nil || set.String() != "."+want {
			t.Errorf("%s strategy resets %v, want %s", strategy, set, want)
		}
	}
}

func TestFields(t *testing.T) {
	want := fields.Set{"metadata.name": "data", "metadata.namespace": "ns", "name": "data"}
	if got := Fields(claim()); !reflect.DeepEqual(got, want) {
		t.Errorf("fields %v, want %v", got, want)
	}
}

func TestWarnings(t *testing.T) {
	c := claim(storage("1500m"), func(c *corev1.PersistentVolumeClaim) {
		c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "fast"}
		c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2500m")}
	})
	want := []string{
		`metadata.annotations[volume.beta.kubernetes.io/storage-class]: deprecated since v1.8; use "storageClassName" attribute instead`,
		`spec.resources.requests[storage]: fractional byte value "1500m" is invalid, must be an integer`,
		`spec.resources.limits[storage]: fractional byte value "2500m" is invalid, must be an integer`,
	}
	if got := Strategy.WarningsOnCreate(context.Background(), c); !reflect.DeepEqual(got, want) {
		t.Errorf("warnings:\n got %q\nwant %q", got, want)
	}
	if got := Strategy.WarningsOnUpdate(context.Background(), claim(), c); got != nil {
		t.Errorf("warnings of a plain claim: %q", got)
	}
}

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestTable(t *testing.T) {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(tableNow.Add(-90 * time.Second))}
	}
	deleted := metav1.NewTime(tableNow)
	list := &corev1.PersistentVolumeClaimList{ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: []corev1.PersistentVolumeClaim{
		*claim(func(c *corev1.PersistentVolumeClaim) { c.ObjectMeta = meta("pending"); c.Spec.VolumeMode = nil }),
		*claim(bound("10Gi"), func(c *corev1.PersistentVolumeClaim) {
			c.ObjectMeta = meta("bound")
			c.Spec.StorageClassName = ptr.To("fast")
			c.Spec.VolumeAttributesClassName = ptr.To("gold")
			c.Status.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod, corev1.ReadOnlyMany, corev1.ReadWriteOnce, corev1.ReadOnlyMany}
		}),
		*claim(func(c *corev1.PersistentVolumeClaim) {
			c.ObjectMeta = meta("going")
			c.DeletionTimestamp = &deleted
			c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: "beta"}
			c.Spec.StorageClassName = ptr.To("fast")
		}),
	}}
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow)).ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age", "VolumeMode"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
	if last := tbl.ColumnDefinitions[len(tbl.ColumnDefinitions)-1]; last.Priority != 1 {
		t.Errorf("VolumeMode is for -o wide only: priority %d", last.Priority)
	}
	want := [][]any{
		{"pending", "Pending", "", "", "", "", "<unset>", "90s", "<unset>"},
		{"bound", "Bound", "pv-1", "10Gi", "RWO,ROX,RWOP", "fast", "gold", "90s", "Filesystem"},
		{"going", "Terminating", "", "", "", "beta", "<unset>", "90s", "Filesystem"},
	}
	if len(tbl.Rows) != len(want) || tbl.ResourceVersion != "7" {
		t.Fatalf("%d rows at %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, row := range tbl.Rows {
		if !reflect.DeepEqual(row.Cells, want[i]) {
			t.Errorf("row %d: %v, want %v", i, row.Cells, want[i])
		}
	}
}
