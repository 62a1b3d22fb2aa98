package endpointslice

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get endpointslices`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*discoveryv1.EndpointSlice] {
	doc := discoveryv1.EndpointSlice{}.SwaggerDoc()
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "AddressType", Type: "string", Description: doc["addressType"]},
		{Name: "Ports", Type: "string", Description: doc["ports"]},
		{Name: "Endpoints", Type: "string", Description: doc["endpoints"]},
		table.AgeColumn(),
	}, func(s *discoveryv1.EndpointSlice, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{s.Name, string(s.AddressType), formatPorts(s.Ports), formatEndpoints(s.Endpoints), table.Age(s, now)}}
	})
}

// formatPorts is kubectl's PORTS cell: the first three port numbers ("*" for none, or the
// name), then "+ N more...", or "<unset>".
func formatPorts(ports []discoveryv1.EndpointPort) string {
	var list []string
	for _, p := range ports {
		n := "*"
		switch {
		case p.Port != nil:
			n = strconv.Itoa(int(*p.Port))
		case p.Name != nil:
			n = *p.Name
		}
		list = append(list, n)
	}
	return withMore(list)
}

// formatEndpoints is kubectl's ENDPOINTS cell: the first three addresses.
func formatEndpoints(eps []discoveryv1.Endpoint) string {
	var list []string
	for _, ep := range eps {
		list = append(list, ep.Addresses...)
	}
	return withMore(list)
}

func withMore(list []string) string {
	const max = 3
	if len(list) > max {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:max], ","), len(list)-max)
	}
	if len(list) == 0 {
		return "<unset>"
	}
	return strings.Join(list, ",")
}
