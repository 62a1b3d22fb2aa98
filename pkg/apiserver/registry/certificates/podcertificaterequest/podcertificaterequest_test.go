package podcertificaterequest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"math/big"
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

// TestValidateIssued: a chain issued to the request's key is accepted, one issued to another
// key is not.
func TestValidateIssued(t *testing.T) {
	_, caKey, _ := ed25519.GenerateKey(rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), IsCA: true, BasicConstraintsValid: true, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour)}
	podKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, podKey)
	if err != nil {
		t.Fatal(err)
	}
	old := validPCR(t)
	old.Spec.StubPKCS10Request = stub
	notBefore := time.Now().Truncate(time.Second).Add(-time.Minute)
	notAfter := notBefore.Add(24 * time.Hour)
	issue := func(pub crypto.PublicKey) *certificatesv1.PodCertificateRequest {
		der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: notBefore, NotAfter: notAfter}, ca, pub, caKey)
		if err != nil {
			t.Fatal(err)
		}
		pcr := old.DeepCopy()
		pcr.Status.Conditions = []metav1.Condition{{Type: "Issued", Status: metav1.ConditionTrue, Reason: "Yes", LastTransitionTime: metav1.Now()}}
		pcr.Status.CertificateChain = string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
		pcr.Status.NotBefore = &metav1.Time{Time: notBefore}
		pcr.Status.BeginRefreshAt = &metav1.Time{Time: notAfter.Add(-time.Hour)}
		pcr.Status.NotAfter = &metav1.Time{Time: notAfter}
		return pcr
	}
	if errs := ValidateStatusUpdate(issue(podKey.Public()), old, time.Now()); len(errs) > 0 {
		t.Errorf("issuing to the request's key: %v", errs)
	}
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if errs := ValidateStatusUpdate(issue(other.Public()), old, time.Now()); !strings.Contains(errs.ToAggregate().Error(), "leaf certificate was not issued to the requested public key") {
		t.Errorf("issuing to another key: %v", errs)
	}
}
