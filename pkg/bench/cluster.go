// Package bench holds `berth bench`: scenarios that load a cluster and print what they
// measured, as a table for people and one JSON line for tools. Without a kubeconfig a scenario
// starts its own `berth up` as a child process in a temporary directory, so that the memory
// it reports is that of a real, separate berth process.
package bench

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/cluster"
)

// target is the cluster a scenario loads.
type target struct {
	config *rest.Config
	client kubernetes.Interface
	// child is the `berth up` process the scenario started, or nil.
	child *child
	// controllers is the `berth controllers` process beside child, when the scenario
	// measures the controllers apart (berth up --disable-controller-manager), or nil.
	controllers *child
	dir         string
	// node: the child runs a node agent, whose pods, bridge and service proxy rules stop
	// leaves behind (as berth up's do) and berth down --cleanup's code removes.
	node bool
}

// connect returns a target for kubeconfig, or starts a cluster (without a node agent) when
// kubeconfig is empty.
func connect(ctx context.Context, kubeconfig string) (*target, error) {
	return connectWith(ctx, kubeconfig, clusterOptions{})
}

// clusterOptions shape the cluster a scenario starts.
type clusterOptions struct {
	// node runs a node agent in berth up.
	node bool
	// separateControllers runs the controllers as their own `berth controllers` process
	// beside berth up, so that their CPU and memory are measured apart.
	separateControllers bool
}

// connectWith is connect, starting the cluster that o describes.
func connectWith(ctx context.Context, kubeconfig string, o clusterOptions) (*target, error) {
	if kubeconfig != "" {
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, err
		}
		return newTarget(config)
	}
	return startCluster(ctx, o)
}

func newTarget(config *rest.Config) (*target, error) {
	config = rest.CopyConfig(config)
	config.QPS, config.Burst = -1, 0 // the scenario sets the pace, not client-side throttling
	// Protobuf costs the benchmark (and the API server) less than JSON, as for any component.
	config.ContentType = "application/vnd.kubernetes.protobuf"
	config.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, err
	}
	return &target{config: config, client: client}, nil
}

// startCluster runs `berth up` (this very binary) on free ports in a temporary directory.
func startCluster(ctx context.Context, o clusterOptions) (*target, error) {
	dir, err := os.MkdirTemp("", "berth-bench-")
	if err != nil {
		return nil, err
	}
	return startClusterIn(ctx, o, dir)
}

// startClusterIn is startCluster on the data dir dir (a new one, or a stopped cluster's, to
// start it again).
func startClusterIn(ctx context.Context, o clusterOptions, dir string) (*target, error) {
	withNode := o.node
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	etcdPort, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.OpenFile(filepath.Join(dir, "berth.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	args := []string{"up", "--data-dir", dir, "--port", strconv.Itoa(port), "--etcd-client-port", strconv.Itoa(etcdPort),
		"--scheduler-health-address", ""}
	if withNode {
		nodePort, err := freePort()
		if err != nil {
			return nil, err
		}
		// A node of its own: its containerd, logs and ports apart from any other on the machine.
		args = append(args, "--runtime-endpoint", "unix://"+filepath.Join(dir, "containerd.sock"),
			"--pod-logs-dir", filepath.Join(dir, "pod-logs"), "--node-port", strconv.Itoa(nodePort),
			"--node-name", "bench-node", "--pod-cidr", "10.250.0.0/24", "--bridge", "berthbench0")
	} else {
		args = append(args, "--node=false")
	}
	if o.separateControllers {
		args = append(args, "--disable-controller-manager")
	}
	cmd := exec.Command(self, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	up, err := startChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting berth up: %w", err)
	}
	t := &target{child: up, dir: dir, node: withNode}
	kubeconfig := filepath.Join(dir, "admin.kubeconfig")
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := os.Stat(kubeconfig); err != nil {
			return false, nil
		}
		config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil
		}
		next, err := newTarget(config)
		if err != nil {
			return false, err
		}
		status := 0
		next.client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status)
		if status != 200 {
			return false, nil
		}
		t.config, t.client = next.config, next.client
		return true, nil
	})
	if err != nil {
		t.stop()
		return nil, fmt.Errorf("berth up did not become ready (log in %s): %w", logFile.Name(), err)
	}
	if o.separateControllers {
		if t.controllers, err = startControllers(self, dir, kubeconfig); err != nil {
			t.stop()
			return nil, err
		}
	}
	return t, nil
}

// startControllers runs `berth controllers` against the cluster of kubeconfig, as the admin
// and without leader election (it is the only one), logging to dir/controllers.log.
func startControllers(self, dir, kubeconfig string) (*child, error) {
	logFile, err := os.Create(filepath.Join(dir, "controllers.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "controllers", "--kubeconfig", kubeconfig, "--leader-elect=false")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c, err := startChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("starting berth controllers: %w", err)
	}
	return c, nil
}

// stop ends the child cluster, if the scenario started one, and removes its directory.
func (t *target) stop() {
	if t.child == nil {
		return
	}
	if t.controllers != nil {
		t.controllers.stop(30 * time.Second)
	}
	t.child.stop(30 * time.Second)
	if t.node {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if _, err := cluster.Cleanup(ctx, t.dir); err != nil {
			fmt.Fprintf(os.Stderr, "cleaning up after the benchmark's node: %v\n", err)
		}
	}
	os.RemoveAll(t.dir)
}

// rssBytes is the resident memory of the child cluster, or 0 when there is none.
func (t *target) rssBytes() int64 {
	if t.child == nil {
		return 0
	}
	return processRSS(t.child.Process.Pid, "VmRSS")
}

// peakRSSBytes is the child's peak resident memory so far.
func (t *target) peakRSSBytes() int64 {
	if t.child == nil {
		return 0
	}
	return processRSS(t.child.Process.Pid, "VmHWM")
}

// processRSS reads a memory figure (VmRSS, VmHWM) of a process from /proc, in bytes.
func processRSS(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := s.Text()
		if !strings.HasPrefix(line, field+":") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) >= 2 {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
