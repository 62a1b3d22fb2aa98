package controllers

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/berth-cluster/berth/pkg/auth/rbac/bootstrappolicy"
)

// TestEveryAccountHasItsBootstrapRole: with per-controller credentials a controller is
// allowed only what its kube-system service account is bound to, so each account of the
// table must be one the bootstrap policy binds (system:controller:<account>).
func TestEveryAccountHasItsBootstrapRole(t *testing.T) {
	bound := map[string]bool{}
	for _, b := range bootstrappolicy.ControllerRoleBindings() {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == "kube-system" && b.RoleRef.Name == "system:controller:"+s.Name {
				bound[s.Name] = true
			}
		}
	}
	for _, c := range controllers {
		if !bound[c.account] {
			t.Errorf("controller %s runs as kube-system/%s, which no bootstrap controller role binds", c.name, c.account)
		}
	}
}
