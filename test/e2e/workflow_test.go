package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// TestKubectlDryRunAndDiff: apply --dry-run=server stores nothing; kubectl diff shows what
// an apply would change, and nothing when it would change nothing.
func TestKubectlDryRunAndDiff(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	if out := c.mustIn(t, podManifest(ns, "dry", "busybox:1.36"), "apply", "--dry-run=server", "-f", "-"); out != "pod/dry created (server dry run)\n" {
		t.Errorf("apply --dry-run=server said %q", out)
	}
	if r := c.kubectl(t, "get", "pod", "dry", "-n", ns); r.code == 0 || !strings.Contains(r.stderr, `pods "dry" not found`) {
		t.Errorf("a dry-run pod was stored:\n%s", r)
	}
	// The dry run still validates.
	r := c.kubectlIn(t, strings.Replace(podManifest(ns, "dry", "busybox:1.36"), "    image: busybox:1.36\n", "", 1), "apply", "--dry-run=server", "-f", "-")
	if r.code == 0 || !strings.Contains(r.stderr, `spec.containers[0].image: Required value`) {
		t.Errorf("a dry run of an invalid pod:\n%s", r)
	}

	c.mustIn(t, podManifest(ns, "live", "busybox:1.36"), "apply", "-f", "-")
	rv := c.must(t, "get", "pod", "live", "-n", ns, "-o", "jsonpath={.metadata.resourceVersion}")
	if out := c.mustIn(t, podManifest(ns, "live", "busybox:1.37"), "apply", "--dry-run=server", "-f", "-"); out != "pod/live configured (server dry run)\n" {
		t.Errorf("apply --dry-run=server of a change said %q", out)
	}
	if out := c.must(t, "get", "pod", "live", "-n", ns, "-o", "jsonpath={.spec.containers[0].image} {.metadata.resourceVersion}"); out != "busybox:1.36 "+rv {
		t.Errorf("after a dry-run update: image and resourceVersion %q, want busybox:1.36 %s", out, rv)
	}

	r = c.kubectlIn(t, podManifest(ns, "live", "busybox:1.36"), "diff", "-f", "-")
	if r.code != 0 || r.stdout != "" {
		t.Errorf("diff of the live manifest, want exit 0 and no output:\n%s", r)
	}
	r = c.kubectlIn(t, podManifest(ns, "live", "busybox:1.37"), "diff", "-f", "-")
	if r.code != 1 {
		t.Errorf("diff of a change, want exit code 1:\n%s", r)
	}
	wantMatch(t, r.stdout, `^-  - image: busybox:1\.36$`, `^\+  - image: busybox:1\.37$`, `^-  generation: 1$`, `^\+  generation: 2$`)
	r = c.kubectlIn(t, podManifest(ns, "new", "busybox:1.36"), "diff", "-f", "-")
	if r.code != 1 {
		t.Errorf("diff of a new object, want exit code 1:\n%s", r)
	}
	wantMatch(t, r.stdout, `^\+  name: new$`, `^\+  restartPolicy: Always$`)
	if c.kubectl(t, "get", "pod", "new", "-n", ns).code == 0 {
		t.Error("kubectl diff created the pod")
	}
}

// TestKubectlReplace: replace writes a whole object; a stale resourceVersion conflicts.
func TestKubectlReplace(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, podManifest(ns, "web", "busybox:1.36"), "apply", "-f", "-")

	live := c.must(t, "get", "pod", "web", "-n", ns, "-o", "yaml")
	replaced := strings.Replace(live, "image: busybox:1.36", "image: busybox:1.37", 1)
	if out := c.mustIn(t, replaced, "replace", "-f", "-"); out != "pod/web replaced\n" {
		t.Errorf("replace said %q", out)
	}
	if out := c.must(t, "get", "pod", "web", "-n", ns, "-o", "jsonpath={.spec.containers[0].image} {.metadata.generation}"); out != "busybox:1.37 2" {
		t.Errorf("after replace: image and generation %q", out)
	}
	// The same body again carries the old resourceVersion.
	r := c.kubectlIn(t, strings.Replace(live, "image: busybox:1.36", "image: busybox:1.38", 1), "replace", "-f", "-")
	if r.code == 0 {
		t.Fatalf("a replace with a stale resourceVersion succeeded:\n%s", r)
	}
	wantContains(t, r.stderr, `Error from server (Conflict)`, `Operation cannot be fulfilled on pods "web": the object has been modified; please apply your changes to the latest version and try again`)
	// --force deletes and re-creates: a new UID.
	uid := c.must(t, "get", "pod", "web", "-n", ns, "-o", "jsonpath={.metadata.uid}")
	out := c.mustIn(t, podManifest(ns, "web", "busybox:1.38"), "replace", "--force", "-f", "-")
	wantContains(t, out, `pod "web" deleted`, "pod/web replaced")
	if got := c.must(t, "get", "pod", "web", "-n", ns, "-o", "jsonpath={.metadata.uid} {.spec.containers[0].image}"); strings.HasPrefix(got, uid) || !strings.HasSuffix(got, "busybox:1.38") {
		t.Errorf("after replace --force: uid and image %q (old uid %s)", got, uid)
	}
}

// TestKubectlWaitForDelete: kubectl wait --for=delete waits for finalizers, and returns at
// once for an unbound pod.
func TestKubectlWaitForDelete(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)

	held := strings.Replace(podManifest(ns, "held", "busybox:1.36"), "  labels:\n", "  finalizers:\n  - e2e.berth.io/hold\n  labels:\n", 1)
	c.mustIn(t, held, "apply", "-f", "-")
	if out := c.must(t, "delete", "pod", "held", "-n", ns, "--wait=false"); !strings.HasPrefix(out, `pod "held" deleted`) {
		t.Errorf("delete said %q", out)
	}
	if out := c.must(t, "get", "pod", "held", "-n", ns, "-o", "jsonpath={.metadata.deletionTimestamp}"); out == "" {
		t.Error("a pod with a finalizer has no deletionTimestamp after delete")
	}
	wantPrefix(t, row(t, c.must(t, "get", "pods", "-n", ns), "held"), "held", "0/1", "Terminating", "0")
	w, err := startProcess("kubectl wait --for=delete", kubectlBin, "--kubeconfig", c.kubeconfig(), "wait", "--for=delete", "pod/held", "-n", ns, "--timeout=60s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.kill()
	time.Sleep(time.Second)
	if w.exited() {
		t.Fatalf("kubectl wait returned while the finalizer holds the pod (%v):\n%s", w.err, w.output.String())
	}
	c.must(t, "patch", "pod", "held", "-n", ns, "--type", "json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	select {
	case <-w.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("kubectl wait did not return within 30 s of the finalizer's removal:\n%s", w.output.String())
	}
	if w.err != nil || w.stdout.String() != "pod/held condition met\n" {
		t.Errorf("kubectl wait: %v\n%s", w.err, w.output.String())
	}

	c.mustIn(t, podManifest(ns, "free", "busybox:1.36"), "apply", "-f", "-")
	c.must(t, "delete", "pod", "free", "-n", ns, "--wait=false")
	start := time.Now()
	r := c.kubectl(t, "wait", "--for=delete", "pod/free", "-n", ns, "--timeout=30s")
	// kubectl wait on an object already gone may print nothing or "condition met".
	if r.code != 0 || time.Since(start) > 10*time.Second {
		t.Errorf("kubectl wait for an unbound pod's deletion took %s:\n%s", time.Since(start), r)
	}
}

// TestPodDefaults: kubectl get -o yaml of a minimal pod shows the defaults a real cluster
// fills in (defaulting and admission).
func TestPodDefaults(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, podManifest(ns, "minimal", "busybox:1.36"), "apply", "-f", "-")
	out := c.must(t, "get", "pod", "minimal", "-n", ns, "-o", "yaml")
	wantMatch(t, out,
		`^  restartPolicy: Always$`,
		`^  dnsPolicy: ClusterFirst$`,
		`^  terminationGracePeriodSeconds: 30$`,
		`^  schedulerName: default-scheduler$`,
		`^  serviceAccountName: default$`,
		`^  serviceAccount: default$`,
		`^  priority: 0$`,
		`^  enableServiceLinks: true$`,
		`^  preemptionPolicy: PreemptLowerPriority$`,
		`^  securityContext: \{\}$`,
		`^    imagePullPolicy: IfNotPresent$`,
		`^    terminationMessagePath: /dev/termination-log$`,
		`^    terminationMessagePolicy: File$`,
		`^  phase: Pending$`,
		`^  qosClass: BestEffort$`,
	)
	var pod corev1.Pod
	if err := yaml.Unmarshal([]byte(out), &pod); err != nil {
		t.Fatalf("parsing kubectl get -o yaml: %v\n%s", err, out)
	}
	seconds := int64(300)
	want := []corev1.Toleration{
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds},
	}
	if got := fmt.Sprint(tolerations(pod.Spec.Tolerations)); got != fmt.Sprint(tolerations(want)) {
		t.Errorf("tolerations %s, want %s", got, tolerations(want))
	}
	if pod.Spec.Priority == nil || *pod.Spec.Priority != 0 {
		t.Errorf("priority %v, want 0", pod.Spec.Priority)
	}
	if pod.Generation != 1 || pod.UID == "" || pod.CreationTimestamp.IsZero() {
		t.Errorf("metadata: generation %d, uid %q, creationTimestamp %v", pod.Generation, pod.UID, pod.CreationTimestamp)
	}

	// Defaults that depend on the pod: :latest or no tag pulls Always; requests without
	// limits are Burstable; limits alone become requests (Guaranteed); a negative grace
	// period becomes 1.
	for _, tc := range []struct {
		name, container, extra string
		jsonpath, want         string
	}{
		{"latest", "    image: busybox:latest\n", "", "{.spec.containers[0].imagePullPolicy}", "Always"},
		{"untagged", "    image: busybox\n", "", "{.spec.containers[0].imagePullPolicy}", "Always"},
		{"burstable", "    image: busybox:1.36\n    resources:\n      requests:\n        cpu: 100m\n", "", "{.status.qosClass}", "Burstable"},
		{"guaranteed", "    image: busybox:1.36\n    resources:\n      limits:\n        cpu: 100m\n        memory: 64Mi\n", "",
			"{.status.qosClass} {.spec.containers[0].resources.requests.cpu} {.spec.containers[0].resources.requests.memory}", "Guaranteed 100m 64Mi"},
		{"negative-grace", "    image: busybox:1.36\n", "  terminationGracePeriodSeconds: -5\n", "{.spec.terminationGracePeriodSeconds}", "1"},
		{"host-network", "    image: busybox:1.36\n    ports:\n    - containerPort: 8080\n", "  hostNetwork: true\n",
			"{.spec.dnsPolicy} {.spec.containers[0].ports[0].protocol} {.spec.containers[0].ports[0].hostPort}", "ClusterFirst TCP 8080"},
	} {
		manifest := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n%s  containers:\n  - name: c\n%s",
			tc.name, ns, tc.extra, tc.container)
		c.mustIn(t, manifest, "apply", "-f", "-")
		if got := c.must(t, "get", "pod", tc.name, "-n", ns, "-o", "jsonpath="+tc.jsonpath); got != tc.want {
			t.Errorf("%s: %s is %q, want %q", tc.name, tc.jsonpath, got, tc.want)
		}
	}
}

func tolerations(ts []corev1.Toleration) []string {
	var out []string
	for _, t := range ts {
		s := fmt.Sprintf("%s:%s op=%s", t.Key, t.Effect, t.Operator)
		if t.TolerationSeconds != nil {
			s += fmt.Sprintf(" for %ds", *t.TolerationSeconds)
		}
		out = append(out, s)
	}
	return out
}
