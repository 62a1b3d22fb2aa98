package volumeattachment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
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

func attachment(mutate ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-123", ResourceVersion: "1"},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: "example.csi.io",
			NodeName: "node-1",
			Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-1")},
		},
	}
	for _, m := range mutate {
		m(va)
	}
	return va
}

func inline(spec corev1.PersistentVolumeSpec) func(*storagev1.VolumeAttachment) {
	return func(va *storagev1.VolumeAttachment) {
		va.Spec.Source = storagev1.VolumeAttachmentSource{InlineVolumeSpec: &spec}
	}
}

func csiSpec() corev1.PersistentVolumeSpec {
	return corev1.PersistentVolumeSpec{
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "example.csi.io", VolumeHandle: "vol-1"}},
	}
}

func TestValidateVolumeAttachment(t *testing.T) {
	const exactlyOne = "must specify exactly one of inlineVolumeSpec and persistentVolumeName"
	tests := []struct {
		name string
		va   *storagev1.VolumeAttachment
		want []string
	}{
		{name: "valid", va: attachment()},
		{name: "valid inline", va: attachment(inline(csiSpec()))},
		{name: "no attacher", va: attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "" }),
			want: []string{"FieldValueRequired spec.attacher: "}},
		{name: "no node", va: attachment(func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "" }),
			want: []string{"FieldValueInvalid spec.nodeName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "no source", va: attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source = storagev1.VolumeAttachmentSource{} }),
			want: []string{"FieldValueRequired spec.source: " + exactlyOne}},
		{name: "two sources", va: attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source.InlineVolumeSpec = ptr.To(csiSpec()) }),
			want: []string{"FieldValueForbidden spec.source: " + exactlyOne}},
		{name: "empty volume name", va: attachment(func(va *storagev1.VolumeAttachment) { va.Spec.Source.PersistentVolumeName = ptr.To("") }),
			want: []string{
				"FieldValueRequired spec.source.persistentVolumeName: must specify non empty persistentVolumeName",
				"FieldValueInvalid spec.source.persistentVolumeName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
			}},
		{name: "inline not CSI, with capacity", va: attachment(inline(corev1.PersistentVolumeSpec{
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		})), want: []string{
			"FieldValueForbidden spec.source.inlineVolumeSpec.capacity: may not be specified in the context of inline volumes",
			"FieldValueRequired spec.source.inlineVolumeSpec.csi: has to be specified in the context of inline volumes",
			"FieldValueForbidden spec.source.inlineVolumeSpec.persistentVolumeReclaimPolicy: may only be Retain in the context of inline volumes",
		}},
		{name: "status error code and message", va: attachment(func(va *storagev1.VolumeAttachment) {
			va.Status.AttachError = &storagev1.VolumeError{Message: strings.Repeat("x", 1025), ErrorCode: ptr.To[int32](-1)}
		}), want: []string{
			"FieldValueTooLong status.attachError.message: may not be more than 1024 bytes",
			"FieldValueInvalid status.attachError.errorCode: must be between 0 and 2147483647, inclusive",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateVolumeAttachment(tt.va), tt.want)
		})
	}
}

func TestUpdate(t *testing.T) {
	ctx := context.Background()
	old := attachment()
	old.Status.Attached = true
	changed := attachment(func(va *storagev1.VolumeAttachment) { va.Spec.NodeName = "node-2" })
	errs := Strategy.ValidateUpdate(ctx, changed, old)
	if len(errs) != 1 || errs[0].Field != "spec" || errs[0].Detail != "field is immutable" {
		t.Errorf("errors %v, want spec immutable", errs)
	}
	Strategy.PrepareForUpdate(ctx, changed, old)
	if !changed.Status.Attached {
		t.Error("the main resource changed status")
	}

	status := attachment(func(va *storagev1.VolumeAttachment) {
		va.Spec.NodeName = "node-2"
		va.Labels = map[string]string{"a": "b"}
		va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachError: &storagev1.VolumeError{Message: "x", ErrorCode: ptr.To[int32](5)}}
	})
	StatusStrategy.PrepareForUpdate(ctx, status, old)
	if status.Spec.NodeName != "node-1" || status.Labels != nil || *status.Status.AttachError.ErrorCode != 5 {
		t.Errorf("after a status update: %+v", status)
	}
	assertFieldErrors(t, StatusStrategy.ValidateUpdate(ctx, status, old), nil)
}

func TestTable(t *testing.T) {
	va := attachment()
	va.Status.Attached = true
	tbl, err := NewTableConvertor().ConvertToTable(context.Background(), va, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tbl.Rows[0].Cells[:5]); got != "[csi-123 example.csi.io pv-1 node-1 true]" {
		t.Errorf("row %s", got)
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
