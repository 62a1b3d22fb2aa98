package storageclass

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
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

func class(mutate ...func(*storagev1.StorageClass)) *storagev1.StorageClass {
	sc := &storagev1.StorageClass{
		ObjectMeta:  metav1.ObjectMeta{Name: "fast", ResourceVersion: "1"},
		Provisioner: "kubernetes.io/foo-provisioner",
		Parameters:  map[string]string{"type": "ssd"},
	}
	SetDefaults(sc)
	for _, m := range mutate {
		m(sc)
	}
	return sc
}

func term(exprs ...corev1.TopologySelectorLabelRequirement) corev1.TopologySelectorTerm {
	return corev1.TopologySelectorTerm{MatchLabelExpressions: exprs}
}

func TestSetDefaults(t *testing.T) {
	sc := &storagev1.StorageClass{}
	SetDefaults(sc)
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("defaults %v %v, want Delete Immediate", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	kept := &storagev1.StorageClass{ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimRetain), VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	SetDefaults(kept)
	if *kept.ReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *kept.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		t.Errorf("set values overwritten: %v %v", *kept.ReclaimPolicy, *kept.VolumeBindingMode)
	}
}

func TestValidateStorageClass(t *testing.T) {
	zone := corev1.TopologySelectorLabelRequirement{Key: "topology.kubernetes.io/zone", Values: []string{"a", "b"}}
	tests := []struct {
		name string
		sc   *storagev1.StorageClass
		want []string
	}{
		{name: "valid", sc: class()},
		{name: "upper-case provisioner", sc: class(func(sc *storagev1.StorageClass) { sc.Provisioner = "Example.com/CSI" })},
		{name: "topologies", sc: class(func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(zone), term(corev1.TopologySelectorLabelRequirement{Key: "rack", Values: []string{"1"}})}
		})},
		{name: "no provisioner", sc: class(func(sc *storagev1.StorageClass) { sc.Provisioner = "" }),
			want: []string{"FieldValueRequired provisioner: "}},
		{name: "bad provisioner", sc: class(func(sc *storagev1.StorageClass) { sc.Provisioner = "a/b/c" }),
			want: []string{"FieldValueInvalid provisioner: a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"}},
		{name: "empty parameter key", sc: class(func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"": "x"} }),
			want: []string{"FieldValueInvalid parameters: field can not be empty."}},
		{name: "Recycle", sc: class(func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRecycle) }),
			want: []string{`FieldValueNotSupported reclaimPolicy: supported values: "Delete", "Retain"`}},
		{name: "no binding mode", sc: class(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = nil }),
			want: []string{"FieldValueRequired volumeBindingMode: "}},
		{name: "bad binding mode", sc: class(func(sc *storagev1.StorageClass) { sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingMode("Later")) }),
			want: []string{`FieldValueNotSupported volumeBindingMode: supported values: "Immediate", "WaitForFirstConsumer"`}},
		{name: "topology without values, key twice", sc: class(func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(corev1.TopologySelectorLabelRequirement{Key: "zone"}, corev1.TopologySelectorLabelRequirement{Key: "zone", Values: []string{"a", "a"}})}
		}), want: []string{
			"FieldValueRequired allowedTopologies[0].matchLabelExpressions[0].values: ",
			`FieldValueDuplicate allowedTopologies[0].matchLabelExpressions[1].values[1]: `,
			`FieldValueDuplicate allowedTopologies[0].matchLabelExpressions[1].key: `,
		}},
		{name: "same term twice", sc: class(func(sc *storagev1.StorageClass) {
			sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(zone), term(zone)}
		}), want: []string{"FieldValueDuplicate allowedTopologies[1].matchLabelExpressions: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateStorageClass(tt.sc), tt.want)
		})
	}
	many := map[string]string{}
	for i := range 513 {
		many[fmt.Sprint(i)] = ""
	}
	assertFieldErrors(t, ValidateStorageClass(class(func(sc *storagev1.StorageClass) { sc.Parameters = many })),
		[]string{"FieldValueTooLong parameters: may not be more than 512 bytes"})
	assertFieldErrors(t, ValidateStorageClass(class(func(sc *storagev1.StorageClass) {
		sc.Parameters = map[string]string{"k": strings.Repeat("x", 256*1024)}
	})), []string{"FieldValueTooLong parameters: may not be more than 262144 bytes"})
}

func TestValidateStorageClassUpdate(t *testing.T) {
	old := class()
	tests := []struct {
		name   string
		mutate func(*storagev1.StorageClass)
		want   []string
	}{
		{"labels, expansion, mount options", func(sc *storagev1.StorageClass) {
			sc.Labels = map[string]string{"a": "b"}
			sc.AllowVolumeExpansion = ptr.To(true)
			sc.MountOptions = []string{"ro"}
		}, nil},
		{"parameters", func(sc *storagev1.StorageClass) { sc.Parameters = map[string]string{"type": "hdd"} },
			[]string{"FieldValueInvalid parameters: field is immutable"}},
		{"provisioner", func(sc *storagev1.StorageClass) { sc.Provisioner = "example.com/other" },
			[]string{"FieldValueInvalid provisioner: field is immutable"}},
		{"reclaim policy", func(sc *storagev1.StorageClass) { sc.ReclaimPolicy = ptr.To(corev1.PersistentVolumeReclaimRetain) },
			[]string{"FieldValueInvalid reclaimPolicy: field is immutable"}},
		{"binding mode", func(sc *storagev1.StorageClass) {
			sc.VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
		},
			[]string{"FieldValueInvalid volumeBindingMode: field is immutable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, Strategy.ValidateUpdate(context.Background(), class(tt.mutate), old), tt.want)
		})
	}
}

func TestWarnings(t *testing.T) {
	sc := class(func(sc *storagev1.StorageClass) {
		sc.AllowedTopologies = []corev1.TopologySelectorTerm{term(corev1.TopologySelectorLabelRequirement{Key: corev1.LabelFailureDomainBetaZone, Values: []string{"a"}})}
	})
	want := []string{`allowedTopologies[0].matchLabelExpressions[0].key: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`}
	if got := Strategy.WarningsOnCreate(context.Background(), sc); !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

func TestTable(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(name string, age time.Duration, def bool) storagev1.StorageClass {
		sc := class(func(sc *storagev1.StorageClass) {
			sc.Name = name
			sc.CreationTimestamp = metav1.NewTime(now.Add(-age))
			if def {
				sc.Annotations = map[string]string{IsDefaultAnnotation: "true"}
			}
		})
		return *sc
	}
	list := &storagev1.StorageClassList{Items: []storagev1.StorageClass{
		at("old-default", time.Hour, true), at("new-default", time.Minute, true), at("plain", time.Minute, false),
	}}
	list.Items[2].AllowVolumeExpansion = ptr.To(true)
	list.Items[2].VolumeBindingMode = ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)
	conv := &convertor{clock: clocktesting.NewFakePassiveClock(now)}
	tbl, err := conv.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, r := range tbl.Rows {
		rows = append(rows, fmt.Sprint(r.Cells))
	}
	want := []string{
		"[old-default kubernetes.io/foo-provisioner Delete Immediate false 60m]",
		"[new-default (default) kubernetes.io/foo-provisioner Delete Immediate false 60s]",
		"[plain kubernetes.io/foo-provisioner Delete WaitForFirstConsumer true 60s]",
	}
	if !slices.Equal(rows, want) {
		t.Errorf("rows\n %q\nwant\n %q", rows, want)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if got := strings.Join(cols, " "); got != "Name Provisioner ReclaimPolicy VolumeBindingMode AllowVolumeExpansion Age" {
		t.Errorf("columns %s", got)
	}
	// Alone, a class has no mark, as upstream prints it.
	one, err := conv.ConvertToTable(context.Background(), &list.Items[1], nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Rows[0].Cells[0]; got != "new-default" {
		t.Errorf("name cell %v, want new-default", got)
	}
}
