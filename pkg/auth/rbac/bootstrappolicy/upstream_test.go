package bootstrappolicy

import (
	"cmp"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The proof that this package is kube-apiserver v1.37.2's bootstrap policy: upstream keeps
// the policy its code builds (default feature gates) as fixtures beside the code, and these
// tests require berth's objects to equal them one by one: the same set of names, and for
// each the same namespace, labels, annotations, aggregation rule, role reference, subjects
// and rules.
//
// What is normalized before comparing, because it does not change what is allowed:
//   - the order of the strings inside each rule (verbs, apiGroups, resources, resourceNames,
//     nonResourceURLs), and duplicates in them;
//   - the order of the rules of a role and of the subjects of a binding;
//   - nil versus empty lists and maps;
//   - apiVersion and kind, which the fixtures carry and Go objects do not.

const upstreamModule = "k8s.io/kubernetes@v1.37.2"

var (
	upstreamOnce sync.Once
	upstreamDir  string
	upstreamErr  error
)

// fixture reads upstream's testdata file name from the module cache, where `go mod download`
// puts (or finds) the module.
func fixture[T any](t *testing.T, name string) []T {
	t.Helper()
	upstreamOnce.Do(func() {
		out, err := exec.Command("go", "mod", "download", "-json", upstreamModule).Output()
		if err != nil {
			upstreamErr = err
			if ee, ok := err.(*exec.ExitError); ok {
				upstreamErr = errorString(string(out) + string(ee.Stderr))
			}
			return
		}
		var mod struct{ Dir, Error string }
		if err := json.Unmarshal(out, &mod); err != nil {
			upstreamErr = err
			return
		}
		if mod.Error != "" {
			upstreamErr = errorString(mod.Error)
		}
		upstreamDir = mod.Dir
	})
	if upstreamErr != nil {
		t.Fatalf("locating %s in the module cache: %v", upstreamModule, upstreamErr)
	}
	path := filepath.Join(upstreamDir, "plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata", name)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	items := make([]T, len(list.Items))
	for i, raw := range list.Items {
		if err := json.Unmarshal(raw, &items[i]); err != nil {
			t.Fatalf("%s item %d: %v", path, i, err)
		}
	}
	if len(items) == 0 {
		t.Fatalf("%s has no items", path)
	}
	return items
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestClusterRolesAreUpstreams(t *testing.T) {
	requireUpstream(t, "cluster-roles.yaml", ClusterRoles(), fixture[rbacv1.ClusterRole](t, "cluster-roles.yaml"), normalizeClusterRole)
}

func TestClusterRoleBindingsAreUpstreams(t *testing.T) {
	requireUpstream(t, "cluster-role-bindings.yaml", ClusterRoleBindings(), fixture[rbacv1.ClusterRoleBinding](t, "cluster-role-bindings.yaml"), normalizeClusterRoleBinding)
}

func TestControllerRolesAreUpstreams(t *testing.T) {
	requireUpstream(t, "controller-roles.yaml", ControllerRoles(), fixture[rbacv1.ClusterRole](t, "controller-roles.yaml"), normalizeClusterRole)
}

func TestControllerRoleBindingsAreUpstreams(t *testing.T) {
	requireUpstream(t, "controller-role-bindings.yaml", ControllerRoleBindings(), fixture[rbacv1.ClusterRoleBinding](t, "controller-role-bindings.yaml"), normalizeClusterRoleBinding)
}

func TestNamespaceRolesAreUpstreams(t *testing.T) {
	requireUpstream(t, "namespace-roles.yaml", flatten(NamespaceRoles()), fixture[rbacv1.Role](t, "namespace-roles.yaml"), normalizeRole)
}

func TestNamespaceRoleBindingsAreUpstreams(t *testing.T) {
	requireUpstream(t, "namespace-role-bindings.yaml", flatten(NamespaceRoleBindings()), fixture[rbacv1.RoleBinding](t, "namespace-role-bindings.yaml"), normalizeRoleBinding)
}

// TestNamespacedObjectsAreInTheirNamespace: the maps' keys are the objects' namespaces, which
// the reconcile relies on.
func TestNamespacedObjectsAreInTheirNamespace(t *testing.T) {
	for ns, roles := range NamespaceRoles() {
		for _, r := range roles {
			if r.Namespace != ns {
				t.Errorf("role %s/%s listed under %s", r.Namespace, r.Name, ns)
			}
		}
	}
	for ns, bindings := range NamespaceRoleBindings() {
		for _, b := range bindings {
			if b.Namespace != ns {
				t.Errorf("rolebinding %s/%s listed under %s", b.Namespace, b.Name, ns)
			}
		}
	}
}

// TestNodeRules: the node authorizer's rules are the system:node role's.
func TestNodeRules(t *testing.T) {
	for _, r := range fixture[rbacv1.ClusterRole](t, "cluster-roles.yaml") {
		if r.Name == NodeRoleName {
			want, got := normalizeRules(r.Rules), normalizeRules(NodeRules())
			if diff := gocmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("NodeRules() differ from upstream's %s role (-upstream +berth):\n%s", NodeRoleName, diff)
			}
			return
		}
	}
	t.Fatalf("upstream has no %s role", NodeRoleName)
}

// TestDefaultHasEverything: the reconciled policy is all of the above.
func TestDefaultHasEverything(t *testing.T) {
	p := Default()
	if got, want := len(p.ClusterRoles), len(ClusterRoles())+len(ControllerRoles()); got != want {
		t.Errorf("Default() has %d cluster roles, want %d", got, want)
	}
	if got, want := len(p.ClusterRoleBindings), len(ClusterRoleBindings())+len(ControllerRoleBindings()); got != want {
		t.Errorf("Default() has %d cluster role bindings, want %d", got, want)
	}
	if len(flatten(p.Roles)) != len(flatten(NamespaceRoles())) || len(flatten(p.RoleBindings)) != len(flatten(NamespaceRoleBindings())) {
		t.Error("Default() lacks namespaced roles or bindings")
	}
}

// requireUpstream fails with one readable diff per object that differs, and lists the
// objects only one side has.
func requireUpstream[T any](t *testing.T, file string, berth, upstream []T, normalize func(T) (string, T)) {
	t.Helper()
	index := func(side string, objs []T) map[string]T {
		m := make(map[string]T, len(objs))
		for _, o := range objs {
			key, n := normalize(o)
			if _, dup := m[key]; dup {
				t.Errorf("%s has %s twice", side, key)
			}
			m[key] = n
		}
		return m
	}
	got, want := index("berth", berth), index("upstream "+file, upstream)
	var missing, extra []string
	for _, key := range sortedKeys(want) {
		g, ok := got[key]
		if !ok {
			missing = append(missing, key)
			continue
		}
		if diff := gocmp.Diff(want[key], g, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s differs from upstream's %s (-upstream +berth):\n%s", key, file, diff)
		}
	}
	for _, key := range sortedKeys(got) {
		if _, ok := want[key]; !ok {
			extra = append(extra, key)
		}
	}
	if len(missing) > 0 {
		t.Errorf("berth lacks %d objects of upstream's %s:\n  %s", len(missing), file, strings.Join(missing, "\n  "))
	}
	if len(extra) > 0 {
		t.Errorf("berth has %d objects that upstream's %s lacks:\n  %s", len(extra), file, strings.Join(extra, "\n  "))
	}
}

func normalizeClusterRole(r rbacv1.ClusterRole) (string, rbacv1.ClusterRole) {
	r = *r.DeepCopy()
	r.TypeMeta = metav1.TypeMeta{}
	r.Rules = normalizeRules(r.Rules)
	return r.Name, r
}

func normalizeRole(r rbacv1.Role) (string, rbacv1.Role) {
	r = *r.DeepCopy()
	r.TypeMeta = metav1.TypeMeta{}
	r.Rules = normalizeRules(r.Rules)
	return r.Namespace + "/" + r.Name, r
}

func normalizeClusterRoleBinding(b rbacv1.ClusterRoleBinding) (string, rbacv1.ClusterRoleBinding) {
	b = *b.DeepCopy()
	b.TypeMeta = metav1.TypeMeta{}
	b.Subjects = normalizeSubjects(b.Subjects)
	return b.Name, b
}

func normalizeRoleBinding(b rbacv1.RoleBinding) (string, rbacv1.RoleBinding) {
	b = *b.DeepCopy()
	b.TypeMeta = metav1.TypeMeta{}
	b.Subjects = normalizeSubjects(b.Subjects)
	return b.Namespace + "/" + b.Name, b
}

func normalizeRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	out := make([]rbacv1.PolicyRule, len(rules))
	for i, r := range rules {
		out[i] = rbacv1.PolicyRule{
			Verbs:           sorted(r.Verbs),
			APIGroups:       sorted(r.APIGroups),
			Resources:       sorted(r.Resources),
			ResourceNames:   sorted(r.ResourceNames),
			NonResourceURLs: sorted(r.NonResourceURLs),
		}
	}
	slices.SortFunc(out, func(a, b rbacv1.PolicyRule) int { return cmp.Compare(ruleKey(a), ruleKey(b)) })
	return out
}

func ruleKey(r rbacv1.PolicyRule) string {
	return strings.Join([]string{
		strings.Join(r.APIGroups, ","), strings.Join(r.Resources, ","), strings.Join(r.ResourceNames, ","),
		strings.Join(r.NonResourceURLs, ","), strings.Join(r.Verbs, ","),
	}, "|")
}

func normalizeSubjects(s []rbacv1.Subject) []rbacv1.Subject {
	s = slices.Clone(s)
	slices.SortFunc(s, func(a, b rbacv1.Subject) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return s
}

func flatten[T any](byNamespace map[string][]T) []T {
	var out []T
	for _, ns := range sortedKeys(byNamespace) {
		out = append(out, byNamespace[ns]...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
