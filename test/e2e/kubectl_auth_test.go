package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/yaml"

	"github.com/berth-cluster/berth/pkg/auth/rbac"
)

// upstreamPolicy is kube-apiserver v1.37.2's bootstrap policy as its own test data states it
// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata in the module cache): the answers a
// real cluster gives are computed from it, never from berth's copy.
type upstreamPolicy struct {
	roles    map[string]rbacv1.ClusterRole
	bindings []rbacv1.ClusterRoleBinding
}

func loadUpstreamPolicy(t *testing.T) upstreamPolicy {
	t.Helper()
	cmd := exec.Command("go", "mod", "download", "-json", "k8s.io/kubernetes@v1.37.2")
	cmd.Dir = t.TempDir() // outside berth's module, which must not require it
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod download k8s.io/kubernetes@v1.37.2: %v", err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download -json: %v %s", err, out)
	}
	dir := filepath.Join(mod.Dir, "plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata")
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	var roles struct{ Items []rbacv1.ClusterRole }
	var bindings struct{ Items []rbacv1.ClusterRoleBinding }
	read("cluster-roles.yaml", &roles)
	read("cluster-role-bindings.yaml", &bindings)
	p := upstreamPolicy{roles: map[string]rbacv1.ClusterRole{}, bindings: bindings.Items}
	for _, r := range roles.Items {
		p.roles[r.Name] = r
	}
	return p
}

// rules are a cluster role's rules, with those its aggregation rule collects (admin takes
// edit's, which takes view's).
func (p upstreamPolicy) rules(t *testing.T, name string) []rbacv1.PolicyRule {
	t.Helper()
	role, ok := p.roles[name]
	if !ok {
		t.Fatalf("upstream has no cluster role %s", name)
	}
	if role.AggregationRule == nil {
		return role.Rules
	}
	var out []rbacv1.PolicyRule
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		s, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			t.Fatal(err)
		}
		for other, r := range p.roles {
			if other != name && s.Matches(labels.Set(r.Labels)) {
				out = append(out, p.rules(t, other)...)
			}
		}
	}
	return out
}

// clusterRules are what the bootstrap bindings give a user in groups everywhere.
func (p upstreamPolicy) clusterRules(t *testing.T, user string, groups []string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, b := range p.bindings {
		for _, s := range b.Subjects {
			if (s.Kind == rbacv1.UserKind && s.Name == user) || (s.Kind == rbacv1.GroupKind && slices.Contains(groups, s.Name)) {
				out = append(out, p.rules(t, b.RoleRef.Name)...)
			}
		}
	}
	return out
}

// TestKubectlAuthCanI: `kubectl auth can-i` gives, for users bound to the bootstrap roles
// view, edit and admin in a namespace (by user, by group, and through --as/--as-group
// impersonation), the answers upstream's own definitions of those roles give; --list lists
// them; `kubectl auth whoami` names the user; and a user with edit or admin cannot bind
// cluster-admin (escalation), in Kubernetes' words.
func TestKubectlAuthCanI(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	policy := loadUpstreamPolicy(t)
	ns := c.newNamespace(t)
	c.must(t, "create", "rolebinding", "viewers", "-n", ns, "--clusterrole=view", "--user=vera")
	c.must(t, "create", "rolebinding", "editors", "-n", ns, "--clusterrole=edit", "--group=editors")
	c.must(t, "create", "rolebinding", "admins", "-n", ns, "--clusterrole=admin", "--user=ada")

	subjects := []struct {
		user   string
		groups []string
		role   string
	}{
		{"vera", nil, "view"},
		{"ed", []string{"editors"}, "edit"},
		{"ada", nil, "admin"},
		{"nobody", nil, ""},
	}
	// Only resources berth serves: kubectl sends an unknown one ungrouped, and the answer is
	// "no" on any cluster (deployments.apps joins with the workloads).
	checks := []struct{ verb, resource, group, sub string }{
		{"get", "pods", "", ""}, {"list", "pods", "", ""}, {"create", "pods", "", ""}, {"delete", "pods", "", ""},
		{"get", "pods", "", "log"}, {"create", "pods", "", "exec"}, {"create", "pods", "", "eviction"},
		{"get", "secrets", "", ""}, {"list", "secrets", "", ""}, {"update", "configmaps", "", ""},
		{"create", "serviceaccounts", "", "token"}, {"impersonate", "serviceaccounts", "", ""},
		{"get", "roles", "rbac.authorization.k8s.io", ""}, {"create", "rolebindings", "rbac.authorization.k8s.io", ""},
		{"create", "localsubjectaccessreviews", "authorization.k8s.io", ""}, {"update", "resourcequotas", "", ""},
		{"get", "namespaces", "", ""}, {"delete", "namespaces", "", ""},
	}
	for _, s := range subjects {
		groups := append([]string{"system:authenticated"}, s.groups...)
		allowed := policy.clusterRules(t, s.user, groups)
		var local []rbacv1.PolicyRule
		if s.role != "" {
			local = policy.rules(t, s.role)
		}
		for _, ch := range checks {
			a := authorizer.AttributesRecord{Verb: ch.verb, APIGroup: ch.group, Resource: ch.resource, Subresource: ch.sub, Namespace: ns, ResourceRequest: true}
			if ch.resource == "namespaces" {
				a.Name = ns // a namespace's own object is reached through a RoleBinding in it
			}
			want := "no"
			if rbac.RulesAllow(a, allowed...) || rbac.RulesAllow(a, local...) {
				want = "yes"
			}
			resource := ch.resource
			if ch.group != "" {
				resource += "." + ch.group
			}
			if ch.resource == "namespaces" {
				resource += "/" + ns
			}
			args := []string{"auth", "can-i", ch.verb, resource, "-n", ns, "--as", s.user}
			if ch.sub != "" {
				args = append(args, "--subresource", ch.sub)
			}
			for _, g := range s.groups {
				args = append(args, "--as-group", g)
			}
			r := c.kubectl(t, args...)
			if got := strings.TrimSpace(r.stdout); got != want {
				t.Errorf("%s (%s): can-i %s %s/%s: %q, want %q (upstream's %s role)\n%s", s.user, strings.Join(s.groups, ","), ch.verb, resource, ch.sub, got, want, s.role, r)
			}
		}
	}

	// Cluster-wide, the bootstrap bindings of system:authenticated only.
	for _, ch := range []struct{ verb, resource, want string }{
		{"create", "selfsubjectaccessreviews.authorization.k8s.io", "yes"},
		{"create", "selfsubjectrulesreviews.authorization.k8s.io", "yes"},
		{"create", "selfsubjectreviews.authentication.k8s.io", "yes"},
		{"list", "nodes", "no"},
		{"get", "pods", "no"},
	} {
		r := c.kubectl(t, "auth", "can-i", ch.verb, ch.resource, "--all-namespaces", "--as", "vera")
		if got := strings.TrimSpace(r.stdout); got != ch.want {
			t.Errorf("vera: can-i %s %s cluster-wide: %q, want %q\n%s", ch.verb, ch.resource, got, ch.want, r)
		}
	}
	if got := strings.TrimSpace(c.kubectl(t, "auth", "can-i", "get", "/version", "--as", "vera").stdout); got != "yes" {
		t.Errorf("vera may not get /version: %q", got)
	}

	// --list: vera's rules in the namespace include view's pods rule.
	list := c.must(t, "auth", "can-i", "--list", "-n", ns, "--as", "vera")
	wantHeader(t, list, "Resources", "Non-Resource URLs", "Resource Names", "Verbs")
	wantMatch(t, list, `(?m)^pods\s+\[\]\s+\[\]\s+\[get list watch\]$`, `(?m)^selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]$`)
	if strings.Contains(list, "secrets ") {
		t.Errorf("view lists secrets:\n%s", list)
	}

	// whoami, for the admin and for an impersonated user.
	wantMatch(t, c.must(t, "auth", "whoami"), `(?m)^Username\s+admin$`, `(?m)^Groups\s+\[system:masters system:authenticated\]$`)
	wantMatch(t, c.must(t, "auth", "whoami", "--as", "ed", "--as-group", "editors"), `(?m)^Username\s+ed$`, `(?m)^Groups\s+\[editors system:authenticated\]$`)

	// Escalation: edit may not create bindings at all; admin may, but not to a role it does
	// not hold.
	for _, who := range []struct{ user, group, want string }{
		{"ed", "editors", fmt.Sprintf(`rolebindings.rbac.authorization.k8s.io is forbidden: User "ed" cannot create resource "rolebindings" in API group "rbac.authorization.k8s.io" in the namespace "%s"`, ns)},
		{"ada", "", `rolebindings.rbac.authorization.k8s.io "escalate" is forbidden: user "ada" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:`},
	} {
		args := []string{"create", "rolebinding", "escalate", "-n", ns, "--clusterrole=cluster-admin", "--user=" + who.user, "--as", who.user}
		if who.group != "" {
			args = append(args, "--as-group", who.group)
		}
		r := c.kubectl(t, args...)
		if r.code == 0 || !strings.Contains(r.stderr, who.want) {
			t.Errorf("%s binding cluster-admin: want 403 with %q\n%s", who.user, who.want, r)
		}
	}
	// A user from `berth kubeconfig` (not impersonated) gets nothing until bound.
	frank := userKubeconfig(t, c, "frank", "contractors")
	r := runKubectl(t, kubectlBin, frank, nil, "", "get", "pods", "-n", ns)
	wantContains(t, r.stderr, fmt.Sprintf(`pods is forbidden: User "frank" cannot list resource "pods" in API group "" in the namespace "%s"`, ns))
}

// TestKubectlCreateToken: `kubectl create token` issues a token of the service account with
// kube-apiserver's claims; a client holding only that token is the service account (whoami),
// and a TokenReview says so.
func TestKubectlCreateToken(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	c.must(t, "create", "serviceaccount", "robot", "-n", ns)
	token := strings.TrimSpace(c.must(t, "create", "token", "robot", "-n", ns, "--duration=20m"))
	claims := jwtClaims(t, token)
	if claims.Sub != "system:serviceaccount:"+ns+":robot" || claims.Exp-claims.Iat != 1200 || claims.Kubernetes.Namespace != ns || claims.Kubernetes.ServiceAccount.Name != "robot" {
		t.Errorf("claims: %+v", claims)
	}
	if claims.Iss == "" || len(claims.Aud) == 0 {
		t.Errorf("the token names no issuer or audience: %+v", claims)
	}

	// A kubeconfig with the token only.
	kubeconfig := filepath.Join(t.TempDir(), "robot.kubeconfig")
	caFile := filepath.Join(c.dataDir, "pki", "ca.crt")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: berth, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: robot, user: {token: %q}}]
contexts: [{name: robot, context: {cluster: berth, user: robot, namespace: %s}}]
current-context: robot
`, c.url(), caFile, token, ns)), 0o600); err != nil {
		t.Fatal(err)
	}
	whoami := mustSucceed(t, runKubectl(t, kubectlBin, kubeconfig, nil, "", "auth", "whoami"))
	wantMatch(t, whoami, fmt.Sprintf(`(?m)^Username\s+system:serviceaccount:%s:robot$`, ns),
		fmt.Sprintf(`(?m)^Groups\s+\[system:serviceaccounts system:serviceaccounts:%s system:authenticated\]$`, ns))
	r := runKubectl(t, kubectlBin, kubeconfig, nil, "", "get", "secrets")
	wantContains(t, r.stderr, fmt.Sprintf(`secrets is forbidden: User "system:serviceaccount:%s:robot" cannot list resource "secrets" in API group "" in the namespace "%s"`, ns, ns))

	review := c.mustIn(t, fmt.Sprintf(`{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": %q}}`, token),
		"create", "-o", "jsonpath={.status.authenticated} {.status.user.username}", "-f", "-")
	if want := "true system:serviceaccount:" + ns + ":robot"; strings.TrimSpace(review) != want {
		t.Errorf("TokenReview: %q, want %q", review, want)
	}
	// Deleting the account invalidates its tokens.
	c.must(t, "delete", "serviceaccount", "robot", "-n", ns)
	eventually(t, podTimeout, "the deleted account's token to be refused", func() bool {
		r := runKubectl(t, kubectlBin, kubeconfig, nil, "", "auth", "whoami")
		return r.code != 0 && strings.Contains(r.stderr, "Unauthorized")
	})
}
