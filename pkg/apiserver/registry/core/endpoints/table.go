package endpoints

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get endpoints`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Endpoints] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Endpoints", Type: "string", Description: corev1.Endpoints{}.SwaggerDoc()["subsets"]},
		table.AgeColumn(),
	}, func(ep *corev1.Endpoints, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{ep.Name, formatEndpoints(ep), table.Age(ep, now)}}
	})
}

// shownEndpoints is how many endpoints the ENDPOINTS cell lists before "+ N more...".
const shownEndpoints = 3

// formatEndpoints is kubectl's ENDPOINTS cell: the ready addresses, each with every port of its
// subset (ip:port) or alone in a subset without ports (a headless Service's), the first
// three of them and "+ N more...". Endpoints without subsets show "<none>"; subsets with only
// not-ready addresses show nothing at all, as upstream's printer does.
func formatEndpoints(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	var shown []string
	count := 0
	add := func(s string) {
		count++
		if len(shown) < shownEndpoints {
			shown = append(shown, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	s := strings.Join(shown, ",")
	if count > shownEndpoints {
		return fmt.Sprintf("%s + %d more...", s, count-shownEndpoints)
	}
	return s
}
