package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// helmVersion is the Helm the test installs: the newest v3, built against k8s.io v0.37.
const helmVersion = "v3.22.1"

// helmTimeout bounds one helm command (an install or upgrade --wait, a helm test).
const helmTimeout = 5 * time.Minute

var helmBuild struct {
	once sync.Once
	bin  string
	err  error
}

// helmBinary installs helm.sh/helm/v3/cmd/helm@helmVersion with `go install` into a GOBIN of
// this run, once per test binary. It runs outside berth's module (Helm is no dependency of
// berth's go.mod), through the module proxy and the build cache.
func helmBinary(t *testing.T) string {
	t.Helper()
	helmBuild.once.Do(func() {
		gobin := filepath.Join(workDir, "helm-bin")
		scratch, err := os.MkdirTemp(workDir, "helm-build-")
		if err != nil {
			helmBuild.err = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
		cmd.Dir = scratch
		cmd.Env = append(os.Environ(), "GOBIN="+gobin, "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0")
		start := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			helmBuild.err = fmt.Errorf("go install helm.sh/helm/v3/cmd/helm@%s: %w\n%s", helmVersion, err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: installed helm %s in %s\n", helmVersion, time.Since(start).Round(time.Millisecond))
		helmBuild.bin = filepath.Join(gobin, "helm")
	})
	if helmBuild.err != nil {
		t.Fatal(helmBuild.err)
	}
	return helmBuild.bin
}

// helmRunner runs helm against a cluster with homes of the test's own.
type helmRunner struct {
	bin, kubeconfig string
	env             []string
}

func newHelmRunner(t *testing.T, c *cluster) *helmRunner {
	t.Helper()
	home := t.TempDir()
	return &helmRunner{bin: helmBinary(t), kubeconfig: c.kubeconfig(), env: []string{
		"HELM_CACHE_HOME=" + filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
		"HELM_DATA_HOME=" + filepath.Join(home, "data"),
	}}
}

// run runs helm with args and logs what it did.
func (h *helmRunner) run(t *testing.T, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), helmTimeout)
	defer cancel()
	start := time.Now()
	r, err := execKubectl(ctx, h.bin, h.kubeconfig, h.env, "", args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", r.cmd, err, r)
	}
	t.Logf("$ %s → %d in %s\n%s", r.cmd, r.code, time.Since(start).Round(time.Millisecond), tail(r.stdout+r.stderr, 30))
	return r
}

// must runs helm and fails the test unless it succeeds.
func (h *helmRunner) must(t *testing.T, args ...string) string {
	t.Helper()
	r := h.run(t, args...)
	if r.code != 0 {
		t.Fatalf("helm failed:\n%s", r)
	}
	return r.stdout
}

// quotaUsed is a ResourceQuota's status.used.
func quotaUsed(t *testing.T, c *cluster, ns, name string) map[string]string {
	t.Helper()
	var q struct {
		Status struct{ Hard, Used map[string]string }
	}
	if err := json.Unmarshal([]byte(c.must(t, "get", "resourcequota", name, "-n", ns, "-o", "json")), &q); err != nil {
		t.Fatal(err)
	}
	return q.Status.Used
}

// TestHelm: a chart written for the test (testdata/chart/greeter) installs with Helm v3:
// its CRD from crds/, a webhook Deployment (test/e2e/operator in webhook mode, serving a
// certificate the cluster signed for a CSR, passed in with --set-file), a ResourceQuota that
// counts Greetings too, an app Deployment and Service. `helm install --wait` returns once
// they are ready; the webhooks default and refuse Greetings and the quota refuses one too
// many; `helm test` runs its hook pod to success; `helm upgrade` with changed values takes
// effect (a new default greeting, two app replicas, a larger quota); `helm uninstall` leaves
// nothing the chart's templates made. The CRD stays, as Helm intends for crds/ (it never
// upgrades or deletes them, so that uninstalling a release cannot delete every custom
// resource of the cluster); the test deletes it at the end.
func TestHelm(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	helm := newHelmRunner(t, c)
	ns := c.newNamespace(t)
	operator, netexec := goProgramImage(t, "operator"), netexecImage(t)
	const release, group = "greeter", "charts.e2e.berth.dev"
	crd := "greetings." + group
	countGreetings := "count/" + crd
	t.Cleanup(func() { c.kubectl(t, "delete", "crd", crd, "--ignore-not-found", "--wait=false") })

	cert := webhookServingCert(t, c, ns, release+"-webhook")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(caFile, []byte(cert.caBundle), 0o600); err != nil {
		t.Fatal(err)
	}
	chart := filepath.Join(moduleRoot, "test", "e2e", "testdata", "chart", "greeter")

	out := helm.must(t, "install", release, chart, "-n", ns, "--wait", "--timeout=3m",
		"--set", "image.operator="+operator, "--set", "image.netexec="+netexec,
		"--set-file", "webhook.tls.crt="+cert.certFile, "--set-file", "webhook.tls.key="+cert.keyFile,
		"--set-file", "webhook.caBundle="+caFile)
	wantMatch(t, out, `^NAME: greeter$`, `^NAMESPACE: `+ns+`$`, `^STATUS: deployed$`, `^REVISION: 1$`)
	wantMatch(t, c.must(t, "get", "deployments", "-n", ns), `^greeter-app\s+1/1\s`, `^greeter-webhook\s+1/1\s`)
	wantMatch(t, c.must(t, "get", "crd", crd), `^`+crd+`\s`)
	wantMatch(t, helm.must(t, "list", "-n", ns), `^greeter\s+`+ns+`\s+1\s.*\sdeployed\s+greeter-0.1.0\s+1.0.0\s*$`)

	// The quota controller counts Greetings once it has found their resource in discovery;
	// until then the quota admission refuses them ("status unknown for quota").
	eventually(t, 2*time.Minute, "the quota to count Greetings", func() bool {
		_, ok := quotaUsed(t, c, ns, release)[countGreetings]
		return ok
	})

	// The webhooks: defaulting, and refusal in the validating webhook's words.
	eventually(t, 60*time.Second, "the webhooks to admit a Greeting", func() bool {
		return c.kubectlIn(t, greeting(group, "ada", "Ada", ""), "create", "-n", ns, "-f", "-").code == 0
	})
	if got := c.jsonpath(t, ns, "greeting."+group+"/ada", "{.spec.greeting}"); got != "Ahoy" {
		t.Errorf("the chart's mutating webhook did not default spec.greeting: %q, want Ahoy", got)
	}
	r := c.kubectlIn(t, greeting(group, "nobody", "", "Hi"), "create", "-n", ns, "-f", "-")
	if r.code == 0 {
		t.Errorf("a Greeting without spec.name was created:\n%s", r)
	}
	wantContains(t, r.stderr, `admission webhook "vgreeting.`+group+`" denied the request: spec.name: Required value: a Greeting must name whom it greets`)

	// The quota: two Greetings, not three.
	c.mustIn(t, greeting(group, "bob", "Bob", "Hi"), "create", "-n", ns, "-f", "-")
	r = c.kubectlIn(t, greeting(group, "cy", "Cy", ""), "create", "-n", ns, "-f", "-")
	if r.code == 0 {
		t.Errorf("a third Greeting was created under a quota of two:\n%s", r)
	}
	wantContains(t, r.stderr, fmt.Sprintf(`greetings.%s "cy" is forbidden: exceeded quota: greeter, requested: %[2]s=1, used: %[2]s=2, limited: %[2]s=2`, group, countGreetings))

	// helm test: the hook pod asks the app through its Service, and is deleted on success.
	out = helm.must(t, "test", release, "-n", ns, "--timeout=2m")
	wantMatch(t, out, `^TEST SUITE:\s+greeter-app-answers$`, `^Phase:\s+Succeeded$`)
	eventually(t, 30*time.Second, "the test pod to be deleted (hook-succeeded)", func() bool {
		return c.must(t, "get", "pods", "-n", ns, "--field-selector=metadata.name=greeter-app-answers", "-o", "name") == ""
	})

	// helm upgrade: changed values take effect.
	out = helm.must(t, "upgrade", release, chart, "-n", ns, "--reuse-values", "--wait", "--timeout=3m",
		"--set", "defaultGreeting=Howdy", "--set", "app.replicas=2", "--set", "quota.greetings=3")
	wantMatch(t, out, `^STATUS: deployed$`, `^REVISION: 2$`)
	wantMatch(t, c.must(t, "get", "deployments", "-n", ns), `^greeter-app\s+2/2\s`, `^greeter-webhook\s+1/1\s`)
	// The new webhook pod defaults with the new value once the Service sends to it, and the
	// quota admits a third Greeting once its controller has taken up the new limit.
	eventually(t, 60*time.Second, "the upgraded webhook to default to Howdy", func() bool {
		r := c.kubectlIn(t, greeting(group, "cy", "Cy", ""), "create", "--dry-run=server", "-n", ns, "-o", "jsonpath={.spec.greeting}", "-f", "-")
		return r.code == 0 && r.stdout == "Howdy"
	})
	c.mustIn(t, greeting(group, "cy", "Cy", ""), "create", "-n", ns, "-f", "-")
	if got := c.jsonpath(t, ns, "greeting."+group+"/cy", "{.spec.greeting}"); got != "Howdy" {
		t.Errorf("after the upgrade spec.greeting was defaulted to %q, want Howdy", got)
	}
	history := helm.must(t, "history", release, "-n", ns)
	wantMatch(t, history, `^1\s.*\ssuperseded\s+greeter-0.1.0\s`, `^2\s.*\sdeployed\s+greeter-0.1.0\s.*\sUpgrade complete\s*$`)

	// helm uninstall: the Greetings are the test's, not the chart's; without them nothing the
	// release made may be left.
	c.must(t, "delete", "greetings."+group, "--all", "-n", ns)
	wantContains(t, helm.must(t, "uninstall", release, "-n", ns, "--wait", "--timeout=2m"), `release "greeter" uninstalled`)
	if out := helm.must(t, "list", "-n", ns, "--all", "-q"); out != "" {
		t.Errorf("helm list after the uninstall:\n%s", out)
	}
	selector := "app.kubernetes.io/instance=" + release
	if out := c.must(t, "get", "deployments,replicasets,services,serviceaccounts,secrets,configmaps,resourcequotas", "-n", ns, "-l", selector, "-o", "name"); out != "" {
		t.Errorf("left by the uninstall:\n%s", out)
	}
	if out := c.must(t, "get", "mutatingwebhookconfigurations,validatingwebhookconfigurations", "-l", selector, "-o", "name"); out != "" {
		t.Errorf("webhook configurations left by the uninstall:\n%s", out)
	}
	// Helm's release records (Secrets sh.helm.release.v1.greeter.v1 and .v2) go too.
	if out := c.must(t, "get", "secrets", "-n", ns, "-l", "owner=helm", "-o", "name"); out != "" {
		t.Errorf("Helm's release records left by the uninstall:\n%s", out)
	}
	eventually(t, 60*time.Second, "the release's pods to be gone", func() bool {
		return c.must(t, "get", "pods", "-n", ns, "-o", "name") == ""
	})
	// Only what the namespace had before the install is left.
	if out, want := c.must(t, "get", "serviceaccounts,configmaps,secrets,services,resourcequotas", "-n", ns, "-o", "name"),
		"serviceaccount/default\nconfigmap/kube-root-ca.crt\n"; out != want {
		t.Errorf("the namespace after the uninstall holds:\n%swant only:\n%s", out, want)
	}
	// The CRD of crds/ is kept, by Helm's design.
	wantMatch(t, c.must(t, "get", "crd", crd), `^`+crd+`\s`)
}
