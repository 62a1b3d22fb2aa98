package csrsigning

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/controllers/certificates"
)

func newCA(t *testing.T, notAfter time.Time) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &CA{Certificate: cert, Key: key}
}

func request(t *testing.T, subject pkix.Name) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func approved() []certificatesv1.CertificateSigningRequestCondition {
	return []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
}

func TestPlanFor(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	caNotAfter := now.Add(10 * 365 * 24 * time.Hour)
	client := pkix.Name{CommonName: "jane", Organization: []string{"dev"}}
	node := pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}
	clientUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	for _, tc := range []struct {
		name       string
		subject    pkix.Name
		signer     string
		usages     []certificatesv1.KeyUsage
		conditions []certificatesv1.CertificateSigningRequestCondition
		issued     bool
		expiration *int32
		caNotAfter time.Time
		want       action
		wantTTL    time.Duration
	}{
		{name: "pending", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, want: skip},
		{name: "denied", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages,
			conditions: []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}, want: skip},
		{name: "already issued", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(), issued: true, want: skip},
		{name: "already failed", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages,
			conditions: append(approved(), certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}), want: skip},
		{name: "another signer", subject: client, signer: "example.com/mine", usages: clientUsages, conditions: approved(), want: skip},
		{name: "client, default duration", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			want: sign, wantTTL: DefaultDuration - backdate},
		{name: "client, an hour: not shortened", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			expiration: ptr.To[int32](3600), want: sign, wantTTL: time.Hour},
		{name: "client, 10 s: raised to 10 min", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			expiration: ptr.To[int32](10), want: sign, wantTTL: minDuration},
		{name: "client, 10 years: capped", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			expiration: ptr.To[int32](10 * 365 * 86400), want: sign, wantTTL: DefaultDuration - backdate},
		{name: "client without client auth", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName,
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature}, conditions: approved(), want: fail},
		{name: "client with server auth", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName,
			usages: append(clientUsages, certificatesv1.UsageServerAuth), conditions: approved(), want: fail},
		{name: "kubelet client", subject: node, signer: certificatesv1.KubeAPIServerClientKubeletSignerName, usages: clientUsages, conditions: approved(),
			want: sign, wantTTL: DefaultDuration - backdate},
		{name: "kubelet client not a node", subject: client, signer: certificatesv1.KubeAPIServerClientKubeletSignerName, usages: clientUsages, conditions: approved(), want: fail},
		{name: "kubelet serving without names", subject: node, signer: certificatesv1.KubeletServingSignerName,
			usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}, conditions: approved(), want: fail},
		{name: "CA expired", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			caNotAfter: now.Add(-time.Minute), want: wait},
		{name: "capped at the CA's expiry", subject: client, signer: certificatesv1.KubeAPIServerClientSignerName, usages: clientUsages, conditions: approved(),
			caNotAfter: now.Add(time.Hour), want: sign, wantTTL: time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := &certificatesv1.CertificateSigningRequest{
				Spec:   certificatesv1.CertificateSigningRequestSpec{Request: request(t, tc.subject), SignerName: tc.signer, Usages: tc.usages, ExpirationSeconds: tc.expiration},
				Status: certificatesv1.CertificateSigningRequestStatus{Conditions: tc.conditions},
			}
			if tc.issued {
				csr.Status.Certificate = []byte("x")
			}
			req, err := certificates.ParseCSR(csr.Spec.Request)
			if err != nil {
				t.Fatal(err)
			}
			ca := caNotAfter
			if !tc.caNotAfter.IsZero() {
				ca = tc.caNotAfter
			}
			p := planFor(csr, req, now, ca, DefaultDuration)
			if p.action != tc.want {
				t.Fatalf("action %v (%s), want %v", p.action, p.message, tc.want)
			}
			if p.action != sign {
				return
			}
			if !p.notBefore.Equal(now.Add(-backdate)) {
				t.Errorf("notBefore %v, want 5 min back", p.notBefore)
			}
			if got := p.notAfter.Sub(now); got != tc.wantTTL {
				t.Errorf("notAfter is now+%v, want +%v", got, tc.wantTTL)
			}
		})
	}
}

// TestSignsApprovedClientCSR: an approved kube-apiserver-client CSR gets, through
// UpdateStatus, a certificate that verifies against the CA for client auth, with the
// requested usages, subject and an hour's duration; a bad one gets a Failed condition.
func TestSignsApprovedClientCSR(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	ca := newCA(t, now.Add(365*24*time.Hour))
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "jane"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           request(t, pkix.Name{CommonName: "jane", Organization: []string{"dev"}}),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](3600),
		},
		Status: certificatesv1.CertificateSigningRequestStatus{Conditions: approved()},
	}
	bad := csr.DeepCopy()
	bad.Name = "bad"
	bad.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageServerAuth}
	client := fake.NewClientset(csr, bad)
	s := &signer{client: client, ca: ca, maxDuration: DefaultDuration, clock: testingclock.NewFakePassiveClock(now)}
	for _, c := range []*certificatesv1.CertificateSigningRequest{csr, bad} {
		if _, err := s.handle(context.Background(), c.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}

	got, err := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "jane", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(got.Status.Certificate)
	if block == nil {
		t.Fatalf("no certificate issued: %+v", got.Status)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.Certificate)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, CurrentTime: now}); err != nil {
		t.Errorf("the certificate does not verify against the CA: %v", err)
	}
	if cert.Subject.CommonName != "jane" || !slices.Equal(cert.Subject.Organization, []string{"dev"}) {
		t.Errorf("subject %v", cert.Subject)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) || cert.IsCA {
		t.Errorf("usages %v %v, CA %v", cert.KeyUsage, cert.ExtKeyUsage, cert.IsCA)
	}
	if !cert.NotBefore.Equal(now.Add(-backdate)) || !cert.NotAfter.Equal(now.Add(time.Hour)) {
		t.Errorf("valid %v to %v, want now-5m to now+1h", cert.NotBefore, cert.NotAfter)
	}

	failed, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "bad", metav1.GetOptions{})
	if !certificates.HasTrueCondition(failed, certificatesv1.CertificateFailed) || len(failed.Status.Certificate) > 0 {
		t.Errorf("bad CSR: %+v", failed.Status)
	}
}

func TestX509Usages(t *testing.T) {
	ku, eku, err := x509Usages([]certificatesv1.KeyUsage{certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth, certificatesv1.UsageSigning, certificatesv1.UsageClientAuth})
	if err != nil || ku != x509.KeyUsageDigitalSignature || !slices.Equal(eku, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("got %v %v %v", ku, eku, err)
	}
	if _, _, err := x509Usages([]certificatesv1.KeyUsage{"flying"}); err == nil {
		t.Error("an unknown usage was accepted")
	}
}
