package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestPodBindingAndEviction: a pod bound by a Binding manifest (as a scheduler would), its
// status written as a node agent would, then graceful deletion, force deletion and
// kubectl drain (which evicts).
func TestPodBindingAndEviction(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	node := "e2e-bind-node"
	// Tainted, so that the scheduler puts no other test's pod there.
	c.mustIn(t, fmt.Sprintf("apiVersion: v1\nkind: Node\nmetadata:\n  name: %s\nspec:\n  taints:\n  - key: e2e.berth.io/manual\n    effect: NoSchedule\nstatus:\n  capacity:\n    cpu: \"4\"\n    memory: 8Gi\n    pods: \"110\"\n", node), "apply", "-f", "-")
	t.Cleanup(func() { c.kubectl(t, "delete", "node", node, "--wait=false") })
	if out := c.must(t, "get", "node", node, "-o", "jsonpath={.status.allocatable}"); out != `{"cpu":"4","memory":"8Gi","pods":"110"}` {
		t.Errorf("allocatable %s, want it defaulted from capacity", out)
	}

	binding := func(pod string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Binding\nmetadata:\n  name: %s\n  namespace: %s\ntarget:\n  apiVersion: v1\n  kind: Node\n  name: %s\n", pod, ns, node)
	}
	bind := func(pod string) {
		t.Helper()
		// kubectl validates a Binding (a kind with no PATCH endpoint) against the OpenAPI
		// after listing CRDs to rule out a custom resource; a real cluster lets it through.
		r := c.kubectlIn(t, binding(pod), "create", "-f", "-")
		if r.code != 0 {
			t.Errorf("kubectl create -f of a Binding (with kubectl's default validation) failed:\n%s", r)
			c.mustIn(t, binding(pod), "create", "--validate=false", "-f", "-")
		}
	}
	for _, pod := range []string{"bound", "drained"} {
		c.mustIn(t, manualPodManifest(ns, pod, "busybox:1.36"), "apply", "-f", "-")
		bind(pod)
	}
	out := c.must(t, "get", "pods", "-n", ns, "-o", "wide")
	for _, pod := range []string{"bound", "drained"} {
		if r := row(t, out, pod); len(r) < 7 || r[6] != node {
			t.Errorf("row %q, want NODE %s", strings.Join(r, " "), node)
		}
	}
	r := c.kubectlIn(t, binding("bound"), "create", "--validate=false", "-f", "-")
	if r.code == 0 {
		t.Errorf("a second binding succeeded:\n%s", r)
	}
	wantContains(t, r.stderr, `Error from server (Conflict)`, `Operation cannot be fulfilled on pods/binding "bound": pod bound is already assigned to node "`+node+`"`)
	if out := c.must(t, "get", "pods", "-n", ns, "--field-selector", "spec.nodeName="+node, "-o", "name"); out != "pod/bound\npod/drained\n" {
		t.Errorf("field selector spec.nodeName=%s found %q", node, out)
	}

	// The node agent's part: the status subresource.
	status := `{"status":{"phase":"Running","hostIP":"10.0.0.9","podIP":"10.244.1.5","podIPs":[{"ip":"10.244.1.5"}],` +
		`"startTime":"2026-01-01T00:00:00Z","conditions":[{"type":"Ready","status":"True"}],` +
		`"containerStatuses":[{"name":"c","ready":true,"started":true,"restartCount":2,"image":"busybox:1.36","imageID":"",` +
		`"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}},` +
		`"lastState":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"` + time.Now().UTC().Add(-time.Hour).Format(time.RFC3339) + `"}}}]}}`
	c.must(t, "patch", "pod", "bound", "-n", ns, "--subresource", "status", "--type", "merge", "-p", status)
	out = c.must(t, "get", "pods", "-n", ns, "-o", "wide")
	wantMatch(t, out, `^bound\s+1/1\s+Running\s+2 \((59m|60m|61m) ago\)\s+\S+\s+10\.244\.1\.5\s+`+node+`\s+<none>\s+<none>$`)
	out = c.must(t, "describe", "pod", "bound", "-n", ns)
	wantMatch(t, out, `^Node:\s+`+node+`/10\.0\.0\.9$`, `^Status:\s+Running$`, `^IP:\s+10\.244\.1\.5$`,
		`^    State:\s+Running$`, `^    Last State:\s+Terminated$`, `^      Reason:\s+Error$`, `^    Restart Count:\s+2$`, `^    Ready:\s+True$`)
	out = c.must(t, "describe", "node", node)
	wantMatch(t, out, `^Non-terminated Pods:\s+\(2 in total\)$`, `^\s+`+ns+`\s+bound\s+`)

	// A bound pod waits for its node agent: graceful deletion only marks it.
	c.must(t, "delete", "pod", "bound", "-n", ns, "--wait=false")
	out = c.must(t, "get", "pod", "bound", "-n", ns, "-o", "jsonpath={.metadata.deletionGracePeriodSeconds} {.metadata.deletionTimestamp}")
	var grace int
	var ts string
	if _, err := fmt.Sscan(out, &grace, &ts); err != nil || grace != 30 {
		t.Errorf("deletionGracePeriodSeconds and deletionTimestamp %q, want 30 and a time", out)
	} else if when, err := time.Parse(time.RFC3339, ts); err != nil || time.Until(when) < 15*time.Second || time.Until(when) > 31*time.Second {
		t.Errorf("deletionTimestamp %s, want about 30 s from now (the grace period)", ts)
	}
	wantPrefix(t, row(t, c.must(t, "get", "pods", "-n", ns), "bound"), "bound", "1/1", "Terminating")
	r = c.kubectl(t, "delete", "pod", "bound", "-n", ns, "--grace-period=0", "--force")
	if r.code != 0 || !strings.Contains(r.stdout, `pod "bound" force deleted`) {
		t.Errorf("force delete:\n%s", r)
	}

	// kubectl drain cordons the node and evicts its pods through pods/eviction.
	r = c.kubectl(t, "drain", node, "--grace-period=0", "--force", "--timeout=30s")
	if r.code != 0 {
		t.Fatalf("kubectl drain:\n%s", r)
	}
	wantContains(t, r.stdout+r.stderr, "node/"+node+" cordoned", "evicting pod "+ns+"/drained", "pod/drained evicted", "node/"+node+" drained")
	if out := c.must(t, "get", "pods", "-n", ns, "-o", "name"); out != "" {
		t.Errorf("pods left after drain: %q", out)
	}
	wantPrefix(t, row(t, c.must(t, "get", "nodes"), node), node, "Unknown,SchedulingDisabled")
}

// TestNamespaceLifecycle: a deleted namespace is Terminating while content with finalizers
// remains, refuses new content meanwhile, and goes once the content does.
func TestNamespaceLifecycle(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)

	out := c.must(t, "get", "namespaces")
	wantHeader(t, out, "NAME", "STATUS", "AGE")
	for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
		wantPrefix(t, row(t, out, ns), ns, "Active")
	}
	wantHeader(t, c.must(t, "get", "serviceaccounts", "-n", "default"), "NAME", "AGE")

	ns := c.newNamespace(t)
	held := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: %s\n  finalizers:\n  - e2e.berth.io/hold\n", ns)
	c.mustIn(t, held, "apply", "-f", "-")
	c.mustIn(t, podManifest(ns, "doomed", "busybox:1.36"), "apply", "-f", "-")
	if out := c.must(t, "delete", "namespace", ns, "--wait=false"); !strings.HasPrefix(out, `namespace "`+ns+`" deleted`) {
		t.Errorf("delete said %q", out)
	}
	wantPrefix(t, row(t, c.must(t, "get", "namespace", ns), ns), ns, "Terminating")
	r := c.kubectl(t, "create", "configmap", "late", "-n", ns)
	if r.code == 0 || !strings.Contains(r.stderr, `configmaps "late" is forbidden: unable to create new content in namespace `+ns+` because it is being terminated`) {
		t.Errorf("creating in a terminating namespace:\n%s", r)
	}
	// The controller empties the namespace: the pod goes, the held config map stays.
	eventually(t, 30*time.Second, "the namespace controller to delete the pod", func() bool {
		return c.kubectl(t, "get", "pods", "-n", ns, "-o", "name").stdout == ""
	})
	out = c.must(t, "get", "namespace", ns, "-o", "yaml")
	wantMatch(t, out, `^  phase: Terminating$`, `^    type: NamespaceFinalizersRemaining$`, `e2e\.berth\.io/hold`)

	c.must(t, "patch", "configmap", "held", "-n", ns, "--type", "json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	r = c.kubectl(t, "wait", "--for=delete", "namespace/"+ns, "--timeout=60s")
	if r.code != 0 {
		t.Errorf("the namespace did not go within 60 s of its last finalizer:\n%s", r)
	}
}

// TestPriorityAndServiceAccountAdmission: the built-in priority classes, a pod's priority
// from its class, and the admission errors for a missing class or service account.
func TestPriorityAndServiceAccountAdmission(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	out := c.must(t, "get", "priorityclasses")
	wantHeader(t, out, "NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY")
	wantPrefix(t, row(t, out, "system-node-critical"), "system-node-critical", "2000001000", "false")
	wantPrefix(t, row(t, out, "system-cluster-critical"), "system-cluster-critical", "2000000000", "false")

	class := "e2e-" + ns
	c.mustIn(t, fmt.Sprintf("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: %s\nvalue: 1000\npreemptionPolicy: Never\ndescription: e2e\n", class), "apply", "-f", "-")
	t.Cleanup(func() { c.kubectl(t, "delete", "priorityclass", class) })
	wantPrefix(t, row(t, c.must(t, "get", "pc", class), class), class, "1000", "false")

	pod := func(name, specLine string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  %s\n  containers:\n  - name: c\n    image: busybox\n", name, ns, specLine)
	}
	c.mustIn(t, pod("important", "priorityClassName: "+class), "apply", "-f", "-")
	if out := c.must(t, "get", "pod", "important", "-n", ns, "-o", "jsonpath={.spec.priority} {.spec.preemptionPolicy}"); out != "1000 Never" {
		t.Errorf("priority and preemptionPolicy from the class: %q", out)
	}
	wantMatch(t, c.must(t, "describe", "pod", "important", "-n", ns), `^Priority:\s+1000$`, `^Priority Class Name:\s+`+class+`$`)

	r := c.kubectlIn(t, pod("unknown-class", "priorityClassName: nope"), "apply", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `pods "unknown-class" is forbidden: no PriorityClass with name nope was found`) {
		t.Errorf("a pod of an unknown priority class:\n%s", r)
	}
	r = c.kubectlIn(t, pod("unknown-sa", "serviceAccountName: nobody"), "apply", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `pods "unknown-sa" is forbidden: error looking up service account `+ns+`/nobody: serviceaccount "nobody" not found`) {
		t.Errorf("a pod of an unknown service account:\n%s", r)
	}
}
