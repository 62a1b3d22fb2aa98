package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// signerAuthz allows verb on the signers named in allowed ("kubernetes.io/*" included).
type signerAuthz map[string]bool

func (s signerAuthz) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "signers" && s[a.GetVerb()+" "+a.GetName()] {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func csrAttributes(csr, old *certificatesv1.CertificateSigningRequest, sub string, op admission.Operation) admission.Attributes {
	// A nil *CSR in the old object's interface would not be nil: leave it out instead.
	record := admission.NewAttributesRecord(csr, nil, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", csr.Name,
		certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), sub, op, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "jane"})
	if old != nil {
		record = admission.NewAttributesRecord(csr, old, certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), "", csr.Name,
			certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), sub, op, &metav1.UpdateOptions{}, false, &user.DefaultInfo{Name: "jane"})
	}
	return record
}

func TestCertificateApprovalAndSigning(t *testing.T) {
	old := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: "example.com/s"}}
	approved := old.DeepCopy()
	approved.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
	issued := old.DeepCopy()
	issued.Status.Certificate = []byte("x")
	for _, tc := range []struct {
		name  string
		check func(admission.Attributes) (string, string, error)
		attrs admission.Attributes
		authz signerAuthz
		want  string
	}{
		{"approve without permission", checkApproval, csrAttributes(approved, old, "approval", admission.Update), signerAuthz{}, `user not permitted to approve requests with signerName "example.com/s"`},
		{"approve on the signer", checkApproval, csrAttributes(approved, old, "approval", admission.Update), signerAuthz{"approve example.com/s": true}, ""},
		{"approve on the domain", checkApproval, csrAttributes(approved, old, "approval", admission.Update), signerAuthz{"approve example.com/*": true}, ""},
		{"sign without permission", checkSigning, csrAttributes(issued, old, "status", admission.Update), signerAuthz{"approve example.com/s": true}, `user not permitted to sign requests with signerName "example.com/s"`},
		{"sign on the signer", checkSigning, csrAttributes(issued, old, "status", admission.Update), signerAuthz{"sign example.com/s": true}, ""},
		{"status unchanged needs nothing", checkSigning, csrAttributes(old, old, "status", admission.Update), signerAuthz{}, ""},
		{"main resource needs nothing", checkApproval, csrAttributes(approved, old, "", admission.Update), signerAuthz{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &signerVerb{Handler: admission.NewHandler(admission.Update), name: "test", check: tc.check}
			p.SetUnconditionalAuthorizer(tc.authz)
			err := p.Validate(context.Background(), tc.attrs, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCertificateSubjectRestriction(t *testing.T) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "x", Organization: []string{"system:masters"}}}, key)
	req := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	p := &subjectRestriction{Handler: admission.NewHandler(admission.Create)}
	for signer, refused := range map[string]bool{certificatesv1.KubeAPIServerClientSignerName: true, "example.com/s": false} {
		csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: req}}
		err := p.Validate(context.Background(), csrAttributes(csr, nil, "", admission.Create), nil)
		if (err != nil) != refused {
			t.Errorf("%s: got %v, refused %v", signer, err, refused)
		}
	}
}
