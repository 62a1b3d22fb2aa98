package e2e

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// podManifest is a pod of one container with a label app=NAME.
func podManifest(ns, name, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: %s
  labels:
    app: %s
spec:
  containers:
  - name: c
    image: %s
`, name, ns, name, image)
}

// manualPodManifest is a pod no scheduler takes (its schedulerName is nobody's), for tests
// that bind it themselves or want no scheduler's events about it.
func manualPodManifest(ns, name, image string) string {
	return podManifest(ns, name, image) + "  schedulerName: e2e-manual\n"
}

// TestKubectlPods: the everyday pod commands, with the output a real cluster gives for a pod
// that no scheduler has bound.
func TestKubectlPods(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	if out := c.mustIn(t, podManifest(ns, "web", "busybox:1.36"), "apply", "-f", "-"); out != "pod/web created\n" {
		t.Errorf("apply said %q, want pod/web created", out)
	}
	out := c.must(t, "get", "pods", "-n", ns)
	wantHeader(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	if rows := table(out); len(rows) != 2 {
		t.Errorf("want one pod row:\n%s", out)
	}
	wantPrefix(t, row(t, out, "web"), "web", "0/1", "Pending", "0")

	out = c.must(t, "get", "pods", "-n", ns, "-o", "wide")
	wantHeader(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE", "NOMINATED", "NODE", "READINESS", "GATES")
	r := row(t, out, "web")
	if len(r) != 9 || strings.Join(r[5:], " ") != "<none> <none> <none> <none>" {
		t.Errorf("wide row %q, want IP, NODE, NOMINATED NODE and READINESS GATES all <none>", strings.Join(r, " "))
	}

	// kubectl get also names pods by type/name and by the short name.
	if out := c.must(t, "get", "po/web", "-n", ns, "-o", "name"); out != "pod/web\n" {
		t.Errorf("get -o name said %q", out)
	}
	if out := c.must(t, "get", "pods", "-n", ns, "-l", "app=web", "-o", "jsonpath={.items[*].metadata.name}"); out != "web" {
		t.Errorf("label selector app=web found %q", out)
	}
	if out := c.must(t, "get", "pods", "-n", ns, "--field-selector", "status.phase=Pending", "-o", "name"); out != "pod/web\n" {
		t.Errorf("field selector status.phase=Pending found %q", out)
	}

	// The scheduler finds no node for it (the e2e nodes have no room, or a taint) and says so.
	c.must(t, "wait", "--for=condition=PodScheduled=false", "pod/web", "-n", ns, "--timeout=30s")
	out = c.must(t, "describe", "pod", "web", "-n", ns)
	wantMatch(t, out,
		`^Name:\s+web$`,
		`^Namespace:\s+`+ns+`$`,
		`^Service Account:\s+default$`,
		`^Node:\s+<none>$`,
		`^Labels:\s+app=web$`,
		`^Status:\s+Pending$`,
		`^Containers:$`,
		`^  c:$`,
		`^    Image:\s+busybox:1\.36$`,
		`^QoS Class:\s+BestEffort$`,
		`^Tolerations:\s+node\.kubernetes\.io/not-ready:NoExecute op=Exists for 300s$`,
		`^Events:$`,
		// With no node at all kube-scheduler says the first; with nodes that do not fit, the second.
		`^\s+Warning\s+FailedScheduling\s+\S+\s+default-scheduler\s+(no nodes available to schedule pods|0/\d+ nodes are available: )`,
	)

	// Client-side apply: a changed manifest is "configured", the same one "unchanged".
	changed := strings.Replace(podManifest(ns, "web", "busybox:1.37"), "    app: web\n", "    app: web\n    tier: front\n", 1)
	if out := c.mustIn(t, changed, "apply", "-f", "-"); out != "pod/web configured\n" {
		t.Errorf("apply of a changed manifest said %q", out)
	}
	if out := c.mustIn(t, changed, "apply", "-f", "-"); out != "pod/web unchanged\n" {
		t.Errorf("apply of the same manifest said %q", out)
	}
	if out := c.must(t, "get", "pod", "web", "-n", ns, "-o", "jsonpath={.spec.containers[0].image} {.metadata.labels.tier}"); out != "busybox:1.37 front" {
		t.Errorf("after apply: image and tier %q", out)
	}
	if r := c.kubectlIn(t, podManifest(ns, "web", "busybox:1.36"), "create", "-f", "-"); r.code == 0 ||
		!strings.Contains(r.stderr, `Error from server (AlreadyExists): error when creating "STDIN": pods "web" already exists`) {
		t.Errorf("create of an existing pod:\n%s", r)
	}

	// The three patch types, then label and annotate.
	for _, p := range []struct{ kind, patch string }{
		{"strategic", `{"metadata":{"labels":{"strategic":"yes"}}}`},
		{"merge", `{"metadata":{"labels":{"merge":"yes"}}}`},
		{"json", `[{"op":"add","path":"/metadata/labels/json","value":"yes"}]`},
	} {
		if out := c.must(t, "patch", "pod", "web", "-n", ns, "--type", p.kind, "-p", p.patch); out != "pod/web patched\n" {
			t.Errorf("%s patch said %q", p.kind, out)
		}
	}
	// A strategic patch merges the containers list by name instead of replacing it.
	c.must(t, "patch", "pod", "web", "-n", ns, "-p", `{"spec":{"containers":[{"name":"c","image":"busybox:1.38"}]}}`)
	if out := c.must(t, "label", "pod", "web", "-n", ns, "color=blue"); out != "pod/web labeled\n" {
		t.Errorf("label said %q", out)
	}
	if r := c.kubectl(t, "label", "pod", "web", "-n", ns, "color=red"); r.code == 0 || !strings.Contains(r.stderr, "'color' already has a value (blue), and --overwrite is false") {
		t.Errorf("label without --overwrite:\n%s", r)
	}
	c.must(t, "label", "pod", "web", "-n", ns, "color=red", "--overwrite")
	c.must(t, "label", "pod", "web", "-n", ns, "tier-")
	if out := c.must(t, "annotate", "pod", "web", "-n", ns, "e2e.berth.io/note=hello"); out != "pod/web annotated\n" {
		t.Errorf("annotate said %q", out)
	}
	out = c.must(t, "get", "pod", "web", "-n", ns, "--show-labels")
	wantPrefix(t, row(t, out, "web"), "web", "0/1", "Pending", "0")
	if got, want := row(t, out, "web")[5], "app=web,color=red,json=yes,merge=yes,strategic=yes"; got != want {
		t.Errorf("labels %q, want %q", got, want)
	}
	out = c.must(t, "get", "pod", "web", "-n", ns, "-o", `jsonpath={.metadata.annotations.e2e\.berth\.io/note} {.spec.containers[*].name} {.spec.containers[0].image}`)
	if out != "hello c busybox:1.38" {
		t.Errorf("annotation, containers and image %q, want %q", out, "hello c busybox:1.38")
	}

	// kubectl edit, with a scripted editor.
	edit := c.runEnv(t, kubectlBin, []string{"EDITOR=sed -i s/busybox:1.38/busybox:1.39/", "KUBE_EDITOR="}, "", "edit", "pod", "web", "-n", ns)
	if edit.code != 0 || edit.stdout != "pod/web edited\n" {
		t.Errorf("kubectl edit:\n%s", edit)
	}
	if out := c.must(t, "get", "pod", "web", "-n", ns, "-o", "jsonpath={.spec.containers[0].image}"); out != "busybox:1.39" {
		t.Errorf("image after kubectl edit %q", out)
	}

	// An unbound pod has nothing to stop, so delete returns at once.
	start := time.Now()
	if out := c.must(t, "delete", "pod", "web", "-n", ns); !strings.HasPrefix(out, `pod "web" deleted`) {
		t.Errorf("delete said %q", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("deleting an unbound pod took %s", d)
	}
	if r := c.kubectl(t, "get", "pod", "web", "-n", ns); r.code == 0 || !strings.Contains(r.stderr, `Error from server (NotFound): pods "web" not found`) {
		t.Errorf("get after delete:\n%s", r)
	}
}

// TestKubectlServerSideApply: apply --server-side creates, records kubectl as the manager,
// refuses a conflicting manager and yields to --force-conflicts.
func TestKubectlServerSideApply(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	if out := c.mustIn(t, podManifest(ns, "ssa", "busybox:1.36"), "apply", "--server-side", "-f", "-"); out != "pod/ssa serverside-applied\n" {
		t.Errorf("apply --server-side said %q", out)
	}
	out := c.must(t, "get", "pod", "ssa", "-n", ns, "-o", "yaml", "--show-managed-fields")
	wantMatch(t, out, `^    manager: kubectl$`, `^    operation: Apply$`, `^\s+f:image: \{\}$`)

	other := podManifest(ns, "ssa", "busybox:1.37")
	r := c.kubectlIn(t, other, "apply", "--server-side", "--field-manager", "other", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `Apply failed with 1 conflict: conflict with "kubectl": .spec.containers[name="c"].image`) {
		t.Errorf("a conflicting apply:\n%s", r)
	}
	c.mustIn(t, other, "apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "-")
	if out := c.must(t, "get", "pod", "ssa", "-n", ns, "-o", "jsonpath={.spec.containers[0].image}"); out != "busybox:1.37" {
		t.Errorf("image after --force-conflicts %q", out)
	}

	// Server-side apply of a config map, then a change of its data.
	cm := func(v string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: %s\ndata:\n  key: %q\n", ns, v)
	}
	c.mustIn(t, cm("one"), "apply", "--server-side", "-f", "-")
	c.mustIn(t, cm("two"), "apply", "--server-side", "-f", "-")
	if out := c.must(t, "get", "configmap", "applied", "-n", ns, "-o", "jsonpath={.data.key}"); out != "two" {
		t.Errorf("config map data after two applies %q", out)
	}
}

// TestKubectlConfigMapsAndSecrets: create from manifests and from literals, the columns,
// describe, patch, delete.
func TestKubectlConfigMapsAndSecrets(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	manifest := fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: %s
data:
  color: blue
  size: large
binaryData:
  blob: AAEC
`, ns)
	if out := c.mustIn(t, manifest, "create", "-f", "-"); out != "configmap/settings created\n" {
		t.Errorf("create said %q", out)
	}
	if out := c.must(t, "create", "configmap", "literal", "-n", ns, "--from-literal=a=1"); out != "configmap/literal created\n" {
		t.Errorf("create configmap said %q", out)
	}
	out := c.must(t, "get", "configmaps", "-n", ns)
	wantHeader(t, out, "NAME", "DATA", "AGE")
	wantPrefix(t, row(t, out, "settings"), "settings", "3")
	wantPrefix(t, row(t, out, "literal"), "literal", "1")
	out = c.must(t, "describe", "configmap", "settings", "-n", ns)
	wantMatch(t, out, `^Name:\s+settings$`, `^Namespace:\s+`+ns+`$`, `^color:$`, `^blue$`, `^BinaryData$`, `^blob: 3 bytes$`)
	c.must(t, "patch", "configmap", "settings", "-n", ns, "--type", "merge", "-p", `{"data":{"color":"green","size":null}}`)
	if out := c.must(t, "get", "cm", "settings", "-n", ns, "-o", "jsonpath={.data}"); out != `{"color":"green"}` {
		t.Errorf("data after merge patch %s", out)
	}

	if out := c.must(t, "create", "secret", "generic", "creds", "-n", ns, "--from-literal=password=hunter2"); out != "secret/creds created\n" {
		t.Errorf("create secret said %q", out)
	}
	secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: tls-ish
  namespace: %s
type: e2e.berth.io/custom
stringData:
  token: abc
`, ns)
	c.mustIn(t, secret, "apply", "-f", "-")
	out = c.must(t, "get", "secrets", "-n", ns)
	wantHeader(t, out, "NAME", "TYPE", "DATA", "AGE")
	wantPrefix(t, row(t, out, "creds"), "creds", "Opaque", "1")
	wantPrefix(t, row(t, out, "tls-ish"), "tls-ish", "e2e.berth.io/custom", "1")
	if out := c.must(t, "get", "secret", "creds", "-n", ns, "-o", "jsonpath={.data.password}"); out != base64.StdEncoding.EncodeToString([]byte("hunter2")) {
		t.Errorf("secret data %q", out)
	}
	if out := c.must(t, "get", "secret", "tls-ish", "-n", ns, "-o", "jsonpath={.data.token}"); out != base64.StdEncoding.EncodeToString([]byte("abc")) {
		t.Errorf("stringData became %q, want base64 of abc in data", out)
	}
	out = c.must(t, "describe", "secret", "creds", "-n", ns)
	wantMatch(t, out, `^Name:\s+creds$`, `^Type:\s+Opaque$`, `^password:\s+7 bytes$`)
	if strings.Contains(out, "hunter2") {
		t.Errorf("describe shows the secret's value:\n%s", out)
	}
	c.must(t, "label", "secret", "creds", "-n", ns, "team=e2e")
	c.must(t, "annotate", "configmap", "literal", "-n", ns, "note=x")
	if out := c.must(t, "get", "secrets,configmaps", "-n", ns, "-l", "team=e2e", "-o", "name"); out != "secret/creds\n" {
		t.Errorf("selecting by label found %q", out)
	}

	// Paging: kubectl lists in chunks, following the continue token; the API tells how many
	// items remain.
	r := c.kubectl(t, "get", "configmaps", "-n", ns, "--chunk-size=1", "-v=6")
	if r.code != 0 || !strings.Contains(r.stderr, "&limit=1 200 OK") || !strings.Contains(r.stderr, "continue=") {
		t.Errorf("kubectl get --chunk-size=1 did not page with continue tokens:\n%s", r)
	}
	wantPrefix(t, row(t, r.stdout, "settings"), "settings", "2") // color and blob, after the patch
	wantPrefix(t, row(t, r.stdout, "literal"), "literal", "1")
	raw := c.must(t, "get", "--raw", "/api/v1/namespaces/"+ns+"/configmaps?limit=1")
	wantMatch(t, raw, `"continue":"[^"]+"`, `"remainingItemCount":[1-9]`)

	out = c.must(t, "delete", "configmap,secret", "--all", "-n", ns)
	wantContains(t, out, `configmap "settings" deleted`, `configmap "literal" deleted`, `secret "creds" deleted`, `secret "tls-ish" deleted`)
	if out := c.must(t, "get", "secrets", "-n", ns, "-o", "name"); out != "" {
		t.Errorf("secrets left after delete --all: %q", out)
	}
}

// TestKubectlNodes: a node registered by hand, its columns as they change with labels,
// cordon, taints and a status patch.
func TestKubectlNodes(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	const node = "e2e-node-1"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  labels:
    kubernetes.io/hostname: %s
    node-role.kubernetes.io/worker: ""
spec:
  podCIDR: 10.244.7.0/24
`, node, node)
	if out := c.mustIn(t, manifest, "apply", "-f", "-"); out != "node/"+node+" created\n" {
		t.Errorf("apply said %q", out)
	}
	out := c.must(t, "get", "nodes")
	wantHeader(t, out, "NAME", "STATUS", "ROLES", "AGE", "VERSION")
	// No Ready condition yet: a real cluster says Unknown, and the version is empty.
	wantPrefix(t, row(t, out, node), node, "Unknown", "worker")
	if r := row(t, out, node); len(r) != 4 {
		t.Errorf("row %q, want an empty VERSION", strings.Join(r, " "))
	}

	if out := c.must(t, "cordon", node); out != "node/"+node+" cordoned\n" {
		t.Errorf("cordon said %q", out)
	}
	if out := c.must(t, "taint", "nodes", node, "dedicated=e2e:NoSchedule"); out != "node/"+node+" tainted\n" {
		t.Errorf("taint said %q", out)
	}
	wantPrefix(t, row(t, c.must(t, "get", "nodes"), node), node, "Unknown,SchedulingDisabled")

	status := `{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"ready",` +
		`"lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}],` +
		`"nodeInfo":{"kubeletVersion":"v1.37.2","osImage":"E2E Linux","kernelVersion":"6.1.0","containerRuntimeVersion":"containerd://2.0.0"},` +
		`"addresses":[{"type":"InternalIP","address":"10.0.0.7"}],"capacity":{"cpu":"4","memory":"8Gi","pods":"110"}}}`
	if out := c.must(t, "patch", "node", node, "--subresource", "status", "--type", "merge", "-p", status); out != "node/"+node+" patched\n" {
		t.Errorf("status patch said %q", out)
	}
	out = c.must(t, "get", "nodes", "-o", "wide")
	wantHeader(t, out, "NAME", "STATUS", "ROLES", "AGE", "VERSION", "INTERNAL-IP", "EXTERNAL-IP", "OS-IMAGE", "KERNEL-VERSION", "CONTAINER-RUNTIME")
	r := row(t, out, node)
	wantPrefix(t, r, node, "Ready,SchedulingDisabled", "worker")
	if len(r) < 11 || strings.Join(r[4:], " ") != "v1.37.2 10.0.0.7 <none> E2E Linux 6.1.0 containerd://2.0.0" {
		t.Errorf("wide row %q", strings.Join(r, " "))
	}
	// A patch of the main resource must not touch the status, nor one of the status the spec.
	c.must(t, "patch", "node", node, "--type", "merge", "-p", `{"status":{"nodeInfo":{"kubeletVersion":"v0.0.0"}}}`)
	if out := c.must(t, "get", "node", node, "-o", "jsonpath={.status.nodeInfo.kubeletVersion}"); out != "v1.37.2" {
		t.Errorf("a patch of the node (not /status) changed the status: kubeletVersion %q", out)
	}

	if out := c.must(t, "uncordon", node); out != "node/"+node+" uncordoned\n" {
		t.Errorf("uncordon said %q", out)
	}
	c.must(t, "label", "node", node, "zone=a")
	c.must(t, "annotate", "node", node, "e2e.berth.io/owner=test")
	out = c.must(t, "describe", "node", node)
	wantMatch(t, out,
		`^Name:\s+`+node+`$`,
		`^Roles:\s+worker$`,
		`^\s+zone=a$`,
		`^Annotations:\s+e2e\.berth\.io/owner: test$`,
		`^Taints:\s+dedicated=e2e:NoSchedule$`,
		`^Unschedulable:\s+false$`,
		`^\s+Ready\s+True\s.*KubeletReady\s+ready$`,
		`^\s+InternalIP:\s+10\.0\.0\.7$`,
		`^PodCIDR:\s+10\.244\.7\.0/24$`,
	)
	wantPrefix(t, row(t, c.must(t, "get", "nodes", "-l", "zone=a"), node), node, "Ready", "worker")

	if out := c.must(t, "delete", "node", node); !strings.HasPrefix(out, `node "`+node+`" deleted`) {
		t.Errorf("delete said %q", out)
	}
	if r := c.kubectl(t, "get", "node", node); r.code == 0 || !strings.Contains(r.stderr, `nodes "`+node+`" not found`) {
		t.Errorf("get after delete:\n%s", r)
	}
}

// TestKubectlLeases: coordination.k8s.io leases through kubectl.
func TestKubectlLeases(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	manifest := fmt.Sprintf(`apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: leader
  namespace: %s
spec:
  holderIdentity: e2e-a
  leaseDurationSeconds: 40
  leaseTransitions: 0
`, ns)
	if out := c.mustIn(t, manifest, "apply", "-f", "-"); out != "lease.coordination.k8s.io/leader created\n" {
		t.Errorf("apply said %q", out)
	}
	out := c.must(t, "get", "leases", "-n", ns)
	wantHeader(t, out, "NAME", "HOLDER", "AGE")
	wantPrefix(t, row(t, out, "leader"), "leader", "e2e-a")

	c.must(t, "patch", "lease", "leader", "-n", ns, "--type", "merge", "-p", `{"spec":{"holderIdentity":"e2e-b","leaseTransitions":1}}`)
	wantPrefix(t, row(t, c.must(t, "get", "lease.coordination.k8s.io", "-n", ns), "leader"), "leader", "e2e-b")
	c.mustIn(t, strings.Replace(manifest, "e2e-a", "e2e-c", 1), "apply", "--server-side", "--force-conflicts", "-f", "-")
	if out := c.must(t, "get", "lease", "leader", "-n", ns, "-o", "jsonpath={.spec.holderIdentity} {.spec.leaseTransitions}"); out != "e2e-c 0" {
		t.Errorf("holder and transitions after server-side apply: %q", out)
	}
	c.must(t, "label", "lease", "leader", "-n", ns, "app=e2e")
	out = c.must(t, "describe", "lease", "leader", "-n", ns)
	wantMatch(t, out, `^Name:\s+leader$`, `^Labels:\s+app=e2e$`, `^\s+Holder Identity:\s+e2e-c$`, `^\s+Lease Duration Seconds:\s+40$`)

	bad := strings.Replace(manifest, "leaseDurationSeconds: 40", "leaseDurationSeconds: 0", 1)
	if r := c.kubectlIn(t, strings.Replace(bad, "name: leader", "name: bad", 1), "create", "-f", "-"); r.code == 0 ||
		!strings.Contains(r.stderr, `spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0`) {
		t.Errorf("a lease of 0 s:\n%s", r)
	}
	if out := c.must(t, "delete", "lease", "leader", "-n", ns); !strings.HasPrefix(out, `lease.coordination.k8s.io "leader" deleted`) {
		t.Errorf("delete said %q", out)
	}
}

// TestKubectlEvents: core/v1 and events.k8s.io/v1 events, listed by kubectl get events and
// shown by kubectl describe under the object they are about.
func TestKubectlEvents(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, manualPodManifest(ns, "subject", "busybox:1.36"), "apply", "-f", "-")
	uid := c.must(t, "get", "pod", "subject", "-n", ns, "-o", "jsonpath={.metadata.uid}")

	now := time.Now().UTC().Add(-time.Minute).Format(time.RFC3339)
	core := fmt.Sprintf(`apiVersion: v1
kind: Event
metadata:
  name: subject.core
  namespace: %[1]s
involvedObject:
  apiVersion: v1
  kind: Pod
  name: subject
  namespace: %[1]s
  uid: %[2]s
reason: Testing
message: hello from core v1
type: Normal
source:
  component: e2e
count: 3
firstTimestamp: "%[3]s"
lastTimestamp: "%[3]s"
`, ns, uid, now)
	if out := c.mustIn(t, core, "create", "-f", "-"); out != "event/subject.core created\n" {
		t.Errorf("create said %q", out)
	}
	micro := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	modern := fmt.Sprintf(`apiVersion: events.k8s.io/v1
kind: Event
metadata:
  name: subject.modern
  namespace: %[1]s
regarding:
  apiVersion: v1
  kind: Pod
  name: subject
  namespace: %[1]s
  uid: %[2]s
reason: Checking
note: hello from events.k8s.io
type: Warning
action: Check
reportingController: e2e.berth.io/tester
reportingInstance: tester-1
eventTime: "%[3]s"
`, ns, uid, micro)
	if out := c.mustIn(t, modern, "create", "-f", "-"); out != "event.events.k8s.io/subject.modern created\n" {
		t.Errorf("create said %q", out)
	}

	// Both APIs share one store, as in Kubernetes: kubectl get events lists both.
	out := c.must(t, "get", "events", "-n", ns)
	wantHeader(t, out, "LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE")
	wantMatch(t, out,
		`^\S+\s+Normal\s+Testing\s+pod/subject\s+hello from core v1$`,
		`^\S+\s+Warning\s+Checking\s+pod/subject\s+hello from events\.k8s\.io$`)
	out = c.must(t, "get", "events.v1.events.k8s.io", "-n", ns, "-o", "name")
	wantContains(t, out, "event.events.k8s.io/subject.core", "event.events.k8s.io/subject.modern")
	if out := c.must(t, "get", "events", "-n", ns, "--field-selector", "reason=Testing,involvedObject.kind=Pod", "-o", "name"); out != "event/subject.core\n" {
		t.Errorf("field selector reason=Testing found %q", out)
	}

	out = c.must(t, "describe", "pod", "subject", "-n", ns)
	wantMatch(t, out,
		`^Events:$`,
		`^\s+Type\s+Reason\s+Age\s+From\s+Message$`,
		`^\s+Normal\s+Testing\s+\S+ \(x3 over \S+\)\s+e2e\s+hello from core v1$`,
		`^\s+Warning\s+Checking\s+\S+\s+e2e\.berth\.io/tester\s+hello from events\.k8s\.io$`)

	// An event must say what it is about.
	invalid := fmt.Sprintf("apiVersion: v1\nkind: Event\nmetadata:\n  name: orphan\n  namespace: %s\nreason: Nothing\n", ns)
	if r := c.kubectlIn(t, invalid, "create", "-f", "-"); r.code == 0 || !strings.Contains(r.stderr, `The Event "orphan" is invalid`) ||
		!strings.Contains(r.stderr, "involvedObject.namespace") {
		t.Errorf("an event about nothing:\n%s", r)
	}
	c.must(t, "patch", "event", "subject.core", "-n", ns, "--type", "merge", "-p", `{"count":4}`)
	c.must(t, "label", "event", "subject.core", "-n", ns, "e2e=yes")
	if out := c.must(t, "delete", "events", "-n", ns, "-l", "e2e=yes"); !strings.HasPrefix(out, `event "subject.core" deleted`) {
		t.Errorf("delete said %q", out)
	}
	if out := c.must(t, "get", "events", "-n", ns, "-o", "name"); out != "event/subject.modern\n" {
		t.Errorf("events left %q", out)
	}
}

// TestKubectlExplain: kubectl explain reads the served OpenAPI v3.
func TestKubectlExplain(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	out := mustSucceed(t, kubectl(t, "explain", "pod.spec.containers"))
	wantMatch(t, out,
		`^KIND:\s+Pod$`,
		`^VERSION:\s+v1$`,
		`^FIELD:\s+containers <\[\]Container>$`,
		`^DESCRIPTION:$`,
		`List of containers belonging to the pod`,
		`^FIELDS:$`,
		`^  image\s+<string>$`,
		`^  name\s+<string> -required-$`,
		`^  resources\s+<ResourceRequirements>$`,
	)
	out = c.must(t, "explain", "lease.spec", "--api-version", "coordination.k8s.io/v1")
	wantMatch(t, out, `^GROUP:\s+coordination\.k8s\.io$`, `^KIND:\s+Lease$`, `^  holderIdentity\s+<string>$`)
	out = c.must(t, "explain", "rolebinding.roleRef")
	wantMatch(t, out, `^GROUP:\s+rbac\.authorization\.k8s\.io$`, `^KIND:\s+RoleBinding$`, `^  kind\s+<string> -required-$`)

	out = c.must(t, "api-resources")
	wantHeader(t, out, "NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")
	for _, want := range [][]string{
		{"pods", "po", "v1", "true", "Pod"},
		{"nodes", "no", "v1", "false", "Node"},
		{"configmaps", "cm", "v1", "true", "ConfigMap"},
		{"secrets", "v1", "true", "Secret"},
		{"namespaces", "ns", "v1", "false", "Namespace"},
		{"serviceaccounts", "sa", "v1", "true", "ServiceAccount"},
		{"leases", "coordination.k8s.io/v1", "true", "Lease"},
		{"priorityclasses", "pc", "scheduling.k8s.io/v1", "false", "PriorityClass"},
		{"subjectaccessreviews", "authorization.k8s.io/v1", "false", "SubjectAccessReview"},
		{"selfsubjectaccessreviews", "authorization.k8s.io/v1", "false", "SelfSubjectAccessReview"},
		{"localsubjectaccessreviews", "authorization.k8s.io/v1", "true", "LocalSubjectAccessReview"},
		{"selfsubjectrulesreviews", "authorization.k8s.io/v1", "false", "SelfSubjectRulesReview"},
		{"roles", "rbac.authorization.k8s.io/v1", "true", "Role"},
		{"rolebindings", "rbac.authorization.k8s.io/v1", "true", "RoleBinding"},
		{"clusterroles", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"},
		{"clusterrolebindings", "rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"},
	} {
		wantMatch(t, out, `^`+strings.Join(want, `\s+`)+`$`)
	}
	out = c.must(t, "version", "-o", "yaml")
	wantMatch(t, out, `^  gitVersion: v1\.37\.2\+berth$`, `^  major: "1"$`, `^  minor: "37"$`)
}

// TestKubectlWatch: kubectl get -w prints a second line for a pod when another kubectl
// changes it.
func TestKubectlWatch(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, podManifest(ns, "watched", "busybox:1.36"), "apply", "-f", "-")

	w, err := startProcess("kubectl get pods -w", kubectlBin, "--kubeconfig", c.kubeconfig(), "get", "pods", "-n", ns, "-w")
	if err != nil {
		t.Fatal(err)
	}
	defer w.kill()
	rowsFor := func() int {
		n := 0
		for _, r := range table(w.stdout.String()) {
			if r[0] == "watched" {
				n++
			}
		}
		return n
	}
	// kubectl prints the list first; the watch starts after it.
	eventually(t, 30*time.Second, "the first line of the watch", func() bool { return rowsFor() >= 1 || w.exited() })
	if w.exited() {
		t.Fatalf("kubectl get -w exited (%v):\n%s", w.err, w.output.String())
	}
	c.must(t, "label", "pod", "watched", "-n", ns, "changed=yes")
	eventually(t, 30*time.Second, "a second line for the pod after the label change", func() bool { return rowsFor() >= 2 || w.exited() })
	w.kill()
	out := w.stdout.String()
	wantHeader(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	if n := rowsFor(); n != 2 {
		t.Errorf("%d lines for the pod, want 2 (the list, then one change):\n%s", n, w.output.String())
	}
	for _, r := range dataRows(out) {
		wantPrefix(t, r, "watched", "0/1", "Pending", "0")
	}

	// --output-watch-events names each event, through to the deletion.
	w, err = startProcess("kubectl get pods -w --output-watch-events", kubectlBin, "--kubeconfig", c.kubeconfig(), "get", "pods", "-n", ns, "-w", "--output-watch-events")
	if err != nil {
		t.Fatal(err)
	}
	defer w.kill()
	events := func() string {
		var seen []string
		for _, r := range dataRows(w.stdout.String()) {
			if len(r) > 1 && r[1] == "watched" {
				seen = append(seen, r[0])
			}
		}
		return strings.Join(seen, " ")
	}
	eventually(t, 30*time.Second, "the ADDED event", func() bool { return events() != "" || w.exited() })
	c.must(t, "annotate", "pod", "watched", "-n", ns, "note=1")
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool { return strings.Contains(events(), "MODIFIED") || w.exited() })
	c.must(t, "delete", "pod", "watched", "-n", ns)
	eventually(t, 30*time.Second, "the DELETED event", func() bool { return strings.Contains(events(), "DELETED") || w.exited() })
	w.kill()
	wantHeader(t, w.stdout.String(), "EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE")
	// Deletion may first write the deletionTimestamp (one more MODIFIED), as Kubernetes does
	// even with a grace period of 0; and the scheduler may rewrite the pod's PodScheduled
	// condition meanwhile (this cluster's nodes come and go with other tests).
	if got := events(); !regexp.MustCompile(`^ADDED( MODIFIED)+ DELETED$`).MatchString(got) {
		t.Errorf("watch events %q, want ADDED, MODIFIED (one or more), DELETED:\n%s", got, w.output.String())
	}
}
