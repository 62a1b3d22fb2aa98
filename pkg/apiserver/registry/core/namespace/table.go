package namespace

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get namespaces`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Namespace] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Status", Type: "string", Description: "Phase of the namespace: Active or Terminating."},
		table.AgeColumn(),
	}, func(ns *corev1.Namespace, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{ns.Name, string(ns.Status.Phase), table.Age(ns, now)}}
	})
}
