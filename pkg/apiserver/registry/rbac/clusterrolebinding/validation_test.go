package clusterrolebinding

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func binding() *rbacv1.ClusterRoleBinding {
	b := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers", ResourceVersion: "1"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "jane"}, {Kind: "ServiceAccount", Name: "robot", Namespace: "ns"}},
	}
	SetDefaults(b)
	return b
}

func TestValidateClusterRoleBinding(t *testing.T) {
	b := binding()
	if errs := Strategy.Validate(context.Background(), b); len(errs) != 0 {
		t.Errorf("a defaulted binding: %v", errs)
	}
	changed := b.DeepCopy()
	changed.RoleRef.Name = "edit"
	errs := Strategy.ValidateUpdate(context.Background(), changed, b)
	if len(errs) != 1 || errs[0].Field != "roleRef" || !strings.HasSuffix(errs[0].Error(), ": field is immutable") {
		t.Errorf("changing roleRef: %v", errs)
	}
	subjects := b.DeepCopy()
	subjects.Subjects = append(subjects.Subjects, rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "devs"})
	if errs := Strategy.ValidateUpdate(context.Background(), subjects, b); len(errs) != 0 {
		t.Errorf("changing subjects: %v", errs)
	}
	// A ClusterRoleBinding binds ClusterRoles only, and its service accounts name their namespace.
	bad := binding()
	bad.RoleRef.Kind = "Role"
	bad.Subjects[1].Namespace = ""
	var got []string
	for _, e := range Strategy.Validate(context.Background(), bad) {
		got = append(got, e.Error())
	}
	if want := `roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"; subjects[1].namespace: Required value`; strings.Join(got, "; ") != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestClusterRoleBindingTable(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	b := binding()
	b.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "Group", Name: "devs"}, rbacv1.Subject{Kind: "User", Name: "bob"})
	tbl, err := newTableConvertor(clocktesting.NewFakePassiveClock(now)).ConvertToTable(context.Background(), b, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []any{"readers", "ClusterRole/view", "90s", "jane, bob", "devs", "ns/robot"}; !reflect.DeepEqual(tbl.Rows[0].Cells, want) {
		t.Errorf("cells %v, want %v", tbl.Rows[0].Cells, want)
	}
	var names []string
	for _, c := range tbl.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, " ") != "Name Role Age Users Groups ServiceAccounts" {
		t.Errorf("columns %v", names)
	}
}
