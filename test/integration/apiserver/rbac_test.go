package apiserver

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cluster/pki"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// rbacUser is a user of the cluster CA's certificates, as `berth kubeconfig --user U --group G`
// makes them, with a kubeconfig file for kubectl and a clientset.
type rbacUser struct {
	kubeconfig string
	client     kubernetes.Interface
}

func newRBACUser(t *testing.T, c *framework.Cluster, name string, groups ...string) rbacUser {
	t.Helper()
	ca, err := pki.EnsureCA(cluster.PKIDir(c.DataDir), "berth-ca")
	if err != nil {
		t.Fatal(err)
	}
	data, err := cluster.ClientKubeconfig(ca, c.Config.Host, name, groups)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	config, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	return rbacUser{kubeconfig: path, client: kubernetes.NewForConfigOrDie(config)}
}

// kubectlAs runs the real kubectl as kubeconfig's user and returns its combined output.
func kubectlAs(t *testing.T, ctx context.Context, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	return kubectlBin(t, ctx, kubectlBinaries(t)[0], kubeconfig, args...)
}

func kubectlBin(t *testing.T, ctx context.Context, bin, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.CommandContext(ctx, bin, append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}

// kubectlBinaries are the kubectl on PATH and the oldest release beside it (kubectl.1.27, as
// the Google Cloud CLI ships them), when there is one.
func kubectlBinaries(t *testing.T) []string {
	t.Helper()
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("this test drives the real kubectl, and none is on PATH: %v", err)
	}
	bins := []string{bin}
	if resolved, err := filepath.EvalSymlinks(bin); err == nil {
		if old := filepath.Join(filepath.Dir(resolved), "kubectl.1.27"); fileExists(old) {
			bins = append(bins, old)
		}
	}
	return bins
}

// eventually retries kubectl until its answer (the last line, after any warnings) is want:
// the authorizer reads roles and bindings
// through informers, which see a new binding a moment after it is stored.
func eventually(t *testing.T, ctx context.Context, kubeconfig, want string, args ...string) {
	t.Helper()
	var out string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		out, _ = kubectlAs(t, ctx, kubeconfig, args...)
		return lastLine(out) == strings.TrimSpace(want), nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: %q, want %q", strings.Join(args, " "), out, want)
	}
}

func mustCreate[T any](t *testing.T, ctx context.Context, create func(context.Context, T, metav1.CreateOptions) (T, error), obj T) {
	t.Helper()
	if _, err := create(ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lastLine is kubectl's answer without the warnings before it.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}

var podReader = []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}

// TestRBACRoleBinding: a user of the cluster CA gets 403 with Kubernetes' message; a Role and
// a RoleBinding let the user, a group, or a service account list pods in that namespace only;
// kubectl shows roles and bindings with Kubernetes' columns.
func TestRBACRoleBinding(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns, other := newNamespace(t, ctx, c.Client), newNamespace(t, ctx, c.Client)
	jane := newRBACUser(t, c, "jane", "readers-"+ns)
	robot := newRBACUser(t, c, "system:serviceaccount:"+ns+":robot", "system:serviceaccounts", "system:serviceaccounts:"+ns)

	out, err := kubectlAs(t, ctx, jane.kubeconfig, "get", "pods", "-n", ns)
	want := `Error from server (Forbidden): pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "` + ns + `"`
	if err == nil || strings.TrimSpace(out) != want {
		t.Fatalf("jane before any binding: %q, %v; want %q", out, err, want)
	}

	mustCreate(t, ctx, c.Client.RbacV1().Roles(ns).Create, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"}, Rules: podReader})
	// Neither subject names its API group: defaulting gives User and Group the rbac group.
	mustCreate(t, ctx, c.Client.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "pod-reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "Group", Name: "readers-" + ns},
			{Kind: "ServiceAccount", Name: "robot", Namespace: ns},
		},
	})
	empty := "No resources found in " + ns + " namespace.\n"
	eventually(t, ctx, jane.kubeconfig, empty, "get", "pods", "-n", ns)
	eventually(t, ctx, robot.kubeconfig, empty, "get", "pods", "-n", ns)

	for _, u := range []struct {
		name string
		rbacUser
	}{{"jane", jane}, {"system:serviceaccount:" + ns + ":robot", robot}} {
		out, err := kubectlAs(t, ctx, u.kubeconfig, "get", "pods", "-n", other)
		want := `Error from server (Forbidden): pods is forbidden: User "` + u.name + `" cannot list resource "pods" in API group "" in the namespace "` + other + `"`
		if err == nil || strings.TrimSpace(out) != want {
			t.Errorf("%s in another namespace: %q, %v; want %q", u.name, out, err, want)
		}
		_, err = u.client.CoreV1().Pods(ns).Create(ctx, simplePod("nope"), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || err.Error() != `pods is forbidden: User "`+u.name+`" cannot create resource "pods" in API group "" in the namespace "`+ns+`"` {
			t.Errorf("%s creating a pod: %v", u.name, err)
		}
	}

	rb, err := c.Client.RbacV1().RoleBindings(ns).Get(ctx, "readers", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rb.RoleRef.APIGroup != rbacv1.GroupName || rb.Subjects[0].APIGroup != rbacv1.GroupName || rb.Subjects[1].APIGroup != "" {
		t.Errorf("defaults: roleRef %+v, subjects %+v", rb.RoleRef, rb.Subjects)
	}

	out, err = kubectlAs(t, ctx, cluster.AdminKubeconfigPath(c.DataDir), "get", "rolebindings", "-n", ns, "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 ||
		strings.Join(strings.Fields(lines[0]), " ") != "NAME ROLE AGE USERS GROUPS SERVICEACCOUNTS" {
		t.Fatalf("kubectl get rolebindings -o wide: %q, %v", out, err)
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[0] != "readers" || f[1] != "Role/pod-reader" || f[3] != "readers-"+ns || f[4] != ns+"/robot" {
		t.Errorf("rolebinding row %q", lines[1])
	}
	out, err = kubectlAs(t, ctx, cluster.AdminKubeconfigPath(c.DataDir), "get", "roles", "-n", ns)
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if err != nil || len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME CREATED AT" ||
		!strings.HasPrefix(lines[1], "pod-reader ") || !strings.HasSuffix(lines[1], "Z") {
		t.Errorf("kubectl get roles: %q, %v", out, err)
	}

	// Server-side apply knows the rbac types: the apply records its manager's fields.
	applied, err := c.Client.RbacV1().Roles(ns).Apply(ctx, rbacv1ac.Role("applied", ns).WithRules(
		rbacv1ac.PolicyRule().WithVerbs("get").WithAPIGroups("").WithResources("configmaps")), metav1.ApplyOptions{FieldManager: "rbac-test"})
	if err != nil || len(applied.ManagedFields) != 1 || applied.ManagedFields[0].Manager != "rbac-test" ||
		applied.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("applying a role: %+v, %v", applied, err)
	}

	// The role a binding refers to cannot change.
	rb.RoleRef.Name = "other"
	_, err = c.Client.RbacV1().RoleBindings(ns).Update(ctx, rb, metav1.UpdateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "roleRef: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing roleRef: %v, want 422 field is immutable", err)
	}
	// Upstream's validation messages and field paths.
	_, err = c.Client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "bad"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}}, {Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
	}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "rules[0].verbs: Required value: verbs must contain at least one value") ||
		!strings.Contains(err.Error(), `rules[1].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs`) {
		t.Errorf("an invalid role: %v", err)
	}
}

// TestRBACCanI: kubectl auth can-i answers as a real cluster does, for verbs, namespaces,
// --list, --as and --as-group; impersonation is itself authorized by RBAC.
func TestRBACCanI(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	admin := cluster.AdminKubeconfigPath(c.DataDir)
	ns, other := newNamespace(t, ctx, c.Client), newNamespace(t, ctx, c.Client)
	alice := newRBACUser(t, c, "alice-"+ns)
	mustCreate(t, ctx, c.Client.RbacV1().Roles(ns).Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "dev"},
		Rules: append([]rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}}},
			podReader...),
	})
	mustCreate(t, ctx, c.Client.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "dev"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "dev", APIGroup: rbacv1.GroupName},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice-" + ns}, {Kind: "Group", Name: "devs-" + ns}},
	})
	eventually(t, ctx, alice.kubeconfig, "yes\n", "auth", "can-i", "list", "pods", "-n", ns)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "pods", "-n", ns}, "yes"},
		{[]string{"watch", "pods/web", "-n", ns}, "yes"},
		{[]string{"create", "leases.coordination.k8s.io", "-n", ns}, "yes"},
		{[]string{"delete", "pods", "-n", ns}, "no"},
		{[]string{"list", "pods", "-n", other}, "no"},
		{[]string{"list", "pods", "--all-namespaces"}, "no"},
		{[]string{"create", "selfsubjectaccessreviews.authorization.k8s.io"}, "yes"},
		// Anyone may read /healthz: system:public-info-viewer.
		{[]string{"get", "/healthz"}, "yes"},
		{[]string{"post", "/healthz"}, "no"},
	} {
		for _, bin := range kubectlBinaries(t) {
			out, err := kubectlBin(t, ctx, bin, alice.kubeconfig, append([]string{"auth", "can-i"}, tt.args...)...)
			// kubectl exits 1 for "no".
			if lastLine(out) != tt.want || (err == nil) != (tt.want == "yes") {
				t.Errorf("alice: %s auth can-i %s: %q, %v; want %s", filepath.Base(bin), strings.Join(tt.args, " "), out, err, tt.want)
			}
		}
	}

	for _, bin := range kubectlBinaries(t) {
		out, err := kubectlBin(t, ctx, bin, alice.kubeconfig, "auth", "can-i", "--list", "-n", ns)
		if err != nil {
			t.Fatalf("%s auth can-i --list: %q, %v", filepath.Base(bin), out, err)
		}
		canIList(t, out)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"list", "pods", "-n", ns, "--as", "alice-" + ns}, "yes"},
		{[]string{"delete", "pods", "-n", ns, "--as", "alice-" + ns}, "no"},
		{[]string{"list", "pods", "-n", ns, "--as", "bob"}, "no"},
		{[]string{"list", "pods", "-n", ns, "--as", "bob", "--as-group", "devs-" + ns}, "yes"},
		{[]string{"list", "pods", "-n", other, "--as", "bob", "--as-group", "devs-" + ns}, "no"},
		{[]string{"*", "*"}, "yes"},
	} {
		out, err := kubectlAs(t, ctx, admin, append([]string{"auth", "can-i"}, tt.args...)...)
		if strings.TrimSpace(out) != tt.want || (err == nil) != (tt.want == "yes") {
			t.Errorf("admin: kubectl auth can-i %s: %q, %v; want %s", strings.Join(tt.args, " "), out, err, tt.want)
		}
	}

	// A user who may impersonate alice, and nobody else.
	imp := newRBACUser(t, c, "impersonator-"+ns)
	mustCreate(t, ctx, c.Client.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-alice-" + ns},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"impersonate"}, APIGroups: []string{""}, Resources: []string{"users"}, ResourceNames: []string{"alice-" + ns}}},
	})
	mustCreate(t, ctx, c.Client.RbacV1().ClusterRoleBindings().Create, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "impersonate-alice-" + ns},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "impersonate-alice-" + ns, APIGroup: rbacv1.GroupName},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "impersonator-" + ns, APIGroup: rbacv1.GroupName}},
	})
	eventually(t, ctx, imp.kubeconfig, "yes\n", "auth", "can-i", "list", "pods", "-n", ns, "--as", "alice-"+ns)
	out, err := kubectlAs(t, ctx, imp.kubeconfig, "get", "pods", "-n", ns, "--as", "bob")
	want := `Error from server (Forbidden): users "bob" is forbidden: User "impersonator-` + ns + `" cannot impersonate resource "users" in API group "" at the cluster scope`
	if err == nil || strings.TrimSpace(out) != want {
		t.Errorf("impersonating bob: %q, %v; want %q", out, err, want)
	}
	out, err = kubectlAs(t, ctx, imp.kubeconfig, "get", "pods", "-n", ns)
	if err == nil || !contains(out, `User "impersonator-`+ns+`" cannot list resource "pods"`) {
		t.Errorf("the impersonator as itself: %q, %v", out, err)
	}

	// A local review asks about its own namespace, and names the binding that allows.
	review, err := c.Client.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice-" + ns,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "list", Resource: "pods"}},
	}, metav1.CreateOptions{})
	wantReason := `RBAC: allowed by RoleBinding "dev/` + ns + `" of Role "dev" to User "alice-` + ns + `"`
	if err != nil || !review.Status.Allowed || review.Status.Reason != wantReason {
		t.Errorf("local review: %+v, %v; want allowed, %q", review, err, wantReason)
	}
	_, err = c.Client.AuthorizationV1().LocalSubjectAccessReviews(ns).Create(ctx, &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "alice-" + ns,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: other, Verb: "list", Resource: "pods"}},
	}, metav1.CreateOptions{})
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsInvalid(err) || status.Status().Details.Causes[0].Field != "spec.resourceAttributes.namespace" {
		t.Errorf("a local review of another namespace: %v, want 422 naming spec.resourceAttributes.namespace", err)
	}
	// A rules review lists what RBAC grants (here only what the bootstrap policy gives every
	// authenticated user), and RBAC's list is complete.
	rules, err := newRBACUser(t, c, "nobody-"+ns).client.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
	if err != nil || rules.Status.Incomplete || rules.Status.EvaluationError != "" || len(rules.Status.NonResourceRules) == 0 {
		t.Fatalf("a rules review: %+v, %v", rules, err)
	}
	for _, r := range rules.Status.ResourceRules {
		if r.APIGroups[0] != "authorization.k8s.io" && r.APIGroups[0] != "authentication.k8s.io" {
			t.Errorf("nobody holds %+v", r)
		}
	}
}

// canIList checks kubectl auth can-i --list for alice: her Role's rules and those the
// bootstrap policy gives every authenticated user (system:basic-user, system:discovery,
// system:public-info-viewer), one row per rule, as a real cluster lists them.
func canIList(t *testing.T, out string) {
	t.Helper()
	var resources, paths []string
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if h := strings.Join(strings.Fields(lines[0]), " "); h != "Resources Non-Resource URLs Resource Names Verbs" {
		t.Errorf("kubectl auth can-i --list header %q", h)
	}
	for _, line := range lines[1:] {
		row := strings.Join(strings.Fields(line), " ")
		if strings.HasPrefix(row, "[") {
			paths = append(paths, row)
		} else {
			resources = append(resources, row)
		}
	}
	want := []string{
		"selfsubjectreviews.authentication.k8s.io [] [] [create]",
		"selfsubjectaccessreviews.authorization.k8s.io [] [] [create]",
		"selfsubjectrulesreviews.authorization.k8s.io [] [] [create]",
		"leases.coordination.k8s.io [] [] [create]",
		"pods [] [] [get list watch]",
	}
	if strings.Join(resources, "\n") != strings.Join(want, "\n") {
		t.Errorf("kubectl auth can-i --list resources:\n%s\nwant\n%s", strings.Join(resources, "\n"), strings.Join(want, "\n"))
	}
	for _, p := range []string{"[/api] [] [get]", "[/apis/*] [] [get]", "[/healthz] [] [get]", "[/version] [] [get]"} {
		if !slices.Contains(paths, p) {
			t.Errorf("kubectl auth can-i --list lacks %q:\n%s", p, out)
		}
	}
}

// TestRBACEscalation: a user who may create role bindings but holds few rules cannot bind a
// ClusterRole with more (403 with upstream's text), can bind what they hold, and can bind
// more once allowed to `bind` it; the same for writing roles, and `escalate`.
func TestRBACEscalation(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	name := "mallory-" + ns
	mallory := newRBACUser(t, c, name, "escalators")
	mustCreate(t, ctx, c.Client.RbacV1().Roles(ns).Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "binder"},
		Rules: append([]rbacv1.PolicyRule{{Verbs: []string{"create", "update", "get"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"rolebindings", "roles"}}},
			podReader...),
	})
	mustCreate(t, ctx, c.Client.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "binder"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "binder", APIGroup: rbacv1.GroupName},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: name, APIGroup: rbacv1.GroupName}},
	})
	big, small := "secrets-"+ns, "pods-"+ns
	mustCreate(t, ctx, c.Client.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: big},
		Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"secrets"}},
			{Verbs: []string{"list", "delete"}, APIGroups: []string{""}, Resources: []string{"pods"}},
		},
	})
	mustCreate(t, ctx, c.Client.RbacV1().ClusterRoles().Create, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: small}, Rules: podReader})
	eventually(t, ctx, mallory.kubeconfig, "yes\n", "auth", "can-i", "create", "rolebindings.rbac.authorization.k8s.io", "-n", ns)

	out, err := kubectlAs(t, ctx, mallory.kubeconfig, "create", "rolebinding", "grab", "--clusterrole", big, "--user", name, "-n", ns)
	want := `rolebindings.rbac.authorization.k8s.io "grab" is forbidden: user "` + name + `" (groups=["escalators" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}
{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list"]}`
	if err == nil || !contains(out, want) {
		t.Errorf("binding a bigger role: %q, %v; want %q", out, err, want)
	}
	if out, err := kubectlAs(t, ctx, mallory.kubeconfig, "create", "rolebinding", "fine", "--clusterrole", small, "--user", name, "-n", ns); err != nil {
		t.Errorf("binding a role whose rules mallory holds: %q, %v", out, err)
	}
	_, err = mallory.client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "more"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"secrets"}}},
	}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !contains(err.Error(), `roles.rbac.authorization.k8s.io "more" is forbidden: user "`+name+`"`) ||
		!contains(err.Error(), `{APIGroups:[""], Resources:["secrets"], Verbs:["*"]}`) {
		t.Errorf("writing a role with rules mallory lacks: %v", err)
	}

	// `bind` on the role, and `escalate` on roles, lift the check.
	mustCreate(t, ctx, c.Client.RbacV1().Roles(ns).Create, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "delegate"},
		Rules: []rbacv1.PolicyRule{
			{Verbs: []string{"bind"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"clusterroles"}, ResourceNames: []string{big}},
			{Verbs: []string{"escalate"}, APIGroups: []string{"rbac.authorization.k8s.io"}, Resources: []string{"roles"}},
		},
	})
	mustCreate(t, ctx, c.Client.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "delegate"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "delegate", APIGroup: rbacv1.GroupName},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: name, APIGroup: rbacv1.GroupName}},
	})
	eventually(t, ctx, mallory.kubeconfig, "yes\n", "auth", "can-i", "bind", "clusterroles.rbac.authorization.k8s.io/"+big, "-n", ns)
	if out, err := kubectlAs(t, ctx, mallory.kubeconfig, "create", "rolebinding", "grab", "--clusterrole", big, "--user", name, "-n", ns); err != nil {
		t.Errorf("binding a bigger role with bind: %q, %v", out, err)
	}
	_, err = mallory.client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "more"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"secrets"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Errorf("writing a role with escalate: %v", err)
	}
	// A binding to a role that does not exist, by a user who may not bind it, is refused with
	// a 404 that, as upstream's, names the role in the request's resource (the store reads
	// the role with the request's context).
	_, err = newRBACUser(t, c, name).client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "ghost"},
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "ghost", APIGroup: rbacv1.GroupName},
	}, metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || err.Error() != `rolebindings.rbac.authorization.k8s.io "ghost" not found` {
		t.Errorf("binding a missing role: %v", err)
	}
}

// TestRBACBootstrapEscalation: with the bootstrap roles, a namespace's `admin` may create
// role bindings there but not one to cluster-admin (403, upstream's text), and `edit` may not
// create role bindings at all.
func TestRBACBootstrapEscalation(t *testing.T) {
	c := sharedCluster(t)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	for _, role := range []string{"admin", "edit"} {
		mustCreate(t, ctx, c.Client.RbacV1().RoleBindings(ns).Create, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: role, APIGroup: rbacv1.GroupName},
			Subjects:   []rbacv1.Subject{{Kind: "User", Name: role + "-" + ns, APIGroup: rbacv1.GroupName}},
		})
	}
	admin, edit := newRBACUser(t, c, "admin-"+ns), newRBACUser(t, c, "edit-"+ns)
	// admin and edit are aggregated by the clusterrole-aggregation controller.
	eventually(t, ctx, admin.kubeconfig, "yes", "auth", "can-i", "create", "rolebindings.rbac.authorization.k8s.io", "-n", ns)
	eventually(t, ctx, edit.kubeconfig, "yes", "auth", "can-i", "create", "configmaps", "-n", ns)

	out, err := kubectlAs(t, ctx, admin.kubeconfig, "create", "rolebinding", "root", "--clusterrole", "cluster-admin", "--user", "admin-"+ns, "-n", ns)
	want := `rolebindings.rbac.authorization.k8s.io "root" is forbidden: user "admin-` + ns + `" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}`
	if err == nil || !contains(out, want) {
		t.Errorf("admin binding cluster-admin: %q, %v; want %q", out, err, want)
	}
	if out, err := kubectlAs(t, ctx, admin.kubeconfig, "create", "rolebinding", "viewers", "--clusterrole", "view", "--group", "viewers", "-n", ns); err != nil {
		t.Errorf("admin binding view: %q, %v", out, err)
	}
	out, err = kubectlAs(t, ctx, edit.kubeconfig, "create", "rolebinding", "root", "--clusterrole", "cluster-admin", "--user", "edit-"+ns, "-n", ns)
	want = `rolebindings.rbac.authorization.k8s.io is forbidden: User "edit-` + ns + `" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "` + ns + `"`
	if err == nil || !contains(out, want) {
		t.Errorf("edit binding cluster-admin: %q, %v; want %q", out, err, want)
	}
}
