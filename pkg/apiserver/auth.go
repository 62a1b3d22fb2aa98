package apiserver

import (
	"context"
	"net/http"
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
