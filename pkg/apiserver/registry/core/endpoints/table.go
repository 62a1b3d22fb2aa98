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
		return metav1.TableRow{Cells: []any{ep.Name, Format(ep), table.Age(ep, now)}}
	})
}

// Format is kubectl's ENDPOINTS cell: the first three ready ip:port pairs (ips alone for
// subsets without ports), then "+ N more...", or "<none>".
func Format(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, a.IP)
				}
			}
			continue
		}
		for _, p := range ss.Ports {
			count += len(ss.Addresses)
			for _, a := range ss.Addresses {
				if len(list) < max {
					list = append(list, net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
				}
			}
		}
	}
	ret := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	if ret == "" {
		return "<none>" // only not-ready addresses
	}
	return ret
}
