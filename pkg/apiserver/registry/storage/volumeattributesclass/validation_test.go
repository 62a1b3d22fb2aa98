package volumeattributesclass

import (
	"context"
	"fmt"
	"slices"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

func class(mutate ...func(*storagev1.VolumeAttributesClass)) *storagev1.VolumeAttributesClass {
	vac := &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: "gold", ResourceVersion: "1"},
		DriverName: "example.csi.io",
		Parameters: map[string]string{"iops": "3000"},
	}
	for _, m := range mutate {
		m(vac)
	}
	return vac
}

func TestValidateVolumeAttributesClass(t *testing.T) {
	tests := []struct {
		name string
		vac  *storagev1.VolumeAttributesClass
		want []string
	}{
		{name: "valid", vac: class()},
		{name: "no driver", vac: class(func(v *storagev1.VolumeAttributesClass) { v.DriverName = "" }),
			want: []string{"FieldValueRequired driverName: "}},
		{name: "no parameters", vac: class(func(v *storagev1.VolumeAttributesClass) { v.Parameters = nil }),
			want: []string{"FieldValueRequired parameters: must contain at least one key/value pair"}},
		{name: "empty key", vac: class(func(v *storagev1.VolumeAttributesClass) { v.Parameters = map[string]string{"": "1"} }),
			want: []string{"FieldValueInvalid parameters: field can not be empty."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateVolumeAttributesClass(tt.vac), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	ctx := context.Background()
	old := class()
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, class(func(v *storagev1.VolumeAttributesClass) { v.Labels = map[string]string{"a": "b"} }), old), nil)
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, class(func(v *storagev1.VolumeAttributesClass) {
		v.DriverName = "other.csi.io"
		v.Parameters = map[string]string{"iops": "6000"}
	}), old), []string{
		"FieldValueForbidden driverName: updates to driverName are forbidden.",
		"FieldValueForbidden parameters: updates to parameters are forbidden.",
	})
}

func TestTable(t *testing.T) {
	tbl, err := NewTableConvertor().ConvertToTable(context.Background(), class(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells[:2]); got != "[gold example.csi.io]" {
		t.Errorf("row %s", got)
	}
}
