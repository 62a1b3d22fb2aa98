package configmap

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get configmaps`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.ConfigMap] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Data", Type: "string", Description: "Number of keys in data and binaryData."},
		table.AgeColumn(),
	}, func(cm *corev1.ConfigMap, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), table.Age(cm, now)}}
	})
}
