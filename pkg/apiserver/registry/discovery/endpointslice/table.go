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

// shown is how many ports or addresses a cell lists before "+ N more...".
const shown = 3

// formatPorts is kubectl's PORTS cell: each port's number, or else its name (defaulting makes
// that "" at least), or else "*".
func formatPorts(ports []discoveryv1.EndpointPort) string {
	list := make([]string, 0, min(len(ports), shown))
	for _, p := range ports[:min(len(ports), shown)] {
		switch {
		case p.Port != nil:
			list = append(list, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			list = append(list, *p.Name)
		default:
			list = append(list, "*")
		}
	}
	return withMore(list, len(ports))
}

// formatEndpoints is kubectl's ENDPOINTS cell: the addresses of all endpoints, ready or not.
func formatEndpoints(eps []discoveryv1.Endpoint) string {
	var list []string
	count := 0
	for _, ep := range eps {
		for _, a := range ep.Addresses {
			if len(list) < shown {
				list = append(list, a)
			}
			count++
		}
	}
	return withMore(list, count)
}

// withMore joins the listed items of count, says how many more there are, and shows an
// empty cell as "<unset>".
func withMore(list []string, count int) string {
	s := strings.Join(list, ",")
	switch {
	case count > len(list):
		return fmt.Sprintf("%s + %d more...", s, count-len(list))
	case s == "":
		return "<unset>"
	}
	return s
}
