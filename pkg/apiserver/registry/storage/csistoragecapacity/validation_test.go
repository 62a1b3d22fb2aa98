package csistoragecapacity

import (
	"context"
	"fmt"
	"slices"
	"testing"

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

func capacity(mutate ...func(*storagev1.CSIStorageCapacity)) *storagev1.CSIStorageCapacity {
	c := &storagev1.CSIStorageCapacity{
		ObjectMeta:       metav1.ObjectMeta{Name: "csisc-1", Namespace: "kube-system", ResourceVersion: "1"},
		StorageClassName: "fast",
		NodeTopology:     &metav1.LabelSelector{MatchLabels: map[string]string{"topology.kubernetes.io/zone": "a"}},
		Capacity:         ptr.To(resource.MustParse("1Gi")),
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func TestValidateCSIStorageCapacity(t *testing.T) {
	tests := []struct {
		name string
		c    *storagev1.CSIStorageCapacity
		want []string
	}{
		{name: "valid", c: capacity()},
		{name: "no topology, no capacity", c: capacity(func(c *storagev1.CSIStorageCapacity) { c.NodeTopology, c.Capacity = nil, nil })},
		{name: "no namespace", c: capacity(func(c *storagev1.CSIStorageCapacity) { c.Namespace = "" }),
			want: []string{"FieldValueRequired metadata.namespace: "}},
		{name: "no class", c: capacity(func(c *storagev1.CSIStorageCapacity) { c.StorageClassName = "" }),
			want: []string{"FieldValueInvalid storageClassName: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"}},
		{name: "negative capacity", c: capacity(func(c *storagev1.CSIStorageCapacity) { c.Capacity = ptr.To(resource.MustParse("-1Gi")) }),
			want: []string{"FieldValueInvalid capacity: must be greater than or equal to 0"}},
		{name: "bad topology", c: capacity(func(c *storagev1.CSIStorageCapacity) {
			c.NodeTopology = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "zone", Operator: "In"}}}
		}), want: []string{"FieldValueRequired nodeTopology.matchExpressions[0].values: must be specified when `operator` is 'In' or 'NotIn'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertFieldErrors(t, ValidateCSIStorageCapacity(tt.c, false), tt.want)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	ctx := context.Background()
	old := capacity()
	assertFieldErrors(t, Strategy.ValidateUpdate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) {
		c.Capacity = ptr.To(resource.MustParse("2Gi"))
		c.MaximumVolumeSize = ptr.To(resource.MustParse("1Gi"))
	}), old), nil)
	errs := Strategy.ValidateUpdate(ctx, capacity(func(c *storagev1.CSIStorageCapacity) {
		c.StorageClassName = "slow"
		c.NodeTopology = nil
	}), old)
	assertFieldErrors(t, errs, []string{"FieldValueInvalid nodeTopology: field is immutable", "FieldValueInvalid storageClassName: field is immutable"})
}

func TestWarnings(t *testing.T) {
	c := capacity(func(c *storagev1.CSIStorageCapacity) {
		c.NodeTopology = &metav1.LabelSelector{MatchLabels: map[string]string{"failure-domain.beta.kubernetes.io/zone": "a"}}
	})
	want := []string{`nodeTopology.matchLabels.failure-domain.beta.kubernetes.io/zone: deprecated since v1.17; use "topology.kubernetes.io/zone" instead`}
	if got := Strategy.WarningsOnCreate(context.Background(), c); !slices.Equal(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
}

func TestTable(t *testing.T) {
	tbl, err := NewTableConvertor().ConvertToTable(context.Background(), capacity(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(len(tbl.ColumnDefinitions), tbl.Rows[0].Cells); got != "3 [csisc-1 fast 1Gi]" {
		t.Errorf("table %s", got)
	}
}
