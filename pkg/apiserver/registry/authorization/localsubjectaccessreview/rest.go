// Package localsubjectaccessreview is the registry of local subject access reviews
// (authorization.k8s.io/v1): "may this user do this in this namespace?", which a namespace's
// admin may ask without the right to ask about the whole cluster. It is decoded, validated
// and admitted, never stored: the API server answers it with its own authorizer.
package localsubjectaccessreview

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

// REST answers local subject access reviews; it stores nothing.
type REST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewREST returns the localsubjectaccessreviews resource, answering with the API server's
// authorizer.
func NewREST(a authorizer.UnconditionalAuthorizer) *REST { return &REST{authorizer: a} }

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authorizationv1.LocalSubjectAccessReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return true }
func (r *REST) GetSingularName() string { return "localsubjectaccessreview" }

// Create validates the review, checks that it asks about the namespace of its URL, admits
// it, and returns it with the authorizer's answer.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.LocalSubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a LocalSubjectAccessReview: %#v", obj))
	}
	if errs := Validate(review); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("LocalSubjectAccessReview").GroupKind(), "", errs)
	}
	namespace := genericapirequest.NamespaceValue(ctx)
	if namespace == "" {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("namespace is required on this type: %v", namespace))
	}
	if namespace != review.Namespace {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("spec.resourceAttributes.namespace must match namespace: %v", namespace))
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	review.Status = subjectaccessreview.Answer(ctx, r.authorizer, subjectaccessreview.Attributes(&review.Spec))
	return review, nil
}

// Validate validates a review as Kubernetes does: a subject access review's spec about
// resources in the review's own namespace, and no metadata but the namespace.
func Validate(review *authorizationv1.LocalSubjectAccessReview) field.ErrorList {
	errs := subjectaccessreview.ValidateSpec(&review.Spec, field.NewPath("spec"))
	meta := review.ObjectMeta
	meta.Namespace = ""
	meta.ManagedFields = nil
	if !apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, meta) {
		errs = append(errs, field.Invalid(field.NewPath("metadata"), review.ObjectMeta, "must be empty except for namespace"))
	}
	if ra := review.Spec.ResourceAttributes; ra != nil && ra.Namespace != review.Namespace {
		errs = append(errs, field.Invalid(field.NewPath("spec.resourceAttributes.namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if nra := review.Spec.NonResourceAttributes; nra != nil {
		errs = append(errs, field.Invalid(field.NewPath("spec.nonResourceAttributes"), nra, "disallowed on this kind of request"))
	}
	return errs
}
