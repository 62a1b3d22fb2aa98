package clustertrustbundle

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func mustCA(t *testing.T, cn string) []byte {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, pub, priv)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func pemOf(ders ...[]byte) string {
	var b bytes.Buffer
	for _, d := range ders {
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: d})
	}
	return b.String()
}

func ctb(name, signer, bundle string, labels map[string]string) *certificatesv1.ClusterTrustBundle {
	return &certificatesv1.ClusterTrustBundle{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: bundle},
	}
}

// sorted is the DERs in the order Normalize writes them.
func sorted(ders ...[]byte) [][]byte {
	out := append([][]byte(nil), ders...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if bytes.Compare(out[j], out[i]) < 0 {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestNormalize(t *testing.T) {
	a, b := mustCA(t, "a"), mustCA(t, "b")
	// Headers and text between blocks go; a certificate in two bundles is written once.
	withHeaders := "comment\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Headers: map[string]string{"X": "y"}, Bytes: a}))
	got := Normalize([]*certificatesv1.ClusterTrustBundle{ctb("1", "", withHeaders+pemOf(b), nil), ctb("2", "", pemOf(a), nil)})
	if want := pemOf(sorted(a, b)...); string(got) != want {
		t.Errorf("Normalize:\n%s\nwant\n%s", got, want)
	}
	if got := Normalize(nil); got == nil || len(got) != 0 {
		t.Errorf("Normalize(nil) = %q, want empty", got)
	}
}

// TestTrustAnchors runs the lookups against the API (before Run) and the informer (after).
func TestTrustAnchors(t *testing.T) {
	one, two, three, plain := mustCA(t, "1"), mustCA(t, "2"), mustCA(t, "3"), mustCA(t, "plain")
	client := fake.NewClientset(
		ctb("example.com:s:1", "example.com/s", pemOf(one), map[string]string{"alive": "true"}),
		ctb("example.com:s:2", "example.com/s", pemOf(two, one), map[string]string{"alive": "true"}),
		ctb("example.com:s:3", "example.com/s", pemOf(three), map[string]string{"alive": "false"}),
		ctb("example.com:other:1", "example.com/other", pemOf(plain), map[string]string{"alive": "true"}),
		ctb("plain", "", pemOf(plain), nil),
	)
	m := NewManager(client)
	check := func(t *testing.T) {
		ctx := context.Background()
		for _, tc := range []struct {
			name    string
			got     func() ([]byte, error)
			want    string
			wantErr string
		}{
			{"by name", func() ([]byte, error) { return m.GetTrustAnchorsByName(ctx, "plain", false) }, pemOf(plain), ""},
			{"by a missing name", func() ([]byte, error) { return m.GetTrustAnchorsByName(ctx, "nowhere", false) }, "", "not found"},
			{"by a missing name, optional", func() ([]byte, error) { return m.GetTrustAnchorsByName(ctx, "nowhere", true) }, "", ""},
			{"by signer and labels", func() ([]byte, error) {
				return m.GetTrustAnchorsBySigner(ctx, "example.com/s", &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "true"}}, false)
			}, pemOf(sorted(one, two)...), ""},
			{"by signer, empty selector: all of the signer's", func() ([]byte, error) {
				return m.GetTrustAnchorsBySigner(ctx, "example.com/s", &metav1.LabelSelector{}, false)
			}, pemOf(sorted(one, two, three)...), ""},
			{"by signer, nil selector: none", func() ([]byte, error) { return m.GetTrustAnchorsBySigner(ctx, "example.com/s", nil, false) }, "", "matched zero ClusterTrustBundles"},
			{"by signer, nil selector, optional", func() ([]byte, error) { return m.GetTrustAnchorsBySigner(ctx, "example.com/s", nil, true) }, "", ""},
			{"by signer, no match", func() ([]byte, error) {
				return m.GetTrustAnchorsBySigner(ctx, "example.com/s", &metav1.LabelSelector{MatchLabels: map[string]string{"alive": "unknown"}}, false)
			}, "", "combination of signerName and labelSelector matched zero ClusterTrustBundles"},
		} {
			got, err := tc.got()
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Errorf("%s: %v", tc.name, err)
			case tc.wantErr == "" && string(got) != tc.want:
				t.Errorf("%s:\n%s\nwant\n%s", tc.name, got, tc.want)
			}
		}
	}
	t.Run("from the API", check)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		m.mu.Lock()
		running := m.ctx != nil
		m.mu.Unlock()
		if running || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	t.Run("from the informer", check)
	if m.informer == nil || !m.informer.HasSynced() {
		t.Fatal("the informer did not start")
	}

	// A change reaches the answer.
	if _, err := client.CertificatesV1().ClusterTrustBundles().Update(ctx, ctb("plain", "", pemOf(one), nil), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		got, err := m.GetTrustAnchorsByName(ctx, "plain", false)
		if err == nil && string(got) == pemOf(one) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change did not reach the answer: %q, %v", got, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
