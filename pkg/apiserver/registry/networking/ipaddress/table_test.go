package ipaddress

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

func TestIPAddressTable(t *testing.T) {
	address := func(name string, ref *networkingv1.ParentReference) networkingv1.IPAddress {
		return networkingv1.IPAddress{
			ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(tableNow.Add(-3 * time.Hour))},
			Spec:       networkingv1.IPAddressSpec{ParentRef: ref},
		}
	}
	tests := []struct {
		name string
		ip   networkingv1.IPAddress
		want []any
	}{
		{"service", address("10.96.0.1", &networkingv1.ParentReference{Resource: "services", Namespace: "default", Name: "kubernetes"}),
			[]any{"10.96.0.1", "services/default/kubernetes"}},
		{"group, no namespace", address("2001:db8::2", &networkingv1.ParentReference{Group: "Gateway.Networking.k8s.io", Resource: "Gateways", Name: "GW"}),
			[]any{"2001:db8::2", "gateways.gateway.networking.k8s.io/GW"}},
		{"no parentRef", address("10.0.0.9", nil), []any{"10.0.0.9", "<none>"}},
	}
	list := &networkingv1.IPAddressList{ListMeta: metav1.ListMeta{ResourceVersion: "12"}}
	for _, tt := range tests {
		list.Items = append(list.Items, tt.ip)
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "12" {
		t.Fatalf("got %d rows at rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tt.want) {
				t.Errorf("cells = %v, want %v", got, tt.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the address")
			}
		})
	}
}

func TestIPAddressTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.0.0.1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "ParentRef"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != len(tbl.ColumnDefinitions) {
		t.Errorf("want one row with a cell per column, got %+v", tbl.Rows)
	}
	if tbl.ColumnDefinitions[1].Description == "" {
		t.Error("ParentRef column has no description")
	}
}
