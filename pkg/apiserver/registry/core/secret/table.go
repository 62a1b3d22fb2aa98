package secret

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get secrets`.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.Secret] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		{Name: "Type", Type: "string", Description: "Type of the secret, e.g. Opaque."},
		// stringData is merged into data on write, so data alone is the count.
		{Name: "Data", Type: "string", Description: "Number of keys in data."},
		table.AgeColumn(),
	}, func(s *corev1.Secret, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{s.Name, string(s.Type), int64(len(s.Data)), table.Age(s, now)}}
	})
}
