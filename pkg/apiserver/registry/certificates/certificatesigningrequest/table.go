package certificatesigningrequest

import (
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/table"
)

// NewTableConvertor returns the columns of `kubectl get csr`, as upstream's printer.
func NewTableConvertor() rest.TableConvertor { return newTableConvertor(clock.RealClock{}) }

func newTableConvertor(clk clock.PassiveClock) *table.Convertor[*certificatesv1.CertificateSigningRequest] {
	return table.New(clk, []metav1.TableColumnDefinition{
		table.NameColumn(),
		table.AgeColumn(),
		{Name: "SignerName", Type: "string", Description: "Requested signer for the request."},
		{Name: "Requestor", Type: "string", Description: "Name of the user that created the request."},
		{Name: "RequestedDuration", Type: "string", Description: "Requested duration of validity of the issued certificate."},
		{Name: "Condition", Type: "string", Description: "Approval state of the request, then whether it failed and whether a certificate was issued."},
	}, func(csr *certificatesv1.CertificateSigningRequest, now time.Time) metav1.TableRow {
		requested := "<none>"
		if e := csr.Spec.ExpirationSeconds; e != nil {
			requested = duration.HumanDuration(time.Duration(*e) * time.Second)
		}
		return metav1.TableRow{Cells: []any{csr.Name, table.Age(csr, now), table.OrNone(csr.Spec.SignerName), csr.Spec.Username, requested, Condition(csr)}}
	})
}

// Condition is a CSR's CONDITION cell: Denied, Approved or Pending (in that precedence),
// then ",Failed" and ",Issued" when they apply.
func Condition(csr *certificatesv1.CertificateSigningRequest) string {
	var approved, denied, failed bool
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			failed = true
		}
	}
	s := "Pending"
	switch {
	case denied:
		s = "Denied"
	case approved:
		s = "Approved"
	}
	if failed {
		s += ",Failed"
	}
	if len(csr.Status.Certificate) > 0 {
		s += ",Issued"
	}
	return s
}
