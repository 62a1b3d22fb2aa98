package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/controllers"
)

func csrRequest(t *testing.T, subject pkix.Name) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func clientCSR(t *testing.T, name string, subject pkix.Name) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:           csrRequest(t, subject),
			SignerName:        certificatesv1.KubeAPIServerClientSignerName,
			Usages:            []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
			ExpirationSeconds: ptr.To[int32](3600),
			// Whatever the client says, the server records who asked.
			Username: "mallory",
		},
	}
}

// TestCertificateSigningRequests: a user's CSR records the user; the approval subresource
// approves it for a user with approve on the signer and refuses one without; validation
// errors name their fields; system:masters is refused for client certificates; and
// csrsigning, given the cluster CA, issues a certificate that verifies against it with the
// requested usages and duration.
func TestCertificateSigningRequests(t *testing.T) {
	ctx := testContext(t)
	c := sharedCluster(t)
	suffix := strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")) + "-" + time.Now().Format("150405.000000")
	suffix = strings.ReplaceAll(suffix, ".", "")
	userName := "csr-user-" + suffix

	// The user may create and read CSRs and write their approval, but holds no approve on
	// any signer.
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "csr-requester-" + suffix},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval"},
			Verbs: []string{"create", "get", "list", "update"}}},
	}
	if _, err := c.Client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: userName}},
	}
	if _, err := c.Client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Client.RbacV1().ClusterRoleBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
		_ = c.Client.RbacV1().ClusterRoles().Delete(context.Background(), role.Name, metav1.DeleteOptions{})
	})
	user := newRBACUser(t, c, userName, "csr-testers")
	csrs := user.client.CertificatesV1().CertificateSigningRequests()

	var created *certificatesv1.CertificateSigningRequest
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		created, err = csrs.Create(ctx, clientCSR(t, "user-"+suffix, pkix.Name{CommonName: userName}), metav1.CreateOptions{})
		if apierrors.IsForbidden(err) {
			return false, nil // the binding is not in the authorizer's cache yet
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("creating a CSR as %s: %v", userName, err)
	}
	t.Cleanup(func() {
		_ = c.Client.CertificatesV1().CertificateSigningRequests().Delete(context.Background(), created.Name, metav1.DeleteOptions{})
	})
	if created.Spec.Username != userName || !slices.Contains(created.Spec.Groups, "csr-testers") || !slices.Contains(created.Spec.Groups, "system:authenticated") {
		t.Errorf("spec.username %q, groups %v: want the requester's", created.Spec.Username, created.Spec.Groups)
	}

	// The user may not approve: no approve on signers/kubernetes.io/kube-apiserver-client.
	selfApproved := created.DeepCopy()
	selfApproved.Status.Conditions = append(selfApproved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Mine"})
	_, err = csrs.UpdateApproval(ctx, created.Name, selfApproved, metav1.UpdateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `user not permitted to approve requests with signerName "kubernetes.io/kube-apiserver-client"`) {
		t.Errorf("approval by the requester: got %v, want a 403 from CertificateApproval", err)
	}

	// The admin may.
	approved := created.DeepCopy()
	approved.Status.Conditions = append(approved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "AdminApproved", Message: "test"})
	got, err := c.Client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, created.Name, approved, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("approval by the admin: %v", err)
	}
	if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].LastUpdateTime.IsZero() || got.Status.Conditions[0].LastTransitionTime.IsZero() {
		t.Errorf("conditions after approval: %+v", got.Status.Conditions)
	}

	// Selected by signer.
	list, err := c.Client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=" + certificatesv1.KubeAPIServerClientSignerName})
	if err != nil || !slices.ContainsFunc(list.Items, func(x certificatesv1.CertificateSigningRequest) bool { return x.Name == created.Name }) {
		t.Errorf("field selector spec.signerName: %v, %d items", err, len(list.Items))
	}

	// Validation errors name their fields.
	bad := clientCSR(t, "bad-"+suffix, pkix.Name{CommonName: userName})
	bad.Spec.ExpirationSeconds = ptr.To[int32](60)
	bad.Spec.Usages = nil
	bad.Spec.Request = []byte("not a request")
	_, err = csrs.Create(ctx, bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("invalid CSR: got %v, want 422", err)
	} else {
		for _, f := range []string{"spec.expirationSeconds", "spec.usages", "spec.request"} {
			if !strings.Contains(err.Error(), f) {
				t.Errorf("invalid CSR: %v does not name %s", err, f)
			}
		}
	}

	// No client certificates for system:masters.
	_, err = csrs.Create(ctx, clientCSR(t, "masters-"+suffix, pkix.Name{CommonName: userName, Organization: []string{"system:masters"}}), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "system:masters group is not allowed") {
		t.Errorf("system:masters CSR: got %v, want a 403 from CertificateSubjectRestriction", err)
	}

	// csrsigning with the cluster CA signs the approved request.
	pki := cluster.PKIDir(c.DataDir)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- controllers.Run(runCtx, c.Config, controllers.Options{
			Controllers:            []string{"csrsigning"},
			ClusterSigningCertFile: filepath.Join(pki, "ca.crt"),
			ClusterSigningKeyFile:  filepath.Join(pki, "ca.key"),
		})
	}()
	t.Cleanup(func() { stop(); <-done })
	var issued *certificatesv1.CertificateSigningRequest
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		issued, err = c.Client.CertificatesV1().CertificateSigningRequests().Get(ctx, created.Name, metav1.GetOptions{})
		return err == nil && len(issued.Status.Certificate) > 0, err
	})
	if err != nil {
		t.Fatalf("waiting for the certificate: %v", err)
	}
	block, _ := pem.Decode(issued.Status.Certificate)
	if block == nil {
		t.Fatal("status.certificate is not PEM")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the issued certificate does not verify against the cluster CA: %v", err)
	}
	if cert.Subject.CommonName != userName || cert.KeyUsage != x509.KeyUsageDigitalSignature || !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("subject %v, usages %v %v", cert.Subject, cert.KeyUsage, cert.ExtKeyUsage)
	}
	if d := cert.NotAfter.Sub(cert.NotBefore); d != time.Hour+5*time.Minute {
		t.Errorf("valid for %v, want the hour asked plus the 5 min backdating", d)
	}
}
