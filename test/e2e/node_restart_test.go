package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The node agent on its own, as `berth node` beside a control plane it does not own: what
// it does while the API server is away, and what it finds again after it was killed.

// nodeAgent is a `berth node` process of a test, for the cluster c; it is killed when the
// test ends, and the node is cleaned up (containerd, its pods, the bridge).
type nodeAgent struct {
	c        *cluster
	node     *node
	manifest string // --pod-manifest-path
	extra    []string
	proc     *process
}

func startNodeAgent(t *testing.T, c *cluster, manifests string, extra ...string) *nodeAgent {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the node tests run containerd and need root (CI runs them as root)")
	}
	n, err := newNode("e2e-"+strings.ToLower(t.Name()), c.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	a := &nodeAgent{c: c, node: n, manifest: manifests, extra: extra}
	t.Cleanup(func() {
		if a.proc != nil {
			a.proc.kill()
			if t.Failed() {
				t.Logf("output of %s:\n%s", a.proc.name, tail(a.proc.output.String(), 200))
			}
		}
		if err := n.cleanup(); err != nil {
			t.Errorf("cleaning up the node: %v", err)
		}
	})
	a.start(t)
	return a
}

// ownNode starts a `berth up` of the test's own (in workDir/name, without a node) and a
// `berth node` for it, with a static pod directory, the KubeletConfiguration fields
// kubeletConfig (YAML lines; none when empty) and more flags, and returns once the node is
// Ready. Tests that change how a node behaves (pressure, GC thresholds) run on one of these,
// never on the shared node.
func ownNode(t *testing.T, name, kubeletConfig string, extra ...string) (*cluster, *nodeAgent) {
	t.Helper()
	dir := filepath.Join(workDir, name)
	c := startCluster(t, "up", dir)
	manifests := filepath.Join(dir, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	if kubeletConfig != "" {
		config := filepath.Join(dir, "kubelet.yaml")
		if err := os.WriteFile(config, []byte("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"+kubeletConfig), 0o644); err != nil {
			t.Fatal(err)
		}
		extra = append([]string{"--config", config}, extra...)
	}
	a := startNodeAgent(t, c, manifests, extra...)
	if err := waitNodeReady(c, a.node.name); err != nil {
		t.Fatal(err)
	}
	return c, a
}

// start runs `berth node` and returns at once: the API server may be down.
func (a *nodeAgent) start(t *testing.T) {
	t.Helper()
	args := append([]string{"node", "--kubeconfig", a.c.kubeconfig(), "--data-dir", a.c.dataDir,
		"--pod-manifest-path", a.manifest}, append(a.node.args(), a.extra...)...)
	p, err := startProcess("berth node "+a.node.name, berthBin, args...)
	if err != nil {
		t.Fatal(err)
	}
	a.proc = p
}

// TestNodeStaticPodWithoutAPIServer: a manifest dropped into --pod-manifest-path runs while
// the API server is down, and its mirror pod appears, Running, once the API server is back.
func TestNodeStaticPodWithoutAPIServer(t *testing.T) {
	t.Parallel()
	image := busyboxImage(t)
	c, a := ownNode(t, "static", "")
	manifests := a.manifest

	// The control plane goes away; the node agent stays.
	if err := c.proc.stop(stopTimeout); err != nil {
		t.Fatalf("stopping the control plane: %v", err)
	}
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: static-web
  namespace: kube-system
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: %s
    command: ["sh", "-c", "echo static; sleep 3600"]
`, image)
	if err := os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := a.node.runtime(t)
	eventually(t, podTimeout, "the static pod's container to run without an API server", func() bool {
		for _, ctr := range runningContainers(t, rs, "kube-system") {
			if ctr.Metadata.Name == "web" && ctr.Labels["io.kubernetes.pod.name"] == "static-web-"+a.node.name {
				return true
			}
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	if a.proc.exited() {
		t.Fatalf("berth node exited while the API server was down: %v", a.proc.err)
	}

	// The control plane comes back: the mirror pod shows the static pod as it runs.
	c.startOrFail(t)
	mirror := "pod/static-web-" + a.node.name
	c.waitFor(t, "kube-system", mirror, "{.status.phase}", "to be Running", func(v string) bool { return v == "Running" })
	got := c.jsonpath(t, "kube-system", mirror, `{.metadata.annotations.kubernetes\.io/config\.mirror} {.metadata.annotations.kubernetes\.io/config\.source} {.spec.nodeName} {.metadata.ownerReferences[0].kind}`)
	f := strings.Fields(got)
	if len(f) != 4 || f[0] == "" || f[1] != "file" || f[2] != a.node.name || f[3] != "Node" {
		t.Errorf("mirror pod annotations, node and owner = %q, want a config hash, source file, %s and a Node owner", got, a.node.name)
	}
	if out := c.must(t, "logs", "-n", "kube-system", "static-web-"+a.node.name); out != "static\n" {
		t.Errorf("kubectl logs of the mirror pod said %q, want static", out)
	}

	// Removing the file stops the pod and its mirror pod goes.
	if err := os.Remove(filepath.Join(manifests, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	eventually(t, podTimeout, "the mirror pod to go with its manifest", func() bool {
		if c.kubectl(t, "get", mirror, "-n", "kube-system").code != 0 {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
	eventually(t, podTimeout, "the static pod's container to stop", func() bool {
		if len(runningContainers(t, rs, "kube-system")) == 0 {
			return true
		}
		time.Sleep(300 * time.Millisecond)
		return false
	})
}

// TestNodeAgentKilled: `kill -9` the node agent with ten pods running and start it again:
// it finds its containers through the runtime and restarts none of them.
func TestNodeAgentKilled(t *testing.T) {
	t.Parallel()
	image := busyboxImage(t)
	c, a := ownNode(t, "killed", "")
	ns := c.newNamespace(t)
	const pods = 10
	var yaml strings.Builder
	for i := range pods {
		fmt.Fprintf(&yaml, `---
apiVersion: v1
kind: Pod
metadata:
  name: p%d
  labels: {app: killed}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "sleep 3600"]
`, i, image)
	}
	c.mustIn(t, yaml.String(), "apply", "-n", ns, "-f", "-")
	const view = `{range .items[*]}{.metadata.name}={.status.phase}/{.status.containerStatuses[0].restartCount}/{.status.containerStatuses[0].ready}/{.status.containerStatuses[0].containerID};{end}`
	allRunning := func(v string) bool {
		parts := strings.Split(strings.TrimSuffix(v, ";"), ";")
		if len(parts) != pods {
			return false
		}
		for _, p := range parts {
			if !strings.Contains(p, "=Running/0/true/containerd://") {
				return false
			}
		}
		return true
	}
	before := c.waitFor(t, ns, "pods", view, "all to run", allRunning)

	a.proc.kill() // SIGKILL to berth node's process group; containerd has a group of its own
	rs := a.node.runtime(t)
	if got := len(runningContainers(t, rs, ns)); got != pods {
		t.Fatalf("%d containers run after the node agent was killed, want %d", got, pods)
	}
	a.start(t)

	// The node agent is back when it renews its Lease again; from then on, for several
	// syncs, every pod must show the same container, never restarted.
	renewed := c.jsonpath(t, "kube-node-lease", "lease/"+a.node.name, "{.spec.renewTime}")
	c.waitFor(t, "kube-node-lease", "lease/"+a.node.name, "{.spec.renewTime}", "to be renewed by the new node agent", func(v string) bool {
		return v != "" && v != renewed
	})
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		if a.proc.exited() {
			t.Fatalf("berth node exited after its restart: %v", a.proc.err)
		}
		if got := c.jsonpath(t, ns, "pods", view); got != before {
			t.Fatalf("after the node agent's restart the pods show\n%s\nwant, as before,\n%s", got, before)
		}
	}
	if got := len(runningContainers(t, rs, ns)); got != pods {
		t.Errorf("%d containers run after the node agent's restart, want %d", got, pods)
	}
	// And it still runs them: a deleted pod goes away through it.
	c.must(t, "delete", "pod", "p0", "-n", ns, "--timeout=60s")
	if got := len(runningContainers(t, rs, ns)); got != pods-1 {
		t.Errorf("%d containers run after deleting one pod, want %d", got, pods-1)
	}
}
