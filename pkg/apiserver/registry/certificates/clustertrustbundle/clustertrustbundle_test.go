package clustertrustbundle

import (
	"crypto/ecdsa"
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
)

func certPEM(t *testing.T, isCA bool) string {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: isCA, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func TestValidate(t *testing.T) {
	ca := certPEM(t, true)
	for _, tc := range []struct {
		name, objName, signer, bundle, want string
	}{
		{"no signer", "mine", "", ca, ""},
		{"signer prefix", "example.com:foo:mine", "example.com/foo", ca, ""},
		{"colon without signer", "a:b", "", ca, `must not have ":" in its name`},
		{"missing prefix", "mine", "example.com/foo", ca, "must be named with prefix example.com:foo:"},
		{"empty bundle", "mine", "", "", "at least one trust anchor must be provided"},
		{"not a CA", "mine", "", certPEM(t, false), "entry 0 does not have the CA bit set"},
		{"duplicate", "mine", "", ca + ca, "duplicate trust anchor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: tc.objName},
				Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: tc.signer, TrustBundle: tc.bundle}}
			errs := Validate(b, true)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
	old := &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:foo:x", ResourceVersion: "1"},
		Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/foo", TrustBundle: ca}}
	upd := old.DeepCopy()
	upd.Spec.SignerName = "example.com/bar"
	if errs := ValidateUpdate(upd, old); !strings.Contains(errs.ToAggregate().Error(), "spec.signerName: Invalid value") {
		t.Errorf("changing the signer: %v", errs)
	}
}
