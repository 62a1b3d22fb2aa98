// Package csrapproving is berth's CSR approving controller (kube-controller-manager's
// csrapproving): it approves the client certificate requests of kubelets
// (kubernetes.io/kube-apiserver-client-kubelet, system:node:<name> in system:nodes) whose
// requester may, per a SubjectAccessReview, create certificatesigningrequests/selfnodeclient
// (renewing its own certificate) or certificatesigningrequests/nodeclient (any node's, the
// bootstrap case). Everything else it leaves for people or other approvers.
package csrapproving

import (
	"context"
	"crypto/x509"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/controllers/certificates"
)

// Name is the controller's name in --controllers, logs and metrics.
const Name = "csrapproving"

// NewController returns the approving controller.
func NewController(client kubernetes.Interface, informer certinformers.CertificateSigningRequestInformer) *certificates.Controller {
	a := &approver{client: client}
	return certificates.New(Name, informer, a.handle)
}

type approver struct {
	client kubernetes.Interface
}

// check is one way a CSR may be approved: the permission its requester needs, and the
// approval's message.
type check struct {
	subresource string
	message     string
}

var (
	selfNodeClient = check{"selfnodeclient", "Auto approving self kubelet client certificate after SubjectAccessReview."}
	nodeClient     = check{"nodeclient", "Auto approving kubelet client certificate after SubjectAccessReview."}
)

// checksFor lists, in order, the permissions any one of which approves csr (with its parsed
// request req): none for a CSR already decided or issued, or not a kubelet's client request.
// It does no I/O.
func checksFor(csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) []check {
	if len(csr.Status.Certificate) > 0 {
		return nil
	}
	if approved, denied := certificates.ApprovalState(csr); approved || denied {
		return nil
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName ||
		certificates.ValidateKubeletClientCSR(req, certificates.Usages(csr.Spec.Usages)) != nil {
		return nil
	}
	if csr.Spec.Username == req.Subject.CommonName {
		return []check{selfNodeClient, nodeClient}
	}
	return []check{nodeClient}
}

func (a *approver) handle(ctx context.Context, csr *certificatesv1.CertificateSigningRequest) (time.Duration, error) {
	if len(csr.Status.Certificate) > 0 {
		return 0, nil
	}
	if approved, denied := certificates.ApprovalState(csr); approved || denied {
		return 0, nil
	}
	req, err := certificates.ParseCSR(csr.Spec.Request)
	if err != nil {
		return 0, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}
	checks := checksFor(csr, req)
	var tried []string
	for _, c := range checks {
		tried = append(tried, c.subresource)
		allowed, err := a.authorize(ctx, csr, c.subresource)
		if err != nil {
			return 0, err
		}
		if !allowed {
			continue
		}
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:    certificatesv1.CertificateApproved,
			Status:  corev1.ConditionTrue,
			Reason:  "AutoApproved",
			Message: c.message,
		})
		if _, err := a.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("error updating approval for csr: %w", err)
		}
		klog.FromContext(ctx).V(2).Info("Approved a kubelet's client certificate request", "csr", csr.Name, "requester", csr.Spec.Username, "permission", c.subresource)
		return 0, nil
	}
	if len(tried) > 0 {
		// Retried with back-off: the requester may yet be granted the permission.
		return 0, certificates.Ignorable("recognized csr %q as %v but subject access review was not approved", csr.Name, tried)
	}
	return 0, nil
}

// authorize asks whether the CSR's requester may create certificatesigningrequests/<sub>.
func (a *approver) authorize(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, sub string) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   csr.Spec.Username,
			UID:    csr.Spec.UID,
			Groups: csr.Spec.Groups,
			Extra:  extra,
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Group: "certificates.k8s.io", Version: "*", Resource: "certificatesigningrequests",
				Subresource: sub, Verb: "create",
			},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("reviewing whether %s may create certificatesigningrequests/%s: %w", csr.Spec.Username, sub, err)
	}
	return sar.Status.Allowed, nil
}
