// Package selfsubjectrulesreview is the registry of self subject rules reviews
// (authorization.k8s.io/v1): "what may I do in this namespace?", which `kubectl auth can-i
// --list` asks. It is never stored: the API server lists the requesting user's rules from the
// authorizers that can enumerate them (RBAC) and says the list is incomplete when an
// authorizer cannot.
package selfsubjectrulesreview

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
)

// REST answers self subject rules reviews; it stores nothing.
type REST struct {
	rules authorizer.RuleResolver
}

// NewREST returns the selfsubjectrulesreviews resource, listing rules with r.
func NewREST(r authorizer.RuleResolver) *REST { return &REST{rules: r} }

var (
	_ rest.Creater              = &REST{}
	_ rest.Scoper               = &REST{}
	_ rest.SingularNameProvider = &REST{}
)

func (r *REST) New() runtime.Object     { return &authorizationv1.SelfSubjectRulesReview{} }
func (r *REST) Destroy()                {}
func (r *REST) NamespaceScoped() bool   { return false }
func (r *REST) GetSingularName() string { return "selfsubjectrulesreview" }

// Create admits the review and returns the requesting user's rules in its namespace. Errors
// met while listing go into evaluationError beside the rules that were found.
func (r *REST) Create(ctx context.Context, obj runtime.Object, createValidation rest.ValidateObjectFunc, _ *metav1.CreateOptions) (runtime.Object, error) {
	review, ok := obj.(*authorizationv1.SelfSubjectRulesReview)
	if !ok {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("not a SelfSubjectRulesReview: %#v", obj))
	}
	u, ok := genericapirequest.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	if review.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	if createValidation != nil {
		if err := createValidation(ctx, obj.DeepCopyObject()); err != nil {
			return nil, err
		}
	}
	resourceRules, nonResourceRules, incomplete, err := r.rules.RulesFor(ctx, u, review.Spec.Namespace)
	out := &authorizationv1.SelfSubjectRulesReview{Status: authorizationv1.SubjectRulesReviewStatus{
		ResourceRules:    make([]authorizationv1.ResourceRule, len(resourceRules)),
		NonResourceRules: make([]authorizationv1.NonResourceRule, len(nonResourceRules)),
		Incomplete:       incomplete,
	}}
	for i, rule := range resourceRules {
		out.Status.ResourceRules[i] = authorizationv1.ResourceRule{
			Verbs: rule.GetVerbs(), APIGroups: rule.GetAPIGroups(), Resources: rule.GetResources(), ResourceNames: rule.GetResourceNames(),
		}
	}
	for i, rule := range nonResourceRules {
		out.Status.NonResourceRules[i] = authorizationv1.NonResourceRule{Verbs: rule.GetVerbs(), NonResourceURLs: rule.GetNonResourceURLs()}
	}
	if err != nil {
		out.Status.EvaluationError = err.Error()
	}
	return out, nil
}
