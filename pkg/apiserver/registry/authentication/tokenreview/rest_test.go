package tokenreview

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// fakeTokens knows one token, for the audiences it was asked about.
type fakeTokens struct{ answerAuds []string }

func (f fakeTokens) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.Header.Get("Authorization") != "Bearer good" {
		return nil, false, errors.New("invalid bearer token")
	}
	auds, _ := authenticator.AudiencesFrom(req.Context())
	if f.answerAuds != nil {
		auds = f.answerAuds
	}
	return &authenticator.Response{Audiences: auds, User: &user.DefaultInfo{Name: "robot", UID: "u", Groups: []string{"g"},
		Extra: map[string][]string{"k": {"v"}}}}, true, nil
}

func TestTokenReview(t *testing.T) {
	r := NewREST(fakeTokens{}, []string{"api"})
	create := func(ctx context.Context, spec authenticationv1.TokenReviewSpec) (*authenticationv1.TokenReview, error) {
		obj, err := r.Create(ctx, &authenticationv1.TokenReview{Spec: spec}, nil, nil)
		if err != nil {
			return nil, err
		}
		return obj.(*authenticationv1.TokenReview), nil
	}
	ctx := context.Background()

	got, err := create(ctx, authenticationv1.TokenReviewSpec{Token: "good"})
	if err != nil {
		t.Fatal(err)
	}
	want := authenticationv1.TokenReviewStatus{Authenticated: true, Audiences: []string{"api"}, User: authenticationv1.UserInfo{
		Username: "robot", UID: "u", Groups: []string{"g"}, Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}}}
	if !reflect.DeepEqual(got.Status, want) {
		t.Errorf("status %+v, want %+v", got.Status, want)
	}
	if got, err := create(ctx, authenticationv1.TokenReviewSpec{Token: "good", Audiences: []string{"vault"}}); err != nil || !reflect.DeepEqual(got.Status.Audiences, []string{"vault"}) {
		t.Errorf("for vault: %+v, %v", got, err)
	}
	if got, err := create(ctx, authenticationv1.TokenReviewSpec{Token: "bad"}); err != nil || got.Status.Authenticated || got.Status.Error != "invalid bearer token" {
		t.Errorf("a bad token: %+v, %v", got, err)
	}

	if _, err := create(ctx, authenticationv1.TokenReviewSpec{}); !apierrors.IsBadRequest(err) || err.Error() != "token is required for TokenReview in authentication" {
		t.Errorf("no token: %v", err)
	}
	if _, err := create(genericapirequest.WithNamespace(ctx, "ns"), authenticationv1.TokenReviewSpec{Token: "good"}); !apierrors.IsBadRequest(err) || err.Error() != "namespace is not allowed on this type: ns" {
		t.Errorf("in a namespace: %v", err)
	}
	other := NewREST(fakeTokens{answerAuds: []string{"elsewhere"}}, []string{"api"})
	if _, err := other.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: "good"}}, nil, nil); !apierrors.IsInternalError(err) {
		t.Errorf("an answer for other audiences: %v, want an internal error", err)
	}
}
