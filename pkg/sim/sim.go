// Package sim runs many node agents in one process (berth sim): each is berth's real node
// agent (config source, syncLoop, pod workers, SyncPod, status manager, node status and
// Lease) built by node.NewKubelet on its own in-memory CRI runtime (pkg/cri/memory), so
// schedulers, controllers and operators can be tested against thousands of nodes whose pods
// really go through the kubelet's logic. What can be shared without changing behaviour is:
// one API client connection, one event broadcaster, one watch of bound pods fanned out by
// node name (config.SharedApiserverSource), and one watch each of Nodes and Services. No
// behaviour is faked above the CRI.
package sim

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/cri/memory"
	"github.com/berth-cluster/berth/pkg/node"
	"github.com/berth-cluster/berth/pkg/node/config"
	"github.com/berth-cluster/berth/pkg/node/envvars"
	"github.com/berth-cluster/berth/pkg/node/nodestatus"
	"github.com/berth-cluster/berth/pkg/node/runtimeclass"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// nodesPerConnection is how many simulated nodes share one connection to the API server.
const nodesPerConnection = 50

// maxBroadcasters bounds the event broadcasters (each a queue and a writer goroutine).
const maxBroadcasters = 256

// ClusterDNS is the simulated nodes' clusterDNS (kube-dns's usual Service IP).
const ClusterDNS = "10.96.0.10"

// SimulatedLabel marks simulated nodes (KWOK's nodes carry type=kwok the same way).
const SimulatedLabel = "node.berth.dev/simulated"

// Options say which nodes to simulate.
type Options struct {
	// Nodes is how many; they are named NamePrefix + a four-digit index from 1 (sim-0001).
	Nodes      int
	NamePrefix string
	// Template gives every node its labels, annotations are ignored, taints and capacity
	// (cpu, memory, ephemeral-storage, pods); nil is DefaultTemplate.
	Template *v1.Node
	// PodsPerNode is the pods capacity when the template sets none (110).
	PodsPerNode int
	// DataDir holds each node agent's directory (pods, logs): DataDir/<node>, on one tmpfs that
	// Run mounts and unmounts (when it may mount).
	DataDir string
	// Runtime shapes every node's runtime (pull delays, images); its PodCIDR is per node.
	Runtime memory.Options
	// QPS and Burst are the shared client's; 0 is 10000 and 20000.
	QPS   float32
	Burst int
}

// DefaultTemplate is a node as KWOK's default one: 32 cores, 256 GiB, 110 pods.
func DefaultTemplate() *v1.Node {
	return &v1.Node{Status: v1.NodeStatus{Capacity: v1.ResourceList{
		v1.ResourceCPU:              resource.MustParse("32"),
		v1.ResourceMemory:           resource.MustParse("256Gi"),
		v1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}}}
}

// NodeName is the name of simulated node i (from 1).
func NodeName(prefix string, i int) string { return fmt.Sprintf("%s%04d", prefix, i) }

// podCIDR is node i's pod range: a /24 of 10.128.0.0/9, room for 32768 nodes.
func podCIDR(i int) string { return fmt.Sprintf("10.%d.%d.0/24", 128+i/256, i%256) }

// nodeIP is node i's InternalIP, in 172.16.0.0/12; nothing answers there.
func nodeIP(i int) net.IP { return net.IPv4(172, byte(16+i/65536), byte(i/256%256), byte(i%256)) }

// Run starts the simulated nodes against the API server restConfig reaches and blocks until
// ctx ends, then waits for every node agent to stop. ready, if not nil, is called once all
// are built and running.
func Run(ctx context.Context, restConfig *rest.Config, opts Options, ready func()) error {
	logger := klog.FromContext(ctx)
	if opts.Nodes <= 0 {
		return errors.New("--nodes must be at least 1")
	}
	if opts.NamePrefix == "" {
		opts.NamePrefix = "sim-"
	}
	if opts.Template == nil {
		opts.Template = DefaultTemplate()
	}
	if opts.PodsPerNode == 0 {
		opts.PodsPerNode = 110
	}
	if opts.DataDir == "" {
		return errors.New("a data dir is required")
	}
	// Unmounted last, after every node agent has stopped (the defer below it waits for them).
	if unmount, err := mountSharedTmpfs(opts.DataDir); err != nil {
		logger.Info("The simulated nodes' directory is not on a tmpfs of its own: each pod's secret volumes get a mount", "dir", opts.DataDir, "err", err)
	} else {
		defer unmount()
	}
	restConfig = rest.CopyConfig(restConfig)
	restConfig.ContentType = "application/vnd.kubernetes.protobuf"
	restConfig.UserAgent = "berth-sim"
	restConfig.QPS, restConfig.Burst = opts.QPS, opts.Burst
	if restConfig.QPS == 0 {
		restConfig.QPS, restConfig.Burst = 10000, 20000
	}
	// One HTTP/2 connection carries at most 250 requests at once (the server's stream
	// limit); a real node has a connection of its own. Each group of nodesPerConnection
	// nodes shares one: a Dial of its own gives a client its own connection.
	clients := make([]kubernetes.Interface, (opts.Nodes+nodesPerConnection-1)/nodesPerConnection)
	for i := range clients {
		c := rest.CopyConfig(restConfig)
		c.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
		var err error
		if clients[i], err = kubernetes.NewForConfig(c); err != nil {
			return err
		}
	}
	client := clients[0]
	// A broadcaster queues at most 1,000 events and writes them one at a time; a real node
	// has one of its own. Simulated nodes share a pool, so that a burst of pods on many nodes
	// does not overflow one queue and lose events.
	broadcasters := make([]record.EventBroadcaster, min(opts.Nodes, maxBroadcasters))
	for i := range broadcasters {
		broadcasters[i] = record.NewBroadcaster(record.WithContext(ctx))
		broadcasters[i].StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: clients[i%len(clients)].CoreV1().Events("")})
		defer broadcasters[i].Shutdown()
	}

	source := config.NewSharedApiserverSource(client)
	go source.Run(ctx)
	// One watch of the simulated Nodes serves every node status controller.
	nodeInformers := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = SimulatedLabel + "=true"
	}))
	nodes := nodeInformers.Core().V1().Nodes()
	nodes.Informer()
	nodeInformers.Start(ctx.Done())
	defer nodeInformers.Shutdown()
	// One watch of the Services gives every node's containers their service variables.
	services := envvars.NewServices(client)
	var servicesDone sync.WaitGroup
	defer servicesDone.Wait()
	servicesCtx, stopServices := context.WithCancel(ctx)
	defer stopServices() // before servicesDone.Wait
	servicesDone.Go(func() { services.Run(servicesCtx) })
	runtimeClasses := runtimeclass.NewManager(client)
	servicesDone.Go(func() { runtimeClasses.Run(servicesCtx) })
	clk := clock.RealClock{}
	machine, err := machineInfo(opts.Template)
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	for i := 1; i <= opts.Nodes; i++ {
		name := NodeName(opts.NamePrefix, i)
		kl, updates, err := buildNode(ctx, name, i, opts, clients[(i-1)/nodesPerConnection], broadcasters[i%len(broadcasters)], source, nodes, services, runtimeClasses, clk, machine)
		if err != nil {
			return fmt.Errorf("node %s: %w", name, err)
		}
		wg.Go(func() {
			nodeCtx := klog.NewContext(ctx, logger.WithValues("node", name))
			if err := kl.Run(nodeCtx, updates); err != nil {
				logger.Error(err, "Simulated node agent stopped", "node", name)
			}
		})
	}
	logger.Info("Simulated nodes running", "nodes", opts.Nodes)
	if ready != nil {
		ready()
	}
	<-ctx.Done()
	return nil
}

// buildNode makes node i's runtime and node agent.
func buildNode(ctx context.Context, name string, i int, opts Options, client kubernetes.Interface, broadcaster record.EventBroadcaster,
	source *config.SharedApiserverSource, nodes coreinformers.NodeInformer, services *envvars.Services, runtimeClasses *runtimeclass.Manager, clk clock.WithTickerAndDelayedExecution, machine nodestatus.MachineInfo) (*node.Kubelet, <-chan kubetypes.PodUpdate, error) {
	dataDir := filepath.Join(opts.DataDir, name)
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, nil, err
	}
	rtOpts := opts.Runtime
	rtOpts.Clock = clk
	rtOpts.PodCIDR = podCIDR(i)
	rtOpts.ImageFsMountpoint = dataDir
	rt, err := memory.New(rtOpts)
	if err != nil {
		return nil, nil, err
	}
	kc, err := node.LoadKubeletConfiguration("")
	if err != nil {
		return nil, nil, err
	}
	kc.MaxPods = int32(opts.PodsPerNode)
	if pods, ok := opts.Template.Status.Capacity[v1.ResourcePods]; ok {
		kc.MaxPods = int32(pods.Value())
	}
	kc.PodLogsDir = filepath.Join(dataDir, "logs")
	// The conventional cluster DNS address: as on a cluster that runs DNS, ClusterFirst pods
	// resolve through it (and no MissingClusterDNS warning is recorded for every pod).
	kc.ClusterDNS = []string{ClusterDNS}
	kc.RegisterWithTaints = opts.Template.Spec.Taints
	// The in-memory runtime streams container events: the PLEG follows them and relists
	// every 5 minutes instead of every second (upstream's EventedPLEG).
	kc.FeatureGates = map[string]bool{node.EventedPLEG: true}
	labels := map[string]string{SimulatedLabel: "true"}
	for k, v := range opts.Template.Labels {
		labels[k] = v
	}
	m := machine
	m.MachineID, m.SystemUUID = name, name
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: name})
	kl, updates, err := node.NewKubelet(ctx, node.Config{
		NodeName: name,
		NodeIP:   nodeIP(i),
		PodCIDR:  podCIDR(i),
		DataDir:  dataDir,
		Kubelet:  kc,
		Labels:   labels,
	}, kc, node.Dependencies{
		Client:          client,
		Recorder:        recorder,
		Runtime:         rt,
		Images:          rt,
		APIServerSource: source.Source,
		Nodes:           nodes,
		Services:        services,
		RuntimeClasses:  runtimeClasses,
		MachineInfo:     func() (*nodestatus.MachineInfo, error) { return &m, nil },
		Simulated:       true,
		Clock:           clk,
	})
	return kl, updates, err
}

// machineInfo is what every simulated node reports of its machine: the template's
// capacity, and this machine's kernel and OS.
func machineInfo(template *v1.Node) (nodestatus.MachineInfo, error) {
	host, err := nodestatus.ReadMachineInfo(os.TempDir())
	if err != nil {
		return nodestatus.MachineInfo{}, err
	}
	c := template.Status.Capacity
	return nodestatus.MachineInfo{
		NumCores:       int(c.Cpu().Value()),
		MemoryCapacity: c.Memory().Value(),
		RootfsCapacity: c.StorageEphemeral().Value(),
		BootID:         host.BootID,
		KernelVersion:  host.KernelVersion,
		OSImage:        host.OSImage,
	}, nil
}
