package localsubjectaccessreview

import (
	"context"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

var janeInNS1 = authorizer.AuthorizerFunc(func(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.GetUser().GetName() == "jane" && a.GetNamespace() == "ns1" {
		return authorizer.DecisionAllow, "yes", nil
	}
	return authorizer.DecisionNoOpinion, "", nil
})

func review(ns, attrNS string) *authorizationv1.LocalSubjectAccessReview {
	return &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: attrNS, Verb: "list", Resource: "pods"}},
	}
}

func TestCreate(t *testing.T) {
	r := NewREST(janeInNS1)
	if !r.NamespaceScoped() {
		t.Error("local reviews are namespaced")
	}
	ctx := genericapirequest.WithNamespace(context.Background(), "ns1")
	obj, err := r.Create(ctx, review("ns1", "ns1"), nil, nil)
	if err != nil || !obj.(*authorizationv1.LocalSubjectAccessReview).Status.Allowed {
		t.Errorf("jane in ns1: %+v, %v", obj, err)
	}
	_, err = r.Create(ctx, review("ns1", "ns2"), nil, nil)
	if !apierrors.IsInvalid(err) || err.(apierrors.APIStatus).Status().Details.Causes[0].Field != "spec.resourceAttributes.namespace" {
		t.Errorf("another namespace in the spec: %v", err)
	}
	_, err = r.Create(genericapirequest.WithNamespace(context.Background(), "ns2"), review("ns1", "ns1"), nil, nil)
	if !apierrors.IsBadRequest(err) || err.Error() != "spec.resourceAttributes.namespace must match namespace: ns2" {
		t.Errorf("another namespace in the URL: %v", err)
	}
	nonResource := review("ns1", "ns1")
	nonResource.Spec.ResourceAttributes = nil
	nonResource.Spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}
	errs := Validate(nonResource)
	if len(errs) != 1 || errs[0].Field != "spec.nonResourceAttributes" || errs[0].Detail != "disallowed on this kind of request" {
		t.Errorf("a path: %v", errs)
	}
	named := review("ns1", "ns1")
	named.Name = "x"
	if errs := Validate(named); len(errs) != 1 || errs[0].Detail != "must be empty except for namespace" {
		t.Errorf("a name: %v", errs)
	}
}
