// Package selfsubjectaccessreview is the registry of self subject access reviews
// (authorization.k8s.io/v1): "may I do this?", which `kubectl auth can-i` asks. Like every
// access review it is decoded, validated and admitted, never stored: the API server answers
// it with its own authorizer for the requesting user and returns it with the status filled in.
package selfsubjectaccessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/berth-cluster/berth/pkg/apiserver/registry/authorization/subjectaccessreview"
)

// REST answers self subject access reviews; it stores nothing.
type REST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewREST returns the selfsubjectaccessreviews resource, answering with the API server's
// authorizer.
func NewREST(a authorizer.UnconditionalAuthorizer) *REST { return &REST{authorizer: a} }

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authorizationv1.SelfSubjectAccessReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "selfsubjectaccessreview" }

// Create validates the review, admits it, and returns it with the answer for the user who
// asks.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectAccessReview: %#v", obj))
	}
	if errs := Validate(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SelfSubjectAccessReview").GroupKind(), "", errs)
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	attrs := subjectaccessreview.AttributesOf(u, review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes)
	review.Status = subjectaccessreview.Answer(ctx, r.authorizer, attrs)
	return review, nil
}

// Validate validates a review as Kubernetes does: exactly one of resource and non-resource
// attributes, and no metadata.
func Validate(review *authorizationv1.SelfSubjectAccessReview) field.ErrorList {
	errs := subjectaccessreview.ValidateAttributes(review.Spec.ResourceAttributes, review.Spec.NonResourceAttributes, field.NewPath("spec"))
	meta := review.ObjectMeta
	meta.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), review.ObjectMeta, "must be empty"))
	}
	return errs
}
