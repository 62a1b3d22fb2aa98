package certificatesigningrequest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/utils/ptr"
)

func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "jane"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certPEM(t *testing.T) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func newCSR(t *testing.T) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "c", ResourceVersion: "1"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    csrPEM(t),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
}

func cond(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue}
}

func TestValidateCreate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*certificatesv1.CertificateSigningRequest)
		want   string
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, ""},
		{"garbage request", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("nope") }, "spec.request: Invalid value"},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, "spec.usages: Required value"},
		{"unknown usage", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = []certificatesv1.KeyUsage{"flying"} }, `spec.usages[0]: Unsupported value: "flying"`},
		{"duplicate usage", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageClientAuth}
		}, "spec.usages[1]: Duplicate value"},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, "spec.signerName: Required value"},
		{"bad signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/x" }, "should be a domain with at least two segments"},
		{"legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" }, "the legacy signerName is not allowed via this API version"},
		{"short expiration", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr.To[int32](599) }, "spec.expirationSeconds: Invalid value: 599"},
		{"approved and denied", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved), cond(certificatesv1.CertificateDenied)}
		}, "Approved and Denied conditions are mutually exclusive"},
		{"false approval", func(c *certificatesv1.CertificateSigningRequest) {
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionFalse}}
		}, `status.conditions[0].status: Unsupported value: "False"`},
		{"bad certificate", func(c *certificatesv1.CertificateSigningRequest) { c.Status.Certificate = []byte("junk") }, "status.certificate: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			csr := newCSR(t)
			tc.mutate(csr)
			errs := ValidateCreate(csr)
			switch {
			case tc.want == "" && len(errs) > 0:
				t.Errorf("want valid, got %v", errs)
			case tc.want != "" && !strings.Contains(errs.ToAggregate().Error(), tc.want):
				t.Errorf("got %v, want %q", errs, tc.want)
			}
		})
	}
}

// TestStrategies: create records the requester and clears status; the main endpoint keeps
// spec and status; status keeps the approval; approval keeps the certificate; updates may
// not remove conditions nor set the certificate twice.
func TestStrategies(t *testing.T) {
	ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "jane", UID: "u1", Groups: []string{"dev"}, Extra: map[string][]string{"k": {"v"}}})
	csr := newCSR(t)
	csr.Spec.Username = "mallory"
	csr.Status.Certificate = []byte("x")
	Strategy.PrepareForCreate(ctx, csr)
	if csr.Spec.Username != "jane" || csr.Spec.UID != "u1" || csr.Spec.Groups[0] != "dev" || csr.Spec.Extra["k"][0] != "v" || len(csr.Status.Certificate) > 0 {
		t.Fatalf("after create: spec %+v, status %+v", csr.Spec, csr.Status)
	}
	if errs := Strategy.Validate(ctx, csr); len(errs) > 0 {
		t.Fatal(errs)
	}

	// Approval: only conditions change, times are stamped.
	upd := csr.DeepCopy()
	upd.Status.Conditions = append(upd.Status.Conditions, cond(certificatesv1.CertificateApproved))
	upd.Status.Certificate = certPEM(t)
	upd.Spec.Username = "mallory"
	ApprovalStrategy.PrepareForUpdate(ctx, upd, csr)
	if errs := ApprovalStrategy.ValidateUpdate(ctx, upd, csr); len(errs) > 0 {
		t.Fatal(errs)
	}
	if upd.Spec.Username != "jane" || len(upd.Status.Certificate) > 0 || len(upd.Status.Conditions) != 1 ||
		upd.Status.Conditions[0].LastUpdateTime.IsZero() || upd.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Fatalf("after approval: %+v", upd)
	}
	approved := upd

	// Status: the certificate is set, an Approved condition sent changed is put back.
	st := approved.DeepCopy()
	st.Status.Certificate = certPEM(t)
	st.Status.Conditions[0].Message = "changed"
	StatusStrategy.PrepareForUpdate(ctx, st, approved)
	if errs := StatusStrategy.ValidateUpdate(ctx, st, approved); len(errs) > 0 {
		t.Fatal(errs)
	}
	if st.Status.Conditions[0].Message != "" || len(st.Status.Certificate) == 0 {
		t.Fatalf("after status: %+v", st.Status)
	}

	// Status may not add an approval, nor replace a certificate.
	pending := csr.DeepCopy()
	bad := pending.DeepCopy()
	bad.Status.Conditions = append(bad.Status.Conditions, cond(certificatesv1.CertificateApproved))
	StatusStrategy.PrepareForUpdate(ctx, bad, pending)
	if errs := StatusStrategy.ValidateUpdate(ctx, bad, pending); !strings.Contains(errs.ToAggregate().Error(), `updates may not add a condition of type "Approved"`) {
		t.Errorf("status adding Approved: %v", errs)
	}
	again := st.DeepCopy()
	again.Status.Certificate = certPEM(t)
	if errs := StatusStrategy.ValidateUpdate(ctx, again, st); !strings.Contains(errs.ToAggregate().Error(), "updates may not modify existing certificate content") {
		t.Errorf("replacing the certificate: %v", errs)
	}
	// Approval may not remove the approval.
	removed := approved.DeepCopy()
	removed.Status.Conditions = nil
	ApprovalStrategy.PrepareForUpdate(ctx, removed, approved)
	if errs := ApprovalStrategy.ValidateUpdate(ctx, removed, approved); !strings.Contains(errs.ToAggregate().Error(), `updates may not remove a condition of type "Approved"`) {
		t.Errorf("removing Approved: %v", errs)
	}
	// The main endpoint keeps spec and status.
	main := approved.DeepCopy()
	main.Labels = map[string]string{"a": "b"}
	main.Status.Conditions = nil
	Strategy.PrepareForUpdate(ctx, main, approved)
	if len(main.Status.Conditions) != 1 || main.Labels["a"] != "b" {
		t.Errorf("main update: %+v", main)
	}
}

func TestStampConditionsKeepsTransition(t *testing.T) {
	then := metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	old := &certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
		{Type: "Custom", Status: corev1.ConditionTrue, LastTransitionTime: then},
	}}}
	csr := old.DeepCopy()
	csr.Status.Conditions[0].LastTransitionTime = metav1.Time{}
	now := time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)
	stampConditions(csr, old, now)
	if c := csr.Status.Conditions[0]; !c.LastTransitionTime.Equal(&then) || !c.LastUpdateTime.Time.Equal(now) {
		t.Errorf("got %+v", c)
	}
}

func TestTable(t *testing.T) {
	now := time.Now()
	csr := newCSR(t)
	csr.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
	csr.Spec.Username = "jane"
	csr.Spec.ExpirationSeconds = ptr.To[int32](3600)
	csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{cond(certificatesv1.CertificateApproved)}
	csr.Status.Certificate = []byte("x")
	tbl, err := newTableConvertor(fakeClock{now}).ConvertToTable(context.Background(), csr, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got := strings.Join(names, " "); got != "Name Age SignerName Requestor RequestedDuration Condition" {
		t.Errorf("columns %s", got)
	}
	want := []any{"c", "60m", certificatesv1.KubeAPIServerClientSignerName, "jane", "60m", "Approved,Issued"}
	for i, w := range want {
		if tbl.Rows[0].Cells[i] != w {
			t.Errorf("cell %d = %v, want %v", i, tbl.Rows[0].Cells[i], w)
		}
	}
	if got := Condition(&certificatesv1.CertificateSigningRequest{Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
		cond(certificatesv1.CertificateDenied), cond(certificatesv1.CertificateFailed)}}}); got != "Denied,Failed" {
		t.Errorf("Condition = %s", got)
	}
}

func TestFields(t *testing.T) {
	csr := newCSR(t)
	if f := Fields(csr); f["spec.signerName"] != certificatesv1.KubeAPIServerClientSignerName || f["metadata.name"] != "c" {
		t.Errorf("fields %v", f)
	}
}

type fakeClock struct{ t time.Time }

func (f fakeClock) Now() time.Time                  { return f.t }
func (f fakeClock) Since(t time.Time) time.Duration { return f.t.Sub(t) }
