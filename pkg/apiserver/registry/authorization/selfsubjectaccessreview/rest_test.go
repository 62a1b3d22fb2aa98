package selfsubjectaccessreview

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// janeReadsPods allows jane to get pods in ns1, and fails on secrets.
var janeReadsPods = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetResource() == "secrets" {
		return authorizer.DecisionNoOpinion, "", errors.New("no secrets today")
	}
	if a.GetUser().GetName() == "jane" && a.GetVerb() == "get" && a.GetResource() == "pods" && a.GetNamespace() == "ns1" && a.GetAPIVersion() == "*" {
		return authorizer.DecisionAllow, "jane reads pods", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func TestCreate(t *testing.T) {
	r := NewREST(janeReadsPods)
	jane := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "jane"})
	ask := func(ctx context.Context, ra *authorizationv1.ResourceAttributes) (*authorizationv1.SelfSubjectAccessReview, error) {
		obj, err := r.Create(ctx, &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, nil, nil)
		if err != nil {
			return nil, err
		}
		return obj.(*authorizationv1.SelfSubjectAccessReview), nil
	}
	got, err := ask(jane, &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "ns1"})
	if err != nil || !got.Status.Allowed || got.Status.Reason != "jane reads pods" {
		t.Errorf("jane getting pods: %+v, %v", got, err)
	}
	got, err = ask(jane, &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "ns2"})
	if err != nil || got.Status.Allowed || got.Status.Denied || got.Status.Reason != "" {
		t.Errorf("jane in ns2: %+v, %v; want not allowed, no reason", got, err)
	}
	got, err = ask(jane, &authorizationv1.ResourceAttributes{Verb: "get", Resource: "secrets", Namespace: "ns1"})
	if err != nil || got.Status.EvaluationError != "no secrets today" {
		t.Errorf("an evaluation error: %+v, %v", got, err)
	}
	// The reviewer is the requesting user, never one named in the body.
	bob := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: "bob"})
	if got, _ := ask(bob, &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "ns1"}); got.Status.Allowed {
		t.Error("bob was answered as jane")
	}
	if _, err := ask(context.Background(), &authorizationv1.ResourceAttributes{Verb: "get"}); !apierrors.IsBadRequest(err) {
		t.Errorf("no user: %v", err)
	}
	if _, err := ask(jane, nil); !apierrors.IsInvalid(err) {
		t.Errorf("no attributes: %v, want 422", err)
	}
}

func TestValidate(t *testing.T) {
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods"}
	nra := &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}
	for _, tc := range []struct {
		name   string
		review authorizationv1.SelfSubjectAccessReview
		want   string
	}{
		{"resource", authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, ""},
		{"path", authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{NonResourceAttributes: nra}}, ""},
		{"both", authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra, NonResourceAttributes: nra}}, "spec"},
		{"neither", authorizationv1.SelfSubjectAccessReview{}, "spec"},
		{"a name", authorizationv1.SelfSubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, "metadata"},
	} {
		errs := Validate(&tc.review)
		got := ""
		if len(errs) > 0 {
			got = errs[0].Field
		}
		if got != tc.want || len(errs) > 1 {
			t.Errorf("%s: %v, want an error on %q", tc.name, errs, tc.want)
		}
	}
}
