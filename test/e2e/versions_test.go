package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// otherKubectls are the kubectl.1.XX binaries installed beside the kubectl on PATH (the
// Google Cloud SDK ships several), oldest first.
func otherKubectls(t *testing.T) []string {
	t.Helper()
	real, err := filepath.EvalSymlinks(kubectlBin)
	if err != nil {
		t.Fatal(err)
	}
	matches, err := filepath.Glob(filepath.Join(filepath.Dir(real), "kubectl.1.*"))
	if err != nil {
		t.Fatal(err)
	}
	minor := func(path string) int {
		n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(path), "kubectl.1."))
		return n
	}
	var bins []string
	for _, m := range matches {
		if info, err := os.Stat(m); err == nil && !info.IsDir() && info.Mode()&0o111 != 0 && minor(m) > 0 {
			bins = append(bins, m)
		}
	}
	sort.Slice(bins, func(i, j int) bool { return minor(bins[i]) < minor(bins[j]) })
	return bins
}

// TestKubectlVersions: a short smoke test with the kubectl on PATH and with every other
// kubectl release installed beside it, since users' kubectl is rarely berth's version.
func TestKubectlVersions(t *testing.T) {
	t.Parallel()
	c := sharedCluster(t)
	ns := c.newNamespace(t)
	others := otherKubectls(t)
	t.Logf("kubectl on PATH: %s; other releases beside it: %q", kubectlBin, others)

	for _, bin := range append([]string{kubectlBin}, others...) {
		t.Run(filepath.Base(bin), func(t *testing.T) {
			name := "smoke-" + regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(filepath.Base(bin), "-")
			run := func(stdin string, args ...string) string {
				t.Helper()
				return mustSucceed(t, c.run(t, bin, stdin, args...))
			}
			manifest := podManifest(ns, name, "busybox:1.36")
			if out := run(manifest, "apply", "-f", "-"); out != "pod/"+name+" created\n" {
				t.Errorf("apply said %q", out)
			}
			out := run("", "get", "pods", "-n", ns, name)
			wantHeader(t, out, "NAME", "READY", "STATUS", "RESTARTS", "AGE")
			wantPrefix(t, row(t, out, name), name, "0/1", "Pending", "0")
			out = run("", "get", "pod", name, "-n", ns, "-o", "yaml")
			wantMatch(t, out, `^  name: `+name+`$`, `^  restartPolicy: Always$`, `^  - image: busybox:1\.36$`, `^  phase: Pending$`)
			if out := run(strings.Replace(manifest, "app: ", "app: x", 1), "apply", "--server-side", "--force-conflicts", "-f", "-"); out != "pod/"+name+" serverside-applied\n" {
				t.Errorf("apply --server-side said %q", out)
			}
			wantMatch(t, run("", "explain", "pod.spec.containers.image"), `^FIELD:\s+image <string>$`)
			if out := run("", "delete", "pod", name, "-n", ns); !strings.HasPrefix(out, `pod "`+name+`" deleted`) {
				t.Errorf("delete said %q", out)
			}
		})
	}
}
