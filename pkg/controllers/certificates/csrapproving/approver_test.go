package csrapproving

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/berth-cluster/berth/pkg/controllers/certificates"
)

func nodeCSR(t *testing.T, requester, cn string, signer string, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "n"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: signer, Usages: usages, Username: requester},
	}
}

var clientUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

func TestChecksFor(t *testing.T) {
	kubelet := certificatesv1.KubeAPIServerClientKubeletSignerName
	for _, tc := range []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		want []string
	}{
		{"own renewal", nodeCSR(t, "system:node:a", "system:node:a", kubelet, clientUsages...), []string{"selfnodeclient", "nodeclient"}},
		{"bootstrap", nodeCSR(t, "system:bootstrap:abc", "system:node:a", kubelet, clientUsages...), []string{"nodeclient"}},
		{"another signer", nodeCSR(t, "system:node:a", "system:node:a", certificatesv1.KubeAPIServerClientSignerName, clientUsages...), nil},
		{"serving usages", nodeCSR(t, "system:node:a", "system:node:a", kubelet, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth), nil},
		{"not a node name", nodeCSR(t, "jane", "jane", kubelet, clientUsages...), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := certificates.ParseCSR(tc.csr.Spec.Request)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range checksFor(tc.csr, req) {
				got = append(got, c.subresource)
			}
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Errorf("checks %v, want %v", got, tc.want)
			}
		})
	}
	decided := nodeCSR(t, "system:node:a", "system:node:a", kubelet, clientUsages...)
	decided.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue}}
	req, _ := certificates.ParseCSR(decided.Spec.Request)
	if c := checksFor(decided, req); len(c) != 0 {
		t.Errorf("a denied CSR gets checks %v", c)
	}
}

// TestApprovesPerReview: the review allowing selfnodeclient approves through the approval
// subresource; a review allowing nothing leaves the CSR pending with an ignorable error.
func TestApprovesPerReview(t *testing.T) {
	for _, allow := range []bool{true, false} {
		csr := nodeCSR(t, "system:node:a", "system:node:a", certificatesv1.KubeAPIServerClientKubeletSignerName, clientUsages...)
		client := fake.NewClientset(csr)
		var reviewed []string
		client.PrependReactor("create", "subjectaccessreviews", func(action clienttesting.Action) (bool, runtime.Object, error) {
			sar := action.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
			reviewed = append(reviewed, sar.Spec.User+" "+sar.Spec.ResourceAttributes.Subresource)
			sar.Status.Allowed = allow
			return true, sar, nil
		})
		a := &approver{client: client}
		_, err := a.handle(context.Background(), csr.DeepCopy())
		got, _ := client.CertificatesV1().CertificateSigningRequests().Get(context.Background(), "n", metav1.GetOptions{})
		if allow {
			if err != nil || !certificates.Approved(got) || len(reviewed) != 1 || reviewed[0] != "system:node:a selfnodeclient" {
				t.Errorf("allowed: err %v, reviews %v, status %+v", err, reviewed, got.Status)
			}
			continue
		}
		var ignorable *certificates.IgnorableError
		if !errors.As(err, &ignorable) || certificates.Approved(got) || len(reviewed) != 2 {
			t.Errorf("refused: err %v, reviews %v, status %+v", err, reviewed, got.Status)
		}
	}
}
