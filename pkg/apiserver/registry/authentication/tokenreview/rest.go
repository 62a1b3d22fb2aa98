// Package tokenreview is the registry of token reviews (authentication.k8s.io/v1): "who is
// this bearer token?", asked by a component that takes tokens from its own clients (a node
// agent's API, a webhook, an aggregated server).
//
// In the API server's flow (decode → default → validate → admit → store) a review is decoded,
// validated and admitted, but never stored: the API server authenticates the token as it
// would a request's, for the review's audiences, and returns the review with the answer.
package tokenreview

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/klog/v2"
)

// REST answers token reviews with the API server's token authenticators; it stores nothing.
type REST struct {
	tokens       authenticator.Request
	apiAudiences []string
}

// NewREST returns the tokenreviews resource: tokens authenticates a request carrying only the
// token (as a bearer token); apiAudiences are the audiences of a review that names none.
func NewREST(tokens authenticator.Request, apiAudiences []string) *REST {
	return &REST{tokens: tokens, apiAudiences: apiAudiences}
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authenticationv1.TokenReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "tokenreview" }

// errAudiences is what a review gets when the authenticator answered for other audiences
// than it was asked about: a bug, not the token's fault.
var errAudiences = apierrors.NewInternalError(errors.New("error validating audiences"))

// Create authenticates the review's token and fills in its status.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authenticationv1.TokenReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a TokenReview: %#v", obj))
	}
	if ns := genericapirequest.NamespaceValue(ctx); ns != "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is not allowed on this type: %v", ns))
	}
	if review.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}

	if r.tokens == nil {
		return review, nil // no authenticator of tokens: no token is anyone
	}
	req := (&http.Request{Header: http.Header{}}).WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+review.Spec.Token)
	auds := review.Spec.Audiences
	if len(auds) == 0 {
		auds = r.apiAudiences
	}
	if len(auds) > 0 {
		req = req.WithContext(authenticator.WithAudiences(req.Context(), auds))
	}
	resp, ok, err := r.tokens.AuthenticateRequest(req)
	review.Status.Authenticated = ok
	if err != nil {
		review.Status.Error = err.Error()
	}
	if len(auds) > 0 && resp != nil && len(authenticator.Audiences(auds).Intersect(resp.Audiences)) == 0 {
		klog.FromContext(ctx).Error(nil, "Error validating audience", "want", auds, "got", resp.Audiences)
		return nil, errAudiences
	}
	if resp != nil && resp.User != nil {
		review.Status.User = UserInfo(resp.User.GetName(), resp.User.GetUID(), resp.User.GetGroups(), resp.User.GetExtra())
		review.Status.Audiences = resp.Audiences
	}
	return review, nil
}

// UserInfo is a user as authentication.k8s.io/v1 writes it (extra always present).
func UserInfo(name, uid string, groups []string, extra map[string][]string) authenticationv1.UserInfo {
	u := authenticationv1.UserInfo{Username: name, UID: uid, Groups: groups, Extra: make(map[string]authenticationv1.ExtraValue, len(extra))}
	for k, v := range extra {
		u.Extra[k] = authenticationv1.ExtraValue(v)
	}
	return u
}
