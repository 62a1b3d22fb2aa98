package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
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

// authorizePublic allows anyone to GET the public paths.
func authorizePublic(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.IsResourceRequest() && a.GetVerb() == "get" && isPublic(a.GetPath()) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeDiscovery allows every authenticated user to read discovery and OpenAPI
// documents, which hold no cluster data; without it a client could not even find out what
// it is not allowed to do.
func authorizeDiscovery(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() || a.GetVerb() != "get" || a.GetUser() == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	for _, g := range a.GetUser().GetGroups() {
		if g == user.AllAuthenticated {
			p := a.GetPath()
			if p == "/api" || p == "/apis" || strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/apis/") || strings.HasPrefix(p, "/openapi/") {
				return authorizer.DecisionAllow, "", nil
			}
		}
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// authorizeSelfSubjectReview lets every authenticated user ask who they are (create
// selfsubjectreviews, which system:basic-user allows), so that `kubectl auth whoami` works.
// It stands in for that role's binding until RBAC exists.
func authorizeSelfSubjectReview(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if !a.IsResourceRequest() || a.GetVerb() != "create" || a.GetAPIGroup() != "authentication.k8s.io" ||
		a.GetResource() != "selfsubjectreviews" || a.GetSubresource() != "" || a.GetUser() == nil {
		return authorizer.DecisionNoOpinion, "", nil
	}
	if slices.Contains(a.GetUser().GetGroups(), user.AllAuthenticated) {
		return authorizer.DecisionAllow, "", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
}

// kubeletAPIAdminSubresources are the node subresources system:kubelet-api-admin may use with
// any verb: the node API's endpoints, as the node agent authorizes them.
var kubeletAPIAdminSubresources = []string{"proxy", "metrics", "stats", "log", "pods", "healthz", "configz"}

// kubeletAPIAdmin allows name what Kubernetes' system:kubelet-api-admin role allows, which
// kube-apiserver's kubelet client is bound to: reading nodes and every call to a node API.
// It stands in for that binding until RBAC exists.
func kubeletAPIAdmin(name string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if a.GetUser() == nil || a.GetUser().GetName() != name || !a.IsResourceRequest() ||
			a.GetAPIGroup() != "" || a.GetResource() != "nodes" {
			return authorizer.DecisionNoOpinion, "", nil
		}
		switch sub := a.GetSubresource(); {
		case sub == "" && slices.Contains([]string{"get", "list", "watch", "proxy"}, a.GetVerb()):
			return authorizer.DecisionAllow, "", nil
		case sub != "" && slices.Contains(kubeletAPIAdminSubresources, sub):
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
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
