package serviceaccount

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get serviceaccounts`.
// Kubernetes v1.37 prints no SECRETS column any more: tokens are no longer
// stored as secrets listed on the account.
func NewTableConvertor() rest.TableConvertor {
	return newTableConvertor(clock.RealClock{})
}

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*corev1.ServiceAccount] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		table.AgeColumn(),
	}, func(sa *corev1.ServiceAccount, now time.Time) metav1.TableRow {
		return metav1.TableRow{Cells: []any{sa.Name, table.Age(sa, now)}}
	})
}
