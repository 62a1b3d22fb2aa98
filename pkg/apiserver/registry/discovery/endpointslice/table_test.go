package endpointslice

import (
	"context"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var tableNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func tcpPort(name string, n int32) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{Name: ptr.To(name), Port: ptr.To(n), Protocol: ptr.To(corev1.ProtocolTCP)}
}

// The first three cases are upstream's printer tests (pkg/printers/internalversion:
// TestPrintEndpointSlice) with their expected cells; the others follow its
// formatDiscoveryPorts and formatDiscoveryEndpoints.
func TestEndpointSliceTable(t *testing.T) {
	twoEndpoints := []discoveryv1.Endpoint{
		{Addresses: []string{"10.1.2.3", "2001:db8::1234:5678"}},
		{Addresses: []string{"10.2.3.4", "2001:db8::2345:6789"}},
	}
	tests := []struct {
		name        string
		age         time.Duration
		addressType discoveryv1.AddressType
		ports       []discoveryv1.EndpointPort
		endpoints   []discoveryv1.Endpoint
		want        []any
	}{
		{"abcslice.123", -1900 * time.Millisecond, discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{tcpPort("http", 80)},
			[]discoveryv1.Endpoint{{Addresses: []string{"10.1.2.3", "2001:db8::1234:5678"}}},
			[]any{"abcslice.123", "IPv4", "80", "10.1.2.3,2001:db8::1234:5678", "0s"}},
		{"longerslicename.123", 5 * time.Minute, discoveryv1.AddressTypeIPv6, []discoveryv1.EndpointPort{tcpPort("http", 80), tcpPort("https", 443)},
			twoEndpoints,
			[]any{"longerslicename.123", "IPv6", "80,443", "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...", "5m"}},
		{"multiportslice.123", 5 * time.Minute, discoveryv1.AddressTypeIPv4,
			[]discoveryv1.EndpointPort{tcpPort("http", 80), tcpPort("https", 443), tcpPort("extra1", 3000), tcpPort("extra2", 3001)},
			twoEndpoints,
			[]any{"multiportslice.123", "IPv4", "80,443,3000 + 1 more...", "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...", "5m"}},
		{"empty", time.Hour, discoveryv1.AddressTypeIPv4, nil, nil, []any{"empty", "IPv4", "<unset>", "<unset>", "60m"}},
		// A port without a number: its name, "*" without one; defaulting makes the name "",
		// which leaves the cell empty, shown as "<unset>".
		{"named port", 0, discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{{Name: ptr.To("http")}, {}}, nil,
			[]any{"named port", "IPv4", "http,*", "<unset>", "0s"}},
		{"defaulted all-ports port", 0, discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{{Name: ptr.To(""), Protocol: ptr.To(corev1.ProtocolTCP)}}, nil,
			[]any{"defaulted all-ports port", "IPv4", "<unset>", "<unset>", "0s"}},
		{"not-ready endpoints are shown too", 0, discoveryv1.AddressTypeFQDN, nil,
			[]discoveryv1.Endpoint{{Addresses: []string{"a.example.com"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}},
			[]any{"not-ready endpoints are shown too", "FQDN", "<unset>", "a.example.com", "0s"}},
		{"exactly three", 0, discoveryv1.AddressTypeIPv4, []discoveryv1.EndpointPort{tcpPort("a", 1), tcpPort("b", 2), tcpPort("c", 3)},
			[]discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}, {Addresses: []string{"10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}},
			[]any{"exactly three", "IPv4", "1,2,3", "10.0.0.1,10.0.0.2,10.0.0.3", "0s"}},
	}
	list := &discoveryv1.EndpointSliceList{ListMeta: metav1.ListMeta{ResourceVersion: "8"}}
	for _, tc := range tests {
		list.Items = append(list.Items, discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: tc.name, Namespace: "default", CreationTimestamp: metav1.NewTime(tableNow.Add(-tc.age))},
			AddressType: tc.addressType, Ports: tc.ports, Endpoints: tc.endpoints,
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
				t.Errorf("row.Object is not the slice")
			}
		})
	}
}

func TestEndpointSliceTableColumns(t *testing.T) {
	c := newTableConvertor(clocktesting.NewFakePassiveClock(tableNow))
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	tbl, err := c.ConvertToTable(context.Background(), s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, col := range tbl.ColumnDefinitions {
		names = append(names, col.Name)
	}
	if want := []string{"Name", "AddressType", "Ports", "Endpoints", "Age"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns = %v, want %v", names, want)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Object.Object != s {
		t.Errorf("single slice: want one row holding it")
	}
	tbl, err = c.ConvertToTable(context.Background(), s, &metav1.TableOptions{NoHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	if tbl.ColumnDefinitions != nil {
		t.Errorf("NoHeaders: got columns %v", tbl.ColumnDefinitions)
	}
}
