package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/berth-cluster/berth/pkg/sim"
	"github.com/berth-cluster/berth/pkg/util/mount"
)

// simProcess is a `berth sim` child: the simulated nodes a scenario loads.
type simProcess struct {
	cmd        *child
	dir        string
	metricsURL string
}

// kubeconfigPath is the kubeconfig a scenario's own processes use: the one it was given,
// else the started cluster's.
func (t *target) kubeconfigPath(given string) string {
	if given != "" {
		return given
	}
	return filepath.Join(t.dir, "admin.kubeconfig")
}

// startSim runs `berth sim` (this very binary) with n nodes against kubeconfig, and waits
// until all of them are Ready.
func startSim(ctx context.Context, t *target, kubeconfig string, n int) (*simProcess, time.Duration, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, 0, err
	}
	dir, err := tempDir()
	if err != nil {
		return nil, 0, err
	}
	port, err := freePort()
	if err != nil {
		return nil, 0, err
	}
	logFile, err := os.Create(filepath.Join(dir, "sim.log"))
	if err != nil {
		return nil, 0, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(self, "sim", "--kubeconfig", kubeconfig, "--nodes", strconv.Itoa(n),
		"--data-dir", filepath.Join(dir, "nodes"), "--metrics-address", addr)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	start := time.Now()
	proc, err := startChild(cmd)
	if err != nil {
		return nil, 0, fmt.Errorf("starting berth sim: %w", err)
	}
	s := &simProcess{cmd: proc, dir: dir, metricsURL: "http://" + addr + "/metrics"}
	fmt.Fprintf(os.Stderr, "berth sim: pid %d, log %s, metrics and profiles at http://%s/\n", cmd.Process.Pid, logFile.Name(), addr)
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		ready, err := readySimNodes(ctx, t)
		return err == nil && ready >= n, nil
	})
	if err != nil {
		s.stop()
		return nil, 0, fmt.Errorf("%d simulated nodes did not all become Ready (log in %s): %w", n, logFile.Name(), err)
	}
	return s, time.Since(start), nil
}

// simCluster is what the simulated-node scenarios load: the cluster kubeconfig names (or a
// `berth up` of their own), a `berth sim` of n nodes against it, all Ready, and a namespace
// for their pods. cleanup stops and removes what they started (and the namespace of a cluster
// that outlives them).
func simCluster(ctx context.Context, kubeconfig string, n int, o clusterOptions) (t *target, s *simProcess, ns string, nodesReady time.Duration, cleanup func(), err error) {
	if t, err = connectWith(ctx, kubeconfig, o); err != nil {
		return nil, nil, "", 0, nil, err
	}
	if s, nodesReady, err = startSim(ctx, t, t.kubeconfigPath(kubeconfig), n); err != nil {
		t.stop()
		return nil, nil, "", 0, nil, err
	}
	if ns, err = benchNamespace(ctx, t); err != nil {
		s.stop()
		t.stop()
		return nil, nil, "", 0, nil, err
	}
	cleanup = func() {
		if kubeconfig != "" {
			_ = t.client.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		}
		// Both at once: removing the sim's directory (a directory per pod) takes minutes
		// after a large run, and berth up should not wait for it.
		var wg sync.WaitGroup
		wg.Go(s.stop)
		wg.Go(t.stop)
		wg.Wait()
	}
	return t, s, ns, nodesReady, cleanup, nil
}

// readySimNodes counts the simulated nodes whose Ready condition is True (from the API
// server's cache).
func readySimNodes(ctx context.Context, t *target) (int, error) {
	nodes, err := t.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: sim.SimulatedLabel + "=true", ResourceVersion: "0"})
	if err != nil {
		return 0, err
	}
	ready := 0
	for _, node := range nodes.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready++
			}
		}
	}
	return ready, nil
}

// stop ends berth sim and removes its directory, with the tmpfs volumes its node agents
// mounted for pods still there (a removal alone leaves them mounted, one per pod).
func (s *simProcess) stop() {
	s.cmd.stop(time.Minute)
	if err := mount.UnmountUnder(s.dir); err != nil {
		fmt.Fprintf(os.Stderr, "unmounting the simulated nodes' volumes: %v\n", err)
	}
	os.RemoveAll(s.dir)
}

func (s *simProcess) peakRSSBytes() int64 { return processRSS(s.cmd.Process.Pid, "VmHWM") }
func (s *simProcess) rssBytes() int64     { return processRSS(s.cmd.Process.Pid, "VmRSS") }

// goRuntime are a Go process's goroutines and live heap, from its /metrics.
type goRuntime struct {
	Goroutines int64
	HeapInuse  int64
}

func parseGoRuntime(r io.Reader) goRuntime {
	var g goRuntime
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		name, value, ok := strings.Cut(s.Text(), " ")
		if !ok {
			continue
		}
		v, _ := strconv.ParseFloat(strings.TrimSpace(value), 64)
		switch name {
		case "go_goroutines":
			g.Goroutines = int64(v)
		case "go_memstats_heap_inuse_bytes":
			g.HeapInuse = int64(v)
		}
	}
	return g
}

// runtimeOf reads berth sim's goroutines and heap.
func (s *simProcess) runtime(ctx context.Context) (goRuntime, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.metricsURL, nil)
	if err != nil {
		return goRuntime{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return goRuntime{}, fmt.Errorf("reading berth sim's metrics: %w", err)
	}
	defer resp.Body.Close()
	return parseGoRuntime(resp.Body), nil
}

// runtime reads the API server's (berth up's) goroutines and heap from its /metrics.
func (t *target) runtime(ctx context.Context) (goRuntime, error) {
	body, err := t.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return goRuntime{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseGoRuntime(strings.NewReader(string(body))), nil
}

// apiRequests are counts from the API server's /metrics: every request served, the GETs of
// single ConfigMaps and Secrets (what the node agents' volumes read), and the watches open.
type apiRequests struct {
	Total, ObjectGets, Watches float64
}

func parseAPIRequests(r io.Reader) apiRequests {
	var a apiRequests
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "apiserver_request_total{"):
			a.Total += v
			if strings.Contains(line, `verb="GET"`) && strings.Contains(line, `scope="resource"`) &&
				(strings.Contains(line, `resource="configmaps"`) || strings.Contains(line, `resource="secrets"`)) {
				a.ObjectGets += v
			}
		case strings.HasPrefix(line, "apiserver_longrunning_requests{") && strings.Contains(line, `verb="WATCH"`):
			a.Watches += v
		}
	}
	return a
}

// apiRequests reads the API server's request counts.
func (t *target) apiRequests(ctx context.Context) (apiRequests, error) {
	body, err := t.client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return apiRequests{}, fmt.Errorf("reading the API server's metrics: %w", err)
	}
	return parseAPIRequests(strings.NewReader(string(body))), nil
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// processCPU is the CPU time a process has used so far (user and system), from /proc.
func processCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command (in parentheses, which may hold spaces): utime and stime
	// are the 14th and 15th fields, in clock ticks of 1/100 s.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// cpu is the CPU time of the scenario's own processes: berth up (when it started one),
// berth sim, and the scenario itself.
type cpu struct{ up, controllers, sim, self time.Duration }

func cpuNow(t *target, s *simProcess) cpu {
	c := cpu{sim: processCPU(s.cmd.Process.Pid), self: processCPU(os.Getpid())}
	if t.child != nil {
		c.up = processCPU(t.child.Process.Pid)
	}
	if t.controllers != nil {
		c.controllers = processCPU(t.controllers.Process.Pid)
	}
	return c
}

func (c cpu) since(before cpu) cpu {
	return cpu{up: c.up - before.up, controllers: c.controllers - before.controllers, sim: c.sim - before.sim, self: c.self - before.self}
}
