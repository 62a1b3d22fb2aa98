package apiserver

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
)

// publicPaths may be read without credentials, as Kubernetes' system:public-info-viewer role
// allows: health and version, so that probes and load balancers need no certificate.
var publicPaths = []string{"/healthz", "/livez", "/readyz", "/version"}

func isPublic(path string) bool {
	for _, p := range publicPaths {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}

// publicAuthenticator lets a request without credentials through as system:anonymous, but
// only to a public path. Any other request without credentials gets 401.
type publicAuthenticator struct{}

func (publicAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if !isPublic(req.URL.Path) {
		return nil, false, nil
	}
	return &authenticator.Response{User: &user.DefaultInfo{
		Name:   user.Anonymous,
		Groups: []string{user.AllUnauthenticated},
	}}, true, nil
}

// kubeletClientBinding binds the API server's kubelet client (the user of its client
// certificate for node agents) to system:kubelet-api-admin: kube-apiserver reconciles no
// such binding, so berth adds it to the bootstrap policy, as kubeadm and k3s create theirs.
func kubeletClientBinding(name string) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "berth:apiserver-kubelet-client",
			Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
			Annotations: map[string]string{rbacv1.AutoUpdateAnnotationKey: "true"},
		},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:kubelet-api-admin"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}},
	}
}

// certificateUser is the user a client certificate authenticates as: its common name.
func certificateUser(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return "", fmt.Errorf("no certificate in %s", file)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return "", fmt.Errorf("parsing %s: %w", file, err)
	}
	if cert.Subject.CommonName == "" {
		return "", fmt.Errorf("the certificate in %s names no user", file)
	}
	return cert.Subject.CommonName, nil
}
