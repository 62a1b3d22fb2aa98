package priorityclass

import (
	"time"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get priorityclasses`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*schedulingv1.PriorityClass] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Value", Type: "integer", Description: "Priority given to pods of this class."},
		{Name: "Global-Default", Type: "boolean", Description: "Whether pods without a class get this one."},
		table.AgeColumn(),
		{Name: "PreemptionPolicy", Type: "string", Description: "Whether pods of this class may preempt others."},
	}, func(pc *schedulingv1.PriorityClass, now time.Time) metav1.TableRow {
		policy := ""
		if pc.PreemptionPolicy != nil {
			policy = string(*pc.PreemptionPolicy)
		}
		return metav1.TableRow{Cells: []any{pc.Name, int64(pc.Value), pc.GlobalDefault, table.Age(pc, now), policy}}
	})
}
