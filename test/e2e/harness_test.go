package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

const (
	// readyTimeout bounds a start, from exec to /readyz answering ok.
	readyTimeout = 90 * time.Second
	// stopTimeout bounds a clean shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// kubectlTimeout bounds one kubectl command.
	kubectlTimeout = time.Minute
)

// cluster is one berth process (`berth up` or `berth apiserver`) and how to reach it. Its
// ports are chosen once, so that a restart on the same data dir serves at the same address.
type cluster struct {
	subcommand string
	dataDir    string
	port       int
	etcdPort   int
	extraArgs  []string
	proc       *process
}

// newCluster picks free ports for a berth subcommand on dataDir; start runs it.
func newCluster(subcommand, dataDir string, extraArgs ...string) (*cluster, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	etcdPort, err := freePort()
	if err != nil {
		return nil, err
	}
	if subcommand == "up" {
		// Several clusters run at once: the scheduler's health port must differ too.
		schedulerPort, err := freePort()
		if err != nil {
			return nil, err
		}
		extraArgs = append([]string{"--scheduler-health-address", "127.0.0.1:" + strconv.Itoa(schedulerPort)}, extraArgs...)
		// `berth up` runs a node agent as root; the API tests want none (the node tests
		// ask for one with node flags of their own).
		if !hasNodeFlags(extraArgs) {
			extraArgs = append(extraArgs, "--node=false")
		}
	}
	return &cluster{subcommand: subcommand, dataDir: dataDir, port: port, etcdPort: etcdPort, extraArgs: extraArgs}, nil
}

// hasNodeFlags reports whether args configure `berth up`'s node agent.
func hasNodeFlags(args []string) bool {
	for _, a := range args {
		if strings.HasPrefix(a, "--node") {
			return true
		}
	}
	return false
}

// startCluster starts a cluster of the test's own; it is stopped (and must stop cleanly) when
// the test ends, and its output goes to the test log if the test failed.
func startCluster(t *testing.T, subcommand, dataDir string, extraArgs ...string) *cluster {
	t.Helper()
	c, err := newCluster(subcommand, dataDir, extraArgs...)
	if err != nil {
		t.Fatal(err)
	}
	c.startOrFail(t)
	return c
}

// startOrFail (re)starts c for t, arranging the stop and the log as startCluster does.
func (c *cluster) startOrFail(t *testing.T) {
	t.Helper()
	err := c.start()
	p := c.proc
	if p != nil {
		t.Cleanup(func() {
			if !p.exited() {
				if err := p.stop(stopTimeout); err != nil {
					t.Errorf("stopping: %v", err)
				}
			}
			if t.Failed() {
				t.Logf("output of %s:\n%s", p.name, tail(p.output.String(), 300))
			}
		})
	}
	if err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) kubeconfig() string { return filepath.Join(c.dataDir, "admin.kubeconfig") }

func (c *cluster) url() string { return "https://127.0.0.1:" + strconv.Itoa(c.port) }

// start runs the berth process and waits until kubectl gets "ok" from /readyz and berth has
// told the user it is up.
func (c *cluster) start() error {
	args := append([]string{c.subcommand,
		"--data-dir", c.dataDir,
		"--port", strconv.Itoa(c.port),
		"--etcd-client-port", strconv.Itoa(c.etcdPort),
	}, c.extraArgs...)
	name := fmt.Sprintf("berth %s (data dir %s, port %d)", c.subcommand, c.dataDir, c.port)
	p, err := startProcess(name, berthBin, args...)
	if err != nil {
		return err
	}
	c.proc = p
	deadline := time.Now().Add(readyTimeout)
	for {
		if p.exited() {
			return fmt.Errorf("%s exited before it was ready (%v); its output:\n%s", name, p.err, tail(p.output.String(), 100))
		}
		if _, err := os.Stat(c.kubeconfig()); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err := execKubectl(ctx, kubectlBin, c.kubeconfig(), nil, "", "get", "--raw", "/readyz")
			cancel()
			if err == nil && r.code == 0 && strings.TrimSpace(r.stdout) == "ok" {
				break
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: /readyz did not say ok within %s; its output:\n%s", name, readyTimeout, tail(p.output.String(), 100))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// berth prints its greeting once it saw /readyz itself, which may be a moment after us.
	for !strings.Contains(p.stdout.String(), "berth is up") {
		if time.Now().After(deadline) || p.exited() {
			return fmt.Errorf("%s answers /readyz but never printed \"berth is up\"; its stdout:\n%s", name, p.stdout.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if want := "export KUBECONFIG=" + c.kubeconfig(); !strings.Contains(p.stdout.String(), want) {
		return fmt.Errorf("%s's greeting does not tell the user to %q:\n%s", name, want, p.stdout.String())
	}
	return nil
}

// stop sends SIGTERM and requires a clean exit (status 0) within stopTimeout.
func (c *cluster) stop() error {
	if c.proc == nil {
		return nil
	}
	return c.proc.stop(stopTimeout)
}

// result is what a kubectl command did.
type result struct {
	cmd            string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("$ %s\nexit code %d\nstdout:\n%s\nstderr:\n%s", r.cmd, r.code, r.stdout, r.stderr)
}

// testEnv is the environment of every child: no KUBECONFIG from outside, and kubectl's
// discovery cache in this run's directory rather than in ~/.kube.
func testEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KUBECONFIG=") && !strings.HasPrefix(kv, "KUBECACHEDIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "KUBECACHEDIR="+filepath.Join(workDir, "kube-cache"))
}

// execKubectl runs a kubectl binary with KUBECONFIG (and env) set; err is set only when it
// could not run to its end.
func execKubectl(ctx context.Context, bin, kubeconfig string, env []string, stdin string, args ...string) (result, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(testEnv(), "KUBECONFIG="+kubeconfig), env...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code, err := runCmd(ctx, cmd)
	r := result{cmd: filepath.Base(bin) + " " + strings.Join(args, " "), stdout: stdout.String(), stderr: stderr.String(), code: code}
	return r, err
}

// runKubectl runs bin (a kubectl) with a kubeconfig, more environment, and stdin when not
// empty, and logs it.
func runKubectl(t *testing.T, bin, kubeconfig string, env []string, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	r, err := execKubectl(ctx, bin, kubeconfig, env, stdin, args...)
	if err != nil {
		t.Fatalf("%s: %v\n%s", r.cmd, err, r)
	}
	t.Logf("$ %s → %d\n%s", r.cmd, r.code, tail(r.stdout+r.stderr, 15))
	return r
}

// run runs bin (a kubectl) against c as the admin.
func (c *cluster) run(t *testing.T, bin, stdin string, args ...string) result {
	t.Helper()
	return runKubectl(t, bin, c.kubeconfig(), nil, stdin, args...)
}

// runEnv is run with more environment.
func (c *cluster) runEnv(t *testing.T, bin string, env []string, stdin string, args ...string) result {
	t.Helper()
	return runKubectl(t, bin, c.kubeconfig(), env, stdin, args...)
}

// kubectl runs the kubectl on PATH against c.
func (c *cluster) kubectl(t *testing.T, args ...string) result {
	t.Helper()
	return c.run(t, kubectlBin, "", args...)
}

// kubectlIn is kubectl with stdin (a manifest for -f -).
func (c *cluster) kubectlIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	return c.run(t, kubectlBin, stdin, args...)
}

// must runs kubectl, fails the test unless it succeeds, and returns its stdout.
func (c *cluster) must(t *testing.T, args ...string) string {
	t.Helper()
	return mustSucceed(t, c.kubectl(t, args...))
}

// mustIn is must with stdin.
func (c *cluster) mustIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	return mustSucceed(t, c.kubectlIn(t, stdin, args...))
}

func mustSucceed(t *testing.T, r result) string {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("kubectl failed:\n%s", r)
	}
	return r.stdout
}

// kubectl runs the kubectl on PATH against the shared cluster.
func kubectl(t *testing.T, args ...string) result {
	t.Helper()
	return sharedCluster(t).kubectl(t, args...)
}

var shared struct {
	sync.Mutex
	c   *cluster
	err error
}

// sharedCluster is the `berth up` most tests share, started on first use and stopped by
// TestMain. A test that fails gets the output berth wrote while it ran.
func sharedCluster(t *testing.T) *cluster {
	t.Helper()
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil && shared.err == nil {
		c, err := newCluster("up", filepath.Join(workDir, "shared"))
		if err == nil {
			err = c.start()
		}
		shared.c, shared.err = c, err
	}
	if shared.err != nil {
		t.Fatalf("the shared berth up did not start: %v", shared.err)
	}
	p := shared.c.proc
	if p.exited() {
		t.Fatalf("the shared berth up has exited (%v); its output:\n%s", p.err, tail(p.output.String(), 200))
	}
	offset := p.output.Len()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("berth up's output while this test ran:\n%s", tail(p.output.since(offset), 200))
		}
	})
	return shared.c
}

// stopShared stops the shared cluster, which must exit cleanly.
func stopShared() error {
	shared.Lock()
	defer shared.Unlock()
	if shared.c == nil || shared.c.proc == nil {
		return nil
	}
	if err := shared.c.stop(); err != nil {
		return fmt.Errorf("%w; its output:\n%s", err, tail(shared.c.proc.output.String(), 100))
	}
	return nil
}

var (
	portsMu sync.Mutex
	// portsGiven keeps one run from handing out a port twice (a closed listener's port is
	// free again at once).
	portsGiven = map[int]bool{}
)

// freePort finds a TCP port free on every address.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", ":0")
		if err != nil {
			return 0, fmt.Errorf("finding a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsGiven[port] {
			portsGiven[port] = true
			return port, nil
		}
	}
	return 0, fmt.Errorf("no free port found")
}

var namespaces atomic.Int64

// newNamespace creates a namespace for one test and waits for its default service account,
// without which the API server refuses pods, and its kube-root-ca.crt, which every pod's
// kube-api-access volume reads (as Kubernetes' e2e framework waits for both).
func (c *cluster) newNamespace(t *testing.T) string {
	t.Helper()
	base := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "-"))
	if len(base) > 40 {
		base = base[:40]
	}
	ns := fmt.Sprintf("e2e-%s-%d", strings.Trim(base, "-"), namespaces.Add(1))
	if out := c.must(t, "create", "namespace", ns); out != "namespace/"+ns+" created\n" {
		t.Fatalf("kubectl create namespace said %q", out)
	}
	eventually(t, 30*time.Second, "the default service account of "+ns, func() bool {
		return c.kubectl(t, "get", "serviceaccount", "default", "-n", ns, "-o", "name").code == 0
	})
	eventually(t, 30*time.Second, "the kube-root-ca.crt of "+ns, func() bool {
		return c.kubectl(t, "get", "configmap", "kube-root-ca.crt", "-n", ns, "-o", "name").code == 0
	})
	return ns
}

// eventually polls cond until it holds, failing the test after timeout.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// table splits kubectl's table output into rows of whitespace-separated fields; row 0 is the
// header. Empty cells vanish, so callers compare leading fields.
func table(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if line != "" {
			rows = append(rows, strings.Fields(line))
		}
	}
	return rows
}

// dataRows are the rows of a table after its header.
func dataRows(out string) [][]string {
	rows := table(out)
	if len(rows) == 0 {
		return nil
	}
	return rows[1:]
}

// row returns the row whose first field is name.
func row(t *testing.T, out, name string) []string {
	t.Helper()
	for _, r := range dataRows(out) {
		if r[0] == name {
			return r
		}
	}
	t.Fatalf("no row for %q in:\n%s", name, out)
	return nil
}

// wantHeader checks a table's header line, word by word.
func wantHeader(t *testing.T, out string, want ...string) {
	t.Helper()
	rows := table(out)
	if len(rows) == 0 {
		t.Fatalf("no table in %q", out)
	}
	if strings.Join(rows[0], " ") != strings.Join(want, " ") {
		t.Errorf("header %q, want %q", strings.Join(rows[0], " "), strings.Join(want, " "))
	}
}

// wantPrefix checks that a row starts with the given cells.
func wantPrefix(t *testing.T, got []string, want ...string) {
	t.Helper()
	if len(got) < len(want) || strings.Join(got[:len(want)], " ") != strings.Join(want, " ") {
		t.Errorf("row %q, want it to start with %q", strings.Join(got, " "), strings.Join(want, " "))
	}
}

// wantMatch checks out against each regular expression (multi-line mode).
func wantMatch(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile("(?m)" + p).MatchString(out) {
			t.Errorf("output does not match %q:\n%s", p, out)
		}
	}
}

// wantContains checks out for each substring.
func wantContains(t *testing.T, out string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(out, s) {
			t.Errorf("output does not contain %q:\n%s", s, out)
		}
	}
}
