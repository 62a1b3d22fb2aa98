package rbacvalidation

import (
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingColumns are the columns of `kubectl get rolebindings` and `clusterrolebindings`;
// the last three are shown with -o wide. what is "roleBinding" or "clusterRoleBinding".
func BindingColumns(what string) []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
		{Name: "Role", Type: "string", Description: rbacv1.RoleBinding{}.SwaggerDoc()["roleRef"]},
		{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
		{Name: "Users", Type: "string", Priority: 1, Description: "Users in the " + what},
		{Name: "Groups", Type: "string", Priority: 1, Description: "Groups in the " + what},
		{Name: "ServiceAccounts", Type: "string", Priority: 1, Description: "ServiceAccounts in the " + what},
	}
}

// BindingCells are a binding's cells after its name and age: the role as Kind/name, and
// its users, groups and service accounts (namespace/name), each joined by ", ".
func BindingCells(ref rbacv1.RoleRef, subjects []rbacv1.Subject) (role, users, groups, serviceAccounts string) {
	var u, g, sa []string
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sa = append(sa, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			u = append(u, s.Name)
		case rbacv1.GroupKind:
			g = append(g, s.Name)
		}
	}
	return fmt.Sprintf("%s/%s", ref.Kind, ref.Name), strings.Join(u, ", "), strings.Join(g, ", "), strings.Join(sa, ", ")
}
