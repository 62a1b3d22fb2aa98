package csinode

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// errorSummary is each error as "Type path: detail", sorted.
func errorSummary(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s: %s", string(e.Type), e.Field, e.Detail))
	}
	slices.Sort(out)
	return out
}

func assertFieldErrors(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	want = slices.Clone(want)
	slices.Sort(want)
	if got := errorSummary(errs); !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}

func node(drivers ...storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node-1", ResourceVersion: "1"}, Spec: storagev1.CSINodeSpec{Drivers: drivers}}
}

func drv(name, id string, keys ...string) storagev1.CSINodeDriver {
	return storagev1.CSINodeDriver{Name: name, NodeID: id, TopologyKeys: keys}
}

func TestValidateCSINode(t *testing.T) {
	long := string(make([]byte, 257))
	tests := []struct {
		name string
		n    *storagev1.CSINode
		want []string
	}{
		{name: "valid", n: node(drv("io.kubernetes.storage.mock", "node-1", "company.com/zone1", "company.com/zone2"), drv("Mock.Driver", "n1"))},
		{name: "no drivers", n: node()},
		{name: "no driver name", n: node(drv("", "node-1")), want: []string{"FieldValueRequired spec.drivers[0].name: "}},
		{name: "driver name too long", n: node(drv("a234567890123456789012345678901234567890123456789012345678901234", "n1")),
			want: []string{"FieldValueTooLong spec.drivers[0].name: may not be more than 63 bytes"}},
		{name: "no node ID", n: node(drv("mock.driver", "")), want: []string{"FieldValueRequired spec.drivers[0].nodeID: "}},
		{name: "node ID too long", n: node(drv("mock.driver", long)), want: []string{"FieldValueInvalid spec.drivers[0].nodeID: must be 256 characters or less"}},
		{name: "duplicate driver", n: node(drv("mock.driver", "a"), drv("mock.driver", "b")),
			want: []string{"FieldValueDuplicate spec.drivers[1].name: "}},
		{name: "duplicate topology key", n: node(drv("mock.driver", "a", "zone", "zone")),
			want: []string{"FieldValueDuplicate spec.drivers[0]: "}},
		{name: "empty topology key", n: node(drv("mock.driver", "a", "")), want: []string{
			"FieldValueRequired spec.drivers[0]: ",
			"FieldValueInvalid spec.drivers[0]: name part must be non-empty",
			"FieldValueInvalid spec.drivers[0]: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
		}},
		{name: "negative allocatable", n: node(storagev1.CSINodeDriver{Name: "mock.driver", NodeID: "a", Allocatable: &storagev1.VolumeNodeResources{Count: ptr.To[int32](-1)}}),
			want: []string{"FieldValueInvalid spec.drivers[0].allocatable.count: must be greater than or equal to 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateCSINode(tt.n), tt.want)
		})
	}
}

func TestValidateCSINodeUpdate(t *testing.T) {
	ctx := context.Background()
	old := node(drv("mock.driver", "a", "zone"))
	old.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To[int32](10)}

	added := node(drv("mock.driver", "a", "zone"), drv("other.driver", "b"))
	added.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To[int32](20)}
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, added, old), nil)
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, node(), old), nil)

	changed := node(drv("mock.driver", "z", "zone"))
	errs := Strategy.ValidateUpdate(ctx, changed, old)
	if len(errs) != 1 || errs[0].Field != "spec.drivers" || errs[0].Detail != "field is immutable" {
		t.Errorf("errors %v, want spec.drivers immutable", errs)
	}
}

func TestStatus(t *testing.T) {
	ctx := context.Background()
	health := []storagev1.StorageHealth{{Name: "mock.driver", HealthConditions: []storagev1.StorageHealthCondition{{Status: storagev1.StorageDegraded, Reason: "Slow"}}}}
	n := node(drv("mock.driver", "a"))
	n.Status.StorageHealth = health
	Strategy.PrepareForCreate(ctx, n)
	if n.Status.StorageHealth != nil {
		t.Errorf("status %+v on create, want none", n.Status)
	}
	// CSIVolumeHealth is off: a status write cannot add storage health.
	update := n.DeepCopy()
	update.Status.StorageHealth = health
	StatusStrategy.PrepareForUpdate(ctx, update, n)
	if update.Status.StorageHealth != nil {
		t.Errorf("status %+v, want storage health dropped", update.Status)
	}

	bad := n.DeepCopy()
	bad.Status.StorageHealth = []storagev1.StorageHealth{
		{Name: "mock.driver", HealthConditions: []storagev1.StorageHealthCondition{{Status: "Broken"}}},
		{Name: "mock.driver"},
	}
	assertFieldErrors(t, StatusStrategy.ValidateUpdate(ctx, bad, n), []string{
		`FieldValueNotSupported status.storageHealth[0].healthConditions[0].status: supported values: "StorageDegraded", "StorageUnreachable"`,
		"FieldValueRequired status.storageHealth[0].healthConditions[0].reason: ",
		"FieldValueDuplicate status.storageHealth[1]: ",
	})
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	n := node(drv("a.driver", "1"), drv("b.driver", "1"))
	n.CreationTimestamp = metav1.NewTime(now.Add(-48 * time.Hour))
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), n, nil)
	if err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := fmt.Sprint(cols, tbl.Rows[0].Cells); got != "[Name Drivers Age] [node-1 2 2d]" {
		t.Errorf("table %s", got)
	}
}
