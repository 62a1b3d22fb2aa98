package memory

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// The scale `berth sim` is built for: 5,000 nodes of 30 single-container pods.
const (
	benchNodes       = 5000
	benchPodsPerNode = 30
	benchContainers  = benchNodes * benchPodsPerNode
)

// benchPod builds the configs the node agent sends for one pod: the kubelet's labels and
// annotations, a few mounts, resources. Every string is the pod's own, as in a real node.
func benchPod(node, pod int) (*runtimeapi.PodSandboxConfig, *runtimeapi.ContainerConfig) {
	name := fmt.Sprintf("web-%d-%d", node, pod)
	uid := fmt.Sprintf("8c3f5b2e-%04d-4a1b-9c7d-%012d", node%10000, pod)
	logDir := "/var/log/pods/default_" + name + "_" + uid
	sb := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Hostname:     name,
		LogDirectory: logDir,
		Labels: map[string]string{
			"app":                         "web",
			"pod-template-hash":           "7d4b9c8f6",
			"io.kubernetes.pod.name":      name,
			"io.kubernetes.pod.namespace": "default",
			"io.kubernetes.pod.uid":       uid,
		},
		Annotations: map[string]string{
			"kubernetes.io/config.seen":   "2030-01-02T03:04:05.000000000Z",
			"kubernetes.io/config.source": "api",
		},
	}
	c := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: testImage, UserSpecifiedImage: "busybox:1.36"},
		Labels: map[string]string{
			"io.kubernetes.pod.name":       name,
			"io.kubernetes.pod.namespace":  "default",
			"io.kubernetes.pod.uid":        uid,
			"io.kubernetes.container.name": "app",
		},
		Annotations: map[string]string{
			"io.kubernetes.container.hash":                     "6f1c2a9b",
			"io.kubernetes.container.restartCount":             "0",
			"io.kubernetes.container.terminationMessagePath":   "/dev/termination-log",
			"io.kubernetes.container.terminationMessagePolicy": "File",
			"io.kubernetes.pod.terminationGracePeriod":         "30",
		},
		LogPath: "app/0.log",
		Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/var/run/secrets/kubernetes.io/serviceaccount", HostPath: "/var/lib/berth/pods/" + uid + "/volumes/kube-api-access", Readonly: true},
			{ContainerPath: "/etc/hosts", HostPath: "/var/lib/berth/pods/" + uid + "/etc-hosts"},
			{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/berth/pods/" + uid + "/containers/app/0"},
		},
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuPeriod: 100000, CpuShares: 102, MemoryLimitInBytes: 128 << 20, OomScoreAdj: 1000},
		},
	}
	return sb, c
}

// benchWorld creates benchNodes runtimes on one shared clock and fills them with running
// pods, returning them and the time spent in CRI calls (configs are built outside it).
func benchWorld(b *testing.B, clk clock.WithDelayedExecution) ([]*Runtime, time.Duration) {
	nodes := make([]*Runtime, benchNodes)
	var inCRI time.Duration
	for n := range nodes {
		r, err := New(Options{Clock: clk, Images: []string{testImage}})
		if err != nil {
			b.Fatal(err)
		}
		nodes[n] = r
		type pod struct {
			sb *runtimeapi.PodSandboxConfig
			c  *runtimeapi.ContainerConfig
		}
		var pods [benchPodsPerNode]pod
		for p := range pods {
			pods[p].sb, pods[p].c = benchPod(n, p)
		}
		start := time.Now()
		for _, p := range pods {
			sbID, err := r.RunPodSandbox(ctx, p.sb, "")
			if err != nil {
				b.Fatal(err)
			}
			id, err := r.CreateContainer(ctx, sbID, p.c, p.sb)
			if err != nil {
				b.Fatal(err)
			}
			if err := r.StartContainer(ctx, id); err != nil {
				b.Fatal(err)
			}
		}
		inCRI += time.Since(start)
	}
	return nodes, inCRI
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkRuntime150k measures the in-memory runtime at the scale of `berth sim`:
//
//   - create: build 5,000 runtimes holding 30 running pods each (150,000 sandboxes and
//     containers). ns/container is the time in RunPodSandbox+CreateContainer+StartContainer
//     per pod; B/container is the heap retained per pod (sandbox, container, IP, and the
//     runtime's share), what the simulation pays in memory; B/runtime is an empty runtime.
//   - relist: one second of PLEG across the whole simulation, ListPodSandbox and
//     ListContainers on every runtime; ns/relist is one node's relist.
//   - podstatus: what the node agent's GetPodStatus asks for one pod whose state changed.
func BenchmarkRuntime150k(b *testing.B) {
	b.Run("create", func(b *testing.B) {
		var inCRI time.Duration
		var retained, empty uint64
		for b.Loop() {
			before := heapInUse()
			nodes, t := benchWorld(b, clock.RealClock{})
			inCRI += t
			after := heapInUse()
			retained += after - before
			runtime.KeepAlive(nodes)
			nodes = nil
			before = heapInUse()
			bare := make([]*Runtime, benchNodes)
			for i := range bare {
				bare[i], _ = New(Options{Images: []string{testImage}})
			}
			empty += heapInUse() - before
			runtime.KeepAlive(bare)
		}
		b.ReportMetric(float64(inCRI.Nanoseconds())/float64(b.N*benchContainers), "ns/container")
		b.ReportMetric(float64(retained)/float64(b.N*benchContainers), "B/container")
		b.ReportMetric(float64(empty)/float64(b.N*benchNodes), "B/runtime")
	})

	b.Run("relist", func(b *testing.B) {
		nodes, _ := benchWorld(b, clock.RealClock{})
		relistAll(b, nodes) // the node agents' first relist, which builds the listed views
		b.ReportAllocs()
		for b.Loop() {
			relistAll(b, nodes)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchNodes), "ns/relist")
	})

	b.Run("podstatus", func(b *testing.B) {
		nodes, _ := benchWorld(b, clock.RealClock{})
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			r := nodes[i%benchNodes]
			uid := fmt.Sprintf("8c3f5b2e-%04d-4a1b-9c7d-%012d", i%benchNodes, (i/benchNodes)%benchPodsPerNode)
			i++
			sel := map[string]string{"io.kubernetes.pod.uid": uid}
			sbs, _ := r.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: sel})
			for _, s := range sbs {
				if _, err := r.PodSandboxStatus(ctx, s.Id, false); err != nil {
					b.Fatal(err)
				}
			}
			cs, _ := r.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: sel})
			for _, c := range cs {
				if _, err := r.ContainerStatus(ctx, c.Id, false); err != nil {
					b.Fatal(err)
				}
			}
			if len(sbs) != 1 || len(cs) != 1 {
				b.Fatalf("pod %s: %d sandboxes, %d containers", uid, len(sbs), len(cs))
			}
		}
	})
}

// relistAll is what every node's PLEG asks its runtime each second.
func relistAll(b *testing.B, nodes []*Runtime) {
	for _, r := range nodes {
		if _, err := r.ListPodSandbox(ctx, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := r.ListContainers(ctx, nil); err != nil {
			b.Fatal(err)
		}
	}
}
