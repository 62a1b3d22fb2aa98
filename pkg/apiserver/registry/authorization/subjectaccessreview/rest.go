package subjectaccessreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST answers subject access reviews with an authorizer; it stores nothing.
type REST struct {
	authorizer authorizer.UnconditionalAuthorizer
}

// NewREST returns the subjectaccessreviews resource, answering with a: the API server's own
// authorizer, so that a review says what a request of that user would meet.
func NewREST(a authorizer.UnconditionalAuthorizer) *REST {
	return &REST{authorizer: a}
}

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authorizationv1.SubjectAccessReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "subjectaccessreview" }

// Create validates the review, admits it, and returns it with the authorizer's answer.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	sar, ok := obj.(*authorizationv1.SubjectAccessReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SubjectAccessReview: %#v", obj))
	}
	if errs := Validate(sar); len(errs) > 0 {
		return nil, apierrors.NewInvalid(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview").GroupKind(), "", errs)
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	sar.Status = Answer(ctx, r.authorizer, Attributes(&sar.Spec))
	return sar, nil
}

// Answer is the status of a review of attrs: the authorizer's decision and its reason, as
// every kind of access review returns it. A review nobody allows has an empty reason, as in
// Kubernetes, unless an authorizer gave one.
func Answer(ctx context.Context, a authorizer.UnconditionalAuthorizer, attrs authorizer.AttributesRecord) authorizationv1.SubjectAccessReviewStatus {
	decision, reason, err := a.Authorize(ctx, attrs)
	status := authorizationv1.SubjectAccessReviewStatus{
		Allowed: decision == authorizer.DecisionAllow,
		Denied:  decision == authorizer.DecisionDeny,
		Reason:  reason,
	}
	if err != nil {
		status.EvaluationError = err.Error()
	}
	return status
}

// Attributes are what a request of the review's subject would be authorized with.
func Attributes(spec *authorizationv1.SubjectAccessReviewSpec) authorizer.AttributesRecord {
	u := &user.DefaultInfo{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	return AttributesOf(u, spec.ResourceAttributes, spec.NonResourceAttributes)
}

// AttributesOf are what a request of u would be authorized with, for the resource or
// non-resource attributes a review names. Field and label selectors are left out: no
// authorizer berth has looks at them.
func AttributesOf(u user.Info, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizer.AttributesRecord {
	if ra != nil {
		return authorizer.AttributesRecord{
			User:            u,
			Verb:            ra.Verb,
			Namespace:       ra.Namespace,
			APIGroup:        ra.Group,
			APIVersion:      matchAll(ra.Version),
			Resource:        ra.Resource,
			Subresource:     ra.Subresource,
			Name:            ra.Name,
			ResourceRequest: true,
		}
	}
	attrs := authorizer.AttributesRecord{User: u}
	if nra != nil {
		attrs.Verb, attrs.Path = nra.Verb, nra.Path
	}
	return attrs
}

// matchAll turns an empty version into "*", as Kubernetes reads a review's version.
func matchAll(version string) string {
	if version == "" {
		return "*"
	}
	return version
}
