package selfsubjectrulesreview

import (
	"context"
	"errors"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// rules is a resolver that knows one rule of each kind and reports being incomplete for the
// node "n", as the node authorizer does.
type rules struct{}

func (rules) RulesFor(_ context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if u.GetName() == "system:node:n" {
		return nil, nil, true, errors.New("node authorizer does not support user rule resolution")
	}
	return []authorizer.ResourceRuleInfo{&authorizer.DefaultResourceRuleInfo{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{namespace}}},
		[]authorizer.NonResourceRuleInfo{&authorizer.DefaultNonResourceRuleInfo{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
		false, nil
}

func TestCreate(t *testing.T) {
	r := NewREST(rules{})
	ask := func(name, ns string) (*authorizationv1.SelfSubjectRulesReview, error) {
		ctx := genericapirequest.WithUser(context.Background(), &user.DefaultInfo{Name: name})
		obj, err := r.Create(ctx, &authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, nil, nil)
		if err != nil {
			return nil, err
		}
		return obj.(*authorizationv1.SelfSubjectRulesReview), nil
	}
	got, err := ask("jane", "ns1")
	if err != nil || got.Status.Incomplete || len(got.Status.ResourceRules) != 1 || got.Status.ResourceRules[0].ResourceNames[0] != "ns1" ||
		len(got.Status.NonResourceRules) != 1 || got.Status.NonResourceRules[0].NonResourceURLs[0] != "/healthz" {
		t.Errorf("jane: %+v, %v", got, err)
	}
	got, err = ask("system:node:n", "ns1")
	if err != nil || !got.Status.Incomplete || got.Status.EvaluationError != "node authorizer does not support user rule resolution" ||
		got.Status.ResourceRules == nil || len(got.Status.ResourceRules) != 0 {
		t.Errorf("a node: %+v, %v", got, err)
	}
	if _, err := ask("jane", ""); !apierrors.IsBadRequest(err) || err.Error() != "no namespace on request" {
		t.Errorf("no namespace: %v", err)
	}
}
