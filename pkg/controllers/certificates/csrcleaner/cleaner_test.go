package csrcleaner

import (
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	cond := func(typ certificatesv1.RequestConditionType, at metav1.Time) certificatesv1.CertificateSigningRequestCondition {
		return certificatesv1.CertificateSigningRequestCondition{Type: typ, Status: corev1.ConditionTrue, LastUpdateTime: at}
	}
	for _, tc := range []struct {
		name        string
		created     metav1.Time
		conditions  []certificatesv1.CertificateSigningRequestCondition
		issued      bool
		wantDelete  bool
		wantRecheck time.Duration
	}{
		{"pending, new", ago(time.Hour), nil, false, false, 23*time.Hour + time.Second},
		{"pending, a day old", ago(25 * time.Hour), nil, false, true, 0},
		{"denied 30 min ago", ago(2 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(30*time.Minute))}, false, false, 30*time.Minute + time.Second},
		{"denied 2 h ago", ago(3 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, ago(2*time.Hour))}, false, true, 0},
		{"failed 2 h ago", ago(3 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(2*time.Hour)), cond(certificatesv1.CertificateFailed, ago(2*time.Hour))}, false, true, 0},
		{"approved 2 h ago, issued", ago(3 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(2*time.Hour))}, true, true, 0},
		{"approved 2 h ago, not issued", ago(3 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(2*time.Hour))}, false, false, 22*time.Hour + time.Second},
		{"approved 25 h ago, not issued", ago(26 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved, ago(25*time.Hour))}, false, true, 0},
		{"conditions without times are kept", ago(48 * time.Hour), []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateDenied, metav1.Time{})}, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: tc.created}}
			csr.Status.Conditions = tc.conditions
			if tc.issued {
				csr.Status.Certificate = []byte("not parsed")
			}
			d := decide(csr, now)
			if d.delete != tc.wantDelete || d.recheck != tc.wantRecheck {
				t.Errorf("decide = %+v, want delete %v, recheck %v", d, tc.wantDelete, tc.wantRecheck)
			}
		})
	}
}
