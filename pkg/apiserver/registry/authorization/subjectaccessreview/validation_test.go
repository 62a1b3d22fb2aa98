package subjectaccessreview

import (
	"fmt"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidate(t *testing.T) {
	resource := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "nodes", Subresource: "proxy", Name: "n"}
	nonResource := &authorizationv1.NonResourceAttributes{Verb: "get", Path: "/healthz"}
	for _, tt := range []struct {
		name string
		sar  authorizationv1.SubjectAccessReview
		want []string
	}{
		{name: "user and resource", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: resource}}},
		{name: "groups only", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{Groups: []string{"g"}, NonResourceAttributes: nonResource}}},
		{name: "managed fields are ignored", sar: authorizationv1.SubjectAccessReview{
			ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Spec:       authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: resource}}},
		{name: "no subject", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: resource}},
			want: []string{"FieldValueInvalid spec.user"}},
		{name: "neither attributes", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane"}},
			want: []string{"FieldValueInvalid spec"}},
		{name: "both attributes", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: resource, NonResourceAttributes: nonResource}},
			want: []string{"FieldValueInvalid spec"}},
		{name: "metadata", sar: authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"}, Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: resource}},
			want: []string{"FieldValueInvalid metadata"}},
		{name: "raw and parsed field selector", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "list", Resource: "pods",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n", Requirements: []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: "In", Values: []string{"n"}}}},
		}}}, want: []string{"FieldValueInvalid spec.resourceAttributes.fieldSelector.rawSelector"}},
		{name: "empty label selector", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "list", Resource: "pods", LabelSelector: &authorizationv1.LabelSelectorAttributes{},
		}}}, want: []string{"FieldValueRequired spec.resourceAttributes.labelSelector.requirements"}},
		{name: "unknown label operator passes", sar: authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane", ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: "list", Resource: "pods", LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"x"}}}},
		}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range Validate(&tt.sar) {
				got = append(got, fmt.Sprintf("%s %s", string(e.Type), e.Field))
			}
			slices.Sort(got)
			slices.Sort(tt.want)
			if !slices.Equal(got, tt.want) {
				t.Errorf("errors %v, want %v", got, tt.want)
			}
		})
	}
}
