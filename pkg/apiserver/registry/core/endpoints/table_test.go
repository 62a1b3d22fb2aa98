package endpoints

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func addresses(ips ...string) []corev1.EndpointAddress {
	var out []corev1.EndpointAddress
	for _, ip := range ips {
		out = append(out, corev1.EndpointAddress{IP: ip})
	}
	return out
}

func ports(nums ...int32) []corev1.EndpointPort {
	var out []corev1.EndpointPort
	for _, n := range nums {
		out = append(out, corev1.EndpointPort{Port: n, Protocol: corev1.ProtocolTCP})
	}
	return out
}

// The first four cases are upstream's printer tests (pkg/printers/internalversion:
// TestPrintEndpoint) with their expected cells; the others follow its formatEndpoints.
func TestEndpointsTable(t *testing.T) {
	tests := []struct {
		name    string
		age     time.Duration
		subsets []corev1.EndpointSubset
		want    []any
	}{
		{"no subsets", -1900 * time.Millisecond, nil, []any{"no subsets", "<none>", "0s"}},
		{"no ports", 5 * time.Minute, []corev1.EndpointSubset{{Addresses: addresses("1.2.3.4", "5.6.7.8")}},
			[]any{"no ports", "1.2.3.4,5.6.7.8", "5m"}},
		{"one port", 0, []corev1.EndpointSubset{{Addresses: addresses("1.2.3.4", "5.6.7.8"), Ports: ports(8001)}},
			[]any{"one port", "1.2.3.4:8001,5.6.7.8:8001", "0s"}},
		{"more", 0, []corev1.EndpointSubset{{Addresses: addresses("1.2.3.4", "5.6.7.8", "9.8.7.6", "6.6.6.6"), Ports: ports(8001)}},
			[]any{"more", "1.2.3.4:8001,5.6.7.8:8001,9.8.7.6:8001 + 1 more...", "0s"}},
		{"every port of each address, ports first", 3 * time.Hour,
			[]corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2"), Ports: ports(80, 443)}},
			[]any{"every port of each address, ports first", "10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more...", "3h"}},
		{"counted across subsets", 49 * time.Hour, []corev1.EndpointSubset{
			{Addresses: addresses("10.0.0.1"), Ports: ports(80)},
			{Addresses: addresses("10.0.0.2", "10.0.0.3")},
			{Addresses: addresses("10.0.0.4", "10.0.0.5"), Ports: ports(8080)},
		}, []any{"counted across subsets", "10.0.0.1:80,10.0.0.2,10.0.0.3 + 2 more...", "2d1h"}},
		{"exactly three", 0, []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: ports(80)}},
			[]any{"exactly three", "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80", "0s"}},
		{"IPv6 in brackets", 0, []corev1.EndpointSubset{{Addresses: addresses("fd00::1"), Ports: ports(443)}},
			[]any{"IPv6 in brackets", "[fd00::1]:443", "0s"}},
		// Upstream prints an empty cell, not "<none>", when no address is ready.
		{"only not-ready addresses", 0, []corev1.EndpointSubset{{NotReadyAddresses: addresses("10.0.0.1"), Ports: ports(80)}},
			[]any{"only not-ready addresses", "", "0s"}},
		{"not-ready addresses are not shown", 0, []corev1.EndpointSubset{{Addresses: addresses("10.0.0.1"), NotReadyAddresses: addresses("10.0.0.2"), Ports: ports(80)}},
			[]any{"not-ready addresses are not shown", "10.0.0.1:80", "0s"}},
	}
	list := &corev1.EndpointsList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tc := range tests {
		list.Items = append(list.Items, corev1.Endpoints{
			ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-tc.age))},
			Subsets:    tc.subsets,
		})
	}
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	tbl, err := c.ConvertToTable(context.Background(), list, nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if len(tbl.Rows) != len(tests) || tbl.ResourceVersion != "8" {
		t.Fatalf("got %d rows at rv %q", len(tbl.Rows), tbl.ResourceVersion)
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tbl.Rows[i].Cells; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("cells = %q, want %q", got, tc.want)
			}
			if tbl.Rows[i].Object.Object != &list.Items[i] {
				t.Errorf("row.Object is not the Endpoints")
			}
		})
	}
}

func TestEndpointsTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), ep, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "Endpoints", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != ep {
		t.Errorf("single Endpoints: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), ep, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
