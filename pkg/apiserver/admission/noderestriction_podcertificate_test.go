package admission

import (
	"context"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// podCertSigners allows nodes to request-serviceaccounts-podcertificate-signer the signers it
// holds (colon-munged, as the plugin asks).
type podCertSigners []string

func (s podCertSigners) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	for _, signer := range s {
		if a.GetVerb() == "request-serviceaccounts-podcertificate-signer" && a.GetResource() == signer {
			return authorizer.DecisionAllow, "", nil
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

func TestNodeRestrictionPodCertificateRequests(t *testing.T) {
	pod := func(name, node string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "robot", Volumes: []corev1.Volume{{
				Name: "certs",
				VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
					PodCertificate: &corev1.PodCertificateProjection{SignerName: "example.com/mounted", KeyType: "ED25519", CredentialBundlePath: "creds.pem"},
				}}}},
			}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "robot", UID: "sa-uid"}}
	mirror := pod("mirror", "mynode", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	})
	other := pod("elsewhere", "othernode", nil)
	mine := pod("mine", "mynode", nil)
	p := newNodeRestriction(t, mkNode("mynode", nil), mkNode("othernode", nil), sa, mine, other, mirror)
	p.authz = podCertSigners{"example.com:granted"}

	pcr := func(mutate func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", GenerateName: "req-"},
			Spec: certificatesv1.PodCertificateRequestSpec{
				SignerName: "example.com/mounted", PodName: "mine", PodUID: "uid-mine",
				ServiceAccountName: "robot", ServiceAccountUID: "sa-uid",
				NodeName: "mynode", NodeUID: "mynode-uid",
			},
		}
		if mutate != nil {
			mutate(&r.Spec)
		}
		return r
	}
	create := func(r *certificatesv1.PodCertificateRequest) attrs {
		return attrs{resource: "podcertificaterequests", namespace: "ns", op: admission.Create, obj: r}
	}

	for _, tc := range []struct {
		name    string
		a       attrs
		wantErr string // "": allowed; "retry": an error that is not forbidden
	}{
		{"for a pod bound to the node that mounts the signer", create(pcr(nil)), ""},
		{"for a signer the node is authorized for", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/granted" })), ""},
		{"for a signer the pod does not mount", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.SignerName = "example.com/other" })), `does not mount a podCertificate projected volume for signer "example.com/other"`},
		{"naming another node", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "othernode" })), "which is not the requesting node"},
		{"with a stale node UID", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "old" })), "retry"},
		{"for a pod of another node", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "elsewhere", "uid-elsewhere" })), "is not running on node"},
		{"for a pod that is gone", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName = "gone" })), "retry"},
		{"with a stale pod UID", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "old" })), "retry"},
		{"for a mirror pod", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "mirror", "uid-mirror" })), "is a mirror pod"},
		{"for another service account", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "default" })), "contains serviceAccountName"},
		{"with a stale service account UID", create(pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" })), "retry"},
		{"an update", attrs{resource: "podcertificaterequests", namespace: "ns", name: "req-1", op: admission.Update, obj: pcr(nil), old: pcr(nil)}, "unexpected operation"},
		{"the status", attrs{resource: "podcertificaterequests", sub: "status", namespace: "ns", name: "req-1", op: admission.Create, obj: pcr(nil)}, "unexpected subresource"},
		{"by a user who is no node", attrs{resource: "podcertificaterequests", namespace: "ns", op: admission.Create, obj: pcr(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "othernode" }), user: anonymous}, ""},
	} {
		if tc.wantErr != "retry" {
			checkAdmission(t, p, tc.name, tc.a, tc.wantErr)
			continue
		}
		err := p.Admit(context.Background(), tc.a.record(), nil)
		if err == nil || apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodCertificateRequest") {
			t.Errorf("%s: got %v, want an error that is not forbidden", tc.name, err)
		}
	}
}
