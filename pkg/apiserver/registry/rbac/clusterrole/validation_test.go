package clusterrole

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateClusterRole(t *testing.T) {
	selector := func(s metav1.LabelSelector) *rbacv1.AggregationRule {
		return &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{s}}
	}
	for _, tc := range []struct {
		name string
		role rbacv1.ClusterRole
		want string
	}{
		{"rules and a URL", rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "system:monitoring"}, Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}},
			{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		}}, ""},
		{"aggregating", rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "view"},
			AggregationRule: selector(metav1.LabelSelector{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-view": "true"}})}, ""},
		{"an empty aggregation rule", rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x"}, AggregationRule: &rbacv1.AggregationRule{}},
			"aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"},
		{"a bad selector", rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x"}, AggregationRule: selector(metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}})},
			`aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`},
		{"namespaced", rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ns"}},
			"metadata.namespace: Forbidden: not allowed on this type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range Strategy.Validate(context.Background(), &tc.role) {
				got = append(got, e.Error())
			}
			if g := strings.Join(got, "; "); !strings.HasPrefix(g, tc.want) || (tc.want == "") != (g == "") {
				t.Errorf("got %q\nwant %q", g, tc.want)
			}
		})
	}
}

func TestAggregates(t *testing.T) {
	if aggregates(&rbacv1.ClusterRole{}) || aggregates(&rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{}}) {
		t.Error("no selectors, no aggregation")
	}
	if !aggregates(&rbacv1.ClusterRole{AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{}}}}) {
		t.Error("a selector aggregates")
	}
}
