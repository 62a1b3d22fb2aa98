package podcertificaterequest

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validPCR(t *testing.T) *certificatesv1.PodCertificateRequest {
	t.Helper()
	_, key, _ := ed25519.GenerateKey(rand.Reader)
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	pcr := &certificatesv1.PodCertificateRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1"},
		Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/s", PodName: "pod", PodUID: "u1", ServiceAccountName: "default", ServiceAccountUID: "u2",
			NodeName: "n1", NodeUID: "u3", StubPKCS10Request: stub,
		},
	}
	SetDefaults(pcr)
	return pcr
}

func TestValidateCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*certificatesv1.PodCertificateRequest)
		want   string
	}{
		{"valid", func(*certificatesv1.PodCertificateRequest) {}, ""},
		{"no pod uid", func(p *certificatesv1.PodCertificateRequest) { p.Spec.PodUID = "" }, "spec.podUID: Invalid value"},
		{"bad stub", func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = []byte("x") }, "must be a valid PKCS#10 CSR"},
		{"no stub", func(p *certificatesv1.PodCertificateRequest) { p.Spec.StubPKCS10Request = nil }, "spec.stubPKCS10Request: Required value"},
		{"kubernetes signer over a day", func(p *certificatesv1.PodCertificateRequest) {
			p.Spec.SignerName = "kubernetes.io/x"
			p.Spec.MaxExpirationSeconds = ptr.To[int32](2 * 86400)
		}, "must be in the range [3600, 86400]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcr := validPCR(t)
			tc.mutate(pcr)
			errs := ValidateCreate(pcr)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

func TestValidateStatusUpdate(t *testing.T) {
	old := validPCR(t)
	denied := old.DeepCopy()
	denied.Status.Conditions = []metav1.Condition{{Type: "Denied", Status: metav1.ConditionTrue, Reason: "No", LastTransitionTime: metav1.Now()}}
	if errs := ValidateStatusUpdate(denied, old, time.Now()); len(errs) > 0 {
		t.Errorf("denying: %v", errs)
	}
	again := denied.DeepCopy()
	again.Status.Conditions[0].Message = "changed"
	if errs := ValidateStatusUpdate(again, denied, time.Now()); !strings.Contains(errs.ToAggregate().Error(), "immutable after PodCertificateRequest is issued, denied, or failed") {
		t.Errorf("changing a denial: %v", errs)
	}
	issued := old.DeepCopy()
	issued.Status.Conditions = []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Yes", LastTransitionTime: metav1.Now()}}
	if errs := ValidateStatusUpdate(issued, old, time.Now()); !strings.Contains(errs.ToAggregate().Error(), "must contain at least one certificate") {
		t.Errorf("issuing without a chain: %v", errs)
	}
}
