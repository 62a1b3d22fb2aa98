package rbacvalidation

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func messages(errs field.ErrorList) string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return strings.Join(out, "; ")
}

func TestValidatePolicyRule(t *testing.T) {
	for _, tc := range []struct {
		name       string
		rule       rbacv1.PolicyRule
		namespaced bool
		want       string
	}{
		{"resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}, true, ""},
		{"non-resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, false, ""},
		{"no verbs", rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}}, true,
			"rules[0].verbs: Required value: verbs must contain at least one value"},
		{"no group or resource", rbacv1.PolicyRule{Verbs: []string{"get"}}, false,
			"rules[0].apiGroups: Required value: resource rules must supply at least one api group; " +
				"rules[0].resources: Required value: resource rules must supply at least one resource"},
		{"namespaced non-resource rule", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}, true,
			`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`},
		{"both kinds", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}, Resources: []string{"pods"}}, false,
			`rules[0].nonResourceURLs: Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := messages(ValidateRules([]rbacv1.PolicyRule{tc.rule}, tc.namespaced)); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateRoleRef(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ref   rbacv1.RoleRef
		kinds []string
		want  string
	}{
		{"role", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}, []string{"Role", "ClusterRole"}, ""},
		{"wrong group", rbacv1.RoleRef{APIGroup: "x", Kind: "Role", Name: "r"}, []string{"Role", "ClusterRole"},
			`roleRef.apiGroup: Unsupported value: "x": supported values: "rbac.authorization.k8s.io"`},
		{"a Role from a ClusterRoleBinding", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "r"}, []string{"ClusterRole"},
			`roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"`},
		{"no name", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole"}, []string{"ClusterRole"},
			"roleRef.name: Required value"},
		{"a name that is no path segment", rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "a/b"}, []string{"ClusterRole"},
			`roleRef.name: Invalid value: "a/b": may not contain '/'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := messages(ValidateRoleRef(&tc.ref, tc.kinds...)); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
	old := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "a"}
	changed := old
	changed.Name = "b"
	if errs := ValidateRoleRefUpdate(&changed, &old); len(errs) != 1 || errs[0].Field != "roleRef" || !strings.HasSuffix(errs[0].Error(), "field is immutable") {
		t.Errorf("changing roleRef: %v", errs)
	}
	if errs := ValidateRoleRefUpdate(&old, &old); len(errs) != 0 {
		t.Errorf("keeping roleRef: %v", errs)
	}
}

func TestValidateSubjects(t *testing.T) {
	for _, tc := range []struct {
		name       string
		subject    rbacv1.Subject
		namespaced bool
		want       string
	}{
		{"user", rbacv1.Subject{Kind: "User", APIGroup: rbacv1.GroupName, Name: "jane"}, false, ""},
		{"group", rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName, Name: "system:masters"}, false, ""},
		{"service account of the binding's namespace", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, true, ""},
		{"service account without namespace, cluster-wide", rbacv1.Subject{Kind: "ServiceAccount", Name: "robot"}, false,
			"subjects[0].namespace: Required value"},
		{"service account with a group", rbacv1.Subject{Kind: "ServiceAccount", APIGroup: rbacv1.GroupName, Name: "robot", Namespace: "ns"}, false,
			`subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported values: ""`},
		{"service account with a bad name", rbacv1.Subject{Kind: "ServiceAccount", Name: "Robot", Namespace: "ns"}, false,
			`subjects[0].name: Invalid value: "Robot": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"user without a group", rbacv1.Subject{Kind: "User", Name: "jane"}, false,
			`subjects[0].apiGroup: Unsupported value: "": supported values: "rbac.authorization.k8s.io"`},
		{"no name", rbacv1.Subject{Kind: "Group", APIGroup: rbacv1.GroupName}, false, "subjects[0].name: Required value"},
		{"unknown kind", rbacv1.Subject{Kind: "Robot", Name: "r"}, false,
			`subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := messages(ValidateSubjects([]rbacv1.Subject{tc.subject}, tc.namespaced)); got != tc.want {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestValidateObjectMeta(t *testing.T) {
	// Role names are path segments: colons are fine (system:node), slashes are not.
	ok := metav1.ObjectMeta{Name: "system:node", Namespace: "ns"}
	if errs := ValidateObjectMeta(&ok, nil, true); len(errs) != 0 {
		t.Errorf("system:node: %v", errs)
	}
	for _, tc := range []struct {
		meta metav1.ObjectMeta
		want string
	}{
		{metav1.ObjectMeta{Name: "a/b", Namespace: "ns"}, `metadata.name: Invalid value: "a/b": may not contain '/'`},
		{metav1.ObjectMeta{Name: "..", Namespace: "ns"}, `metadata.name: Invalid value: "..": may not be '..'`},
		{metav1.ObjectMeta{Name: "r"}, "metadata.namespace: Required value"},
	} {
		if got := messages(ValidateObjectMeta(&tc.meta, nil, true)); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.meta, got, tc.want)
		}
	}
}

func TestDefaults(t *testing.T) {
	subjects := []rbacv1.Subject{{Kind: "User", Name: "u"}, {Kind: "Group", Name: "g"}, {Kind: "ServiceAccount", Name: "s"}, {Kind: "User", APIGroup: "x", Name: "v"}}
	SetSubjectDefaults(subjects)
	for i, want := range []string{rbacv1.GroupName, rbacv1.GroupName, "", "x"} {
		if subjects[i].APIGroup != want {
			t.Errorf("subject %d apiGroup %q, want %q", i, subjects[i].APIGroup, want)
		}
	}
	ref := rbacv1.RoleRef{Kind: "Role", Name: "r"}
	SetRoleRefDefaults(&ref)
	if ref.APIGroup != rbacv1.GroupName {
		t.Errorf("roleRef apiGroup %q", ref.APIGroup)
	}
}

func TestBindingCells(t *testing.T) {
	role, users, groups, sas := BindingCells(rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, []rbacv1.Subject{
		{Kind: "User", Name: "a"}, {Kind: "Group", Name: "g"}, {Kind: "User", Name: "b"}, {Kind: "ServiceAccount", Namespace: "ns", Name: "s"},
	})
	if role != "ClusterRole/view" || users != "a, b" || groups != "g" || sas != "ns/s" {
		t.Errorf("cells %q %q %q %q", role, users, groups, sas)
	}
	var names []string
	for _, c := range BindingColumns("roleBinding") {
		names = append(names, c.Name)
		if (c.Priority == 1) != (c.Name == "Users" || c.Name == "Groups" || c.Name == "ServiceAccounts") {
			t.Errorf("column %s priority %d", c.Name, c.Priority)
		}
	}
	if strings.Join(names, " ") != "Name Role Age Users Groups ServiceAccounts" {
		t.Errorf("columns %v", names)
	}
}
