package role

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateRole(t *testing.T) {
	r := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "ns", ResourceVersion: "1"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}},
	}
	if errs := Strategy.Validate(context.Background(), r); len(errs) != 0 {
		t.Errorf("a valid role: %v", errs)
	}
	bad := r.DeepCopy()
	bad.Rules = append(bad.Rules, rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}})
	errs := Strategy.ValidateUpdate(context.Background(), bad, r)
	if len(errs) != 1 || errs[0].Error() != `rules[1].nonResourceURLs: Invalid value: ["/metrics"]: namespaced rules cannot apply to non-resource URLs` {
		t.Errorf("a namespaced role with a URL: %v", errs)
	}
	moved := r.DeepCopy()
	moved.Namespace = "other"
	if errs := Strategy.ValidateUpdate(context.Background(), moved, r); len(errs) != 1 || errs[0].Field != "metadata.namespace" {
		t.Errorf("moving a role: %v", errs)
	}
	if f := Fields(r); f["metadata.name"] != "pod-reader" || f["metadata.namespace"] != "ns" {
		t.Errorf("fields %v", f)
	}
}

func TestRoleTable(t *testing.T) {
	// kubectl get roles shows NAME and CREATED AT, upstream's default table.
	created := metav1.Date(2026, 12, 1, 10, 0, 0, 0, metav1.Now().Location())
	r := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", CreationTimestamp: created}}
	tbl, err := tableConvertor.ConvertToTable(context.Background(), r, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.ColumnDefinitions) != 2 || tbl.ColumnDefinitions[0].Name != "Name" || tbl.ColumnDefinitions[1].Name != "Created At" {
		t.Errorf("columns %+v", tbl.ColumnDefinitions)
	}
	if len(tbl.Rows) != 1 || tbl.Rows[0].Cells[0] != "pod-reader" || tbl.Rows[0].Cells[1] != created.UTC().Format("2006-01-02T15:04:05Z") {
		t.Errorf("rows %+v", tbl.Rows)
	}
}
