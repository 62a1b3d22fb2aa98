package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/klog/v2"
)

// The node API authenticates and authorizes every request as the kubelet does: a client
// certificate of the cluster CA names the user (common name) and groups (organizations),
// and the API server decides, with a SubjectAccessReview, whether that user may use the
// node's subresource the path maps to (requestAttributes).

// newAuthenticator accepts client certificates that chain to the CA in caFile, and nothing
// else: anonymous requests are off, as kubeadm and k3s configure the kubelet. Bearer tokens
// come with a TokenReview client in the same config (TokenAccessReviewClient).
func newAuthenticator(caFile string) (authenticator.Request, error) {
	ca, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca-bundle", caFile)
	if err != nil {
		return nil, fmt.Errorf("node API client CA: %w", err)
	}
	authn, _, err := authenticatorfactory.DelegatingAuthenticatorConfig{
		ClientCertificateCAContentProvider: ca,
	}.New()
	if err != nil {
		return nil, fmt.Errorf("node API authenticator: %w", err)
	}
	return authn, nil
}

// NewDelegatingAuthorizer asks the API server (POST subjectaccessreviews) whether a request
// is allowed, and remembers allowed answers for allowTTL and denied ones for denyTTL (the
// kubelet's webhook cache TTLs are 5 minutes and 30 seconds).
func NewDelegatingAuthorizer(client authorizationclient.AuthorizationV1Interface, allowTTL, denyTTL time.Duration) (authorizer.Authorizer, error) {
	authz, err := authorizerfactory.DelegatingAuthorizerConfig{
		SubjectAccessReviewClient: client,
		AllowCacheTTL:             allowTTL,
		DenyCacheTTL:              denyTTL,
		WebhookRetryBackoff:       genericoptions.DefaultAuthWebhookRetryBackoff(),
	}.New()
	if err != nil {
		return nil, fmt.Errorf("node API authorizer: %w", err)
	}
	return authz, nil
}

// subresourcePath maps the requests under a path to a subresource of the node.
type subresourcePath struct {
	path, subresource string
}

// fineGrainedPaths are tried first, falling back to nodes/proxy (the kubelet's fine-grained
// authorization, GA since 1.36): a user allowed only nodes/pods may list pods, and one
// allowed nodes/proxy keeps every endpoint it had.
var fineGrainedPaths = []subresourcePath{
	{"/allocatedPods", "pods"},
	{"/pods", "pods"},
	{"/healthz", "healthz"},
	{"/configz", "configz"},
	{"/runningpods", "pods"},
}

// subresourcePaths are the endpoints with a subresource of their own; every other path
// (exec, attach, portForward, containerLogs, run, pods, ...) is nodes/proxy.
var subresourcePaths = []subresourcePath{
	{"/stats", "stats"},
	{"/metrics", "metrics"},
	{"/logs", "log"},
	{"/checkpoint", "checkpoint"},
	{"/statusz", "statusz"},
	{"/flagz", "configz"},
}

// isSubpath says whether p is path or below it.
func isSubpath(p, path string) bool {
	return p == path || strings.HasPrefix(p, path+"/")
}

// requestVerb is the API verb of an HTTP method, as the kubelet maps it; other methods
// (HEAD among them) map to no verb, which no rule grants.
func requestVerb(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// requestAttributes are the authorization attributes of a request to the node API, in the
// order they are tried: they differ only in the subresource of nodes/<nodeName>.
func requestAttributes(nodeName string, u user.Info, r *http.Request) []authorizer.Attributes {
	var subresources []string
	for _, p := range fineGrainedPaths {
		if isSubpath(r.URL.Path, p.path) {
			subresources = append(subresources, p.subresource)
			break
		}
	}
	coarse := "proxy"
	for _, p := range subresourcePaths {
		if isSubpath(r.URL.Path, p.path) {
			coarse = p.subresource
			break
		}
	}
	subresources = append(subresources, coarse)
	attrs := make([]authorizer.Attributes, 0, len(subresources))
	for _, sub := range subresources {
		attrs = append(attrs, authorizer.AttributesRecord{
			User:            u,
			Verb:            requestVerb(r.Method),
			APIVersion:      "v1",
			Resource:        "nodes",
			Subresource:     sub,
			Name:            nodeName,
			ResourceRequest: true,
			Path:            r.URL.Path,
		})
	}
	return attrs
}

// withAuth serves a request to next once its user is authenticated (401 otherwise) and
// allowed one of the request's attributes (403 otherwise, in the kubelet's words).
func (h *handler) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logger := klog.FromContext(r.Context())
		resp, ok, err := h.authn.AuthenticateRequest(r)
		if err != nil || !ok {
			logger.V(3).Info("Unauthorized node API request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			writeStatus(w, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		attrs := requestAttributes(h.nodeName, resp.User, r)
		allowed, authzErr := h.authorize(r.Context(), attrs)
		if authzErr != nil {
			a := authzErr.attrs
			logger.Error(authzErr.err, "Authorization error", "user", a.GetUser().GetName(), "verb", a.GetVerb(), "resource", a.GetResource(), "subresource", a.GetSubresource())
			writeText(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
				a.GetUser().GetName(), a.GetVerb(), a.GetResource(), a.GetSubresource()))
			return
		}
		if !allowed {
			subresources := make([]string, 0, len(attrs))
			for _, a := range attrs {
				subresources = append(subresources, a.GetSubresource())
			}
			a := attrs[0]
			logger.V(2).Info("Forbidden", "user", a.GetUser().GetName(), "verb", a.GetVerb(), "resource", a.GetResource(), "subresource(s)", subresources)
			writeText(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
				a.GetUser().GetName(), a.GetVerb(), a.GetResource(), subresources))
			return
		}
		logger.V(4).Info("Node API request", "user", resp.User.GetName(), "path", r.URL.Path)
		next.ServeHTTP(w, r)
	})
}

// authorizationError is an authorizer's failure on one of a request's attributes.
type authorizationError struct {
	attrs authorizer.Attributes
	err   error
}

// authorize asks about each attribute in turn until one is allowed. An authorizer's error
// ends the request, as in the kubelet: the API server could not be asked.
func (h *handler) authorize(ctx context.Context, attrs []authorizer.Attributes) (bool, *authorizationError) {
	for _, a := range attrs {
		decision, _, err := h.authz.Authorize(ctx, a)
		if err != nil {
			return false, &authorizationError{attrs: a, err: err}
		}
		if decision == authorizer.DecisionAllow {
			return true, nil
		}
	}
	return false, nil
}

// writeText answers with a plain-text message, as the kubelet's auth filter does.
func writeText(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, message)
}
