package servicecidr

import (
	"context"
	"reflect"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func TestServiceCIDRTable(t *testing.T) {
	sc := func(name string, c ...string) networkingv1.ServiceCIDR {
		return networkingv1.ServiceCIDR{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(tableNow.Add(-50 * time.Hour))},
			Spec:       networkingv1.ServiceCIDRSpec{CIDRs: c},
		}
	}
	tests := []struct {
		name string
		sc   networkingv1.ServiceCIDR
		want []any
	}{
		{"single", sc("kubernetes", "10.96.0.0/12"), []any{"kubernetes", "10.96.0.0/12", "2d2h"}},
		{"dual-stack", sc("dual", "10.96.0.0/12", "fd00:10:96::/112"), []any{"dual", "10.96.0.0/12,fd00:10:96::/112", "2d2h"}},
		{"none", sc("empty"), []any{"empty", "", "2d2h"}},
	}
	list := &networkingv1.ServiceCIDRList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.sc)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "5" {
		t.Fatalf("got %d rows at rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %v, want %v", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the service CIDR")
			}
		})
	}
}

func TestServiceCIDRTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "CIDRs", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[2] != "<unknown>" {
		t.Errorf("want one row with an unknown age, got %+v", tbl.Rows)
	}
	if tbl.ColumnDefinitions[1].Description == "" {
		t.Error("CIDRs column has no description")
	}
}
