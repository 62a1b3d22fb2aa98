package admission

import (
	"context"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// admitPodCertificateRequest lets a node create a PodCertificateRequest only for a pod bound
// to it, as upstream's plugin does: the request names the node (by name and UID), a pod that
// is bound to it and is no mirror pod (by name and UID), and the pod's service account (by
// name and UID); and the pod mounts a podCertificate source of the signer, or the node is
// authorized to request-serviceaccounts-podcertificate-signer it. A UID that does not match
// may be the lag of an informer, so it is a plain error that a retry may get past; the rest
// is forbidden.
func (p *nodeRestriction) admitPodCertificateRequest(ctx context.Context, nodeName string, a admission.Attributes) error {
	if a.GetOperation() != admission.Create {
		return admission.NewForbidden(a, fmt.Errorf("unexpected operation %v", a.GetOperation()))
	}
	if a.GetSubresource() != "" {
		return admission.NewForbidden(a, fmt.Errorf("unexpected subresource %v", a.GetSubresource()))
	}
	req, ok := a.GetObject().(*certificatesv1.PodCertificateRequest)
	if !ok {
		return admission.NewForbidden(a, fmt.Errorf("unexpected type %T", a.GetObject()))
	}
	namespace := a.GetNamespace()
	podRef := namespace + "/" + req.Spec.PodName

	if string(req.Spec.NodeName) != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("PodCertificateRequest.Spec.NodeName=%q, which is not the requesting node %q", req.Spec.NodeName, nodeName))
	}
	node, err := p.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", nodeName, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving node %q named in the PodCertificateRequest: %w", nodeName, err))
	}
	if node.UID != req.Spec.NodeUID {
		return fmt.Errorf("PodCertificateRequest for pod %q names node UID %q, inconsistent with the running node (%q)", podRef, req.Spec.NodeUID, node.UID)
	}

	pod, err := p.pods.Pods(namespace).Get(req.Spec.PodName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", podRef, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving pod %q named in the PodCertificateRequest: %w", podRef, err))
	}
	if pod.UID != req.Spec.PodUID {
		return fmt.Errorf("PodCertificateRequest for pod %q contains pod UID (%q) which differs from running pod %q", podRef, req.Spec.PodUID, pod.UID)
	}
	if pod.Spec.NodeName != nodeName {
		return admission.NewForbidden(a, fmt.Errorf("pod %q is not running on node %q named in the PodCertificateRequest", podRef, nodeName))
	}
	if _, mirror := pod.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return admission.NewForbidden(a, fmt.Errorf("pod %q is a mirror pod", podRef))
	}

	if req.Spec.ServiceAccountName != pod.Spec.ServiceAccountName {
		return admission.NewForbidden(a, fmt.Errorf("PodCertificateRequest for pod %q contains serviceAccountName (%q) that differs from running pod (%q)", podRef, req.Spec.ServiceAccountName, pod.Spec.ServiceAccountName))
	}
	saRef := namespace + "/" + req.Spec.ServiceAccountName
	sa, err := p.serviceAccounts.ServiceAccounts(namespace).Get(req.Spec.ServiceAccountName)
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", saRef, err)
	}
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("while retrieving service account %q named in the PodCertificateRequest: %w", saRef, err))
	}
	if sa.UID != req.Spec.ServiceAccountUID {
		return fmt.Errorf("PodCertificateRequest for pod %q names service account UID %q, which differs from the running service account (%q)", podRef, req.Spec.ServiceAccountUID, sa.UID)
	}

	if err := p.checkPodCertificateSigner(ctx, pod, req, a); err != nil {
		return admission.NewForbidden(a, err)
	}
	return nil
}

// checkPodCertificateSigner: the pod mounts a podCertificate source of the request's signer,
// or the node may request-serviceaccounts-podcertificate-signer it (the signer name with its
// slashes as colons, as in ClusterTrustBundle names, since RBAC names cannot hold a slash).
func (p *nodeRestriction) checkPodCertificateSigner(ctx context.Context, pod *corev1.Pod, req *certificatesv1.PodCertificateRequest, a admission.Attributes) error {
	for i := range pod.Spec.Volumes {
		if v := pod.Spec.Volumes[i].Projected; v != nil {
			for _, s := range v.Sources {
				if s.PodCertificate != nil && s.PodCertificate.SignerName == req.Spec.SignerName {
					return nil
				}
			}
		}
	}
	attrs := authorizer.AttributesRecord{
		User:            a.GetUserInfo(),
		Verb:            "request-serviceaccounts-podcertificate-signer",
		APIGroup:        a.GetResource().Group,
		APIVersion:      a.GetResource().Version,
		Resource:        strings.ReplaceAll(req.Spec.SignerName, "/", ":"),
		Namespace:       a.GetNamespace(),
		Name:            req.Spec.ServiceAccountName,
		ResourceRequest: true,
	}
	decision, _, err := p.authz.Authorize(ctx, attrs)
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return fmt.Errorf("error authorizing %s to request podcertificaterequests for signer %q: %w", a.GetUserInfo().GetName(), req.Spec.SignerName, err)
	}
	return fmt.Errorf("pod %q does not mount a podCertificate projected volume for signer %q", a.GetNamespace()+"/"+req.Spec.PodName, req.Spec.SignerName)
}
