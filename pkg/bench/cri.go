package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
	"github.com/berth-cluster/berth/pkg/cri/pause"
)

// CRIOptions configure the cri scenario.
type CRIOptions struct {
	// Endpoint is the CRI endpoint; empty starts berth's containerd in a temporary directory.
	Endpoint string
	// Pods are started at once, each a sandbox and one container of the sandbox image.
	Pods   int
	Rounds int
	// HostNetwork skips the CNI plugins.
	HostNetwork bool
}

// RunCRI is the runtime's share of pod start-up: the same pods `bench startup` runs, started
// straight through the CRI (RunPodSandbox, CreateContainer, StartContainer) with no API server,
// scheduler or node agent, so that the two can be compared.
func RunCRI(ctx context.Context, out io.Writer, o CRIOptions) error {
	if o.Pods < 1 || o.Rounds < 1 {
		return fmt.Errorf("--pods and --rounds must be at least 1")
	}
	endpoint := o.Endpoint
	if endpoint == "" {
		dir, err := os.MkdirTemp("", "berth-bench-cri-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		proc, err := containerd.Start(ctx, containerd.Config{StateDir: dir, PodCIDR: "10.251.0.0/24", Bridge: "berthbench1", SandboxImage: pause.ImageName})
		if err != nil {
			return err
		}
		defer proc.Stop()
		endpoint = proc.Endpoint()
		if err := cri.EnsureSandboxImage(ctx, endpoint, pause.ImageName); err != nil {
			return err
		}
	}
	rs, is, err := cri.Connect(ctx, endpoint)
	if err != nil {
		return err
	}
	defer rs.Close(ctx)
	defer is.Close(ctx)

	perPod := &latencies{name: "RunPodSandbox → StartContainer"}
	allRunning := &latencies{name: "all pods started"}
	for round := 0; round < o.Rounds; round++ {
		start := time.Now()
		ids := make([]string, o.Pods)
		errs := make([]error, o.Pods)
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := 0; i < o.Pods; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				t0 := time.Now()
				ids[i], errs[i] = startCRIPod(ctx, rs, fmt.Sprintf("bench-cri-%d-%d-%d", start.UnixNano(), round, i), o.HostNetwork)
				mu.Lock()
				perPod.add(time.Since(t0))
				mu.Unlock()
			}(i)
		}
		wg.Wait()
		d := time.Since(start)
		allRunning.add(d)
		fmt.Fprintf(out, "round %d: %d pods started %s after the first RunPodSandbox\n", round, o.Pods, d.Round(time.Millisecond))
		for _, id := range ids {
			if id != "" {
				_ = rs.StopPodSandbox(ctx, id)
				_ = rs.RemovePodSandbox(ctx, id)
			}
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		select {
		case <-time.After(settleTime):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	fmt.Fprintf(out, "\ncri: %d pods at once, %d rounds, host network %t\n\n", o.Pods, o.Rounds, o.HostNetwork)
	printTable(out, []*latencies{perPod, allRunning})
	fmt.Fprintln(out)
	return printJSON(out, map[string]interface{}{
		"scenario": "cri", "pods": o.Pods, "rounds": o.Rounds, "host_network": o.HostNetwork,
		"p50_ms": ms(perPod.quantile(0.5)), "p99_ms": ms(perPod.quantile(0.99)),
		"all_running_ms": ms(allRunning.quantile(0.5)),
	})
}

// startCRIPod runs a sandbox and one container in it, and returns the sandbox's ID.
func startCRIPod(ctx context.Context, rs interface {
	RunPodSandbox(context.Context, *runtimeapi.PodSandboxConfig, string) (string, error)
	CreateContainer(context.Context, string, *runtimeapi.ContainerConfig, *runtimeapi.PodSandboxConfig) (string, error)
	StartContainer(context.Context, string) error
}, uid string, hostNetwork bool) (string, error) {
	mode := runtimeapi.NamespaceMode_POD
	if hostNetwork {
		mode = runtimeapi.NamespaceMode_NODE
	}
	sc := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: uid, Namespace: "bench-cri", Uid: uid},
		LogDirectory: filepath.Join(os.TempDir(), "berth-bench-cri-logs", uid),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    "/berth-bench-cri/" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: mode}},
		},
	}
	sb, err := rs.RunPodSandbox(ctx, sc, "")
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	c, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: pause.ImageName},
		LogPath:  "c.log",
	}, sc)
	if err != nil {
		return sb, fmt.Errorf("CreateContainer: %w", err)
	}
	if err := rs.StartContainer(ctx, c); err != nil {
		return sb, fmt.Errorf("StartContainer: %w", err)
	}
	return sb, nil
}
