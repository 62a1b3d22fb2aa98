package node

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/cri/pause"
	"github.com/berth-cluster/berth/pkg/node/config"
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/eviction"
	"github.com/berth-cluster/berth/pkg/node/images"
	"github.com/berth-cluster/berth/pkg/node/kuberuntime"
	"github.com/berth-cluster/berth/pkg/node/logs"
	"github.com/berth-cluster/berth/pkg/node/nodestatus"
	"github.com/berth-cluster/berth/pkg/node/pleg"
	"github.com/berth-cluster/berth/pkg/node/prober"
	"github.com/berth-cluster/berth/pkg/node/runtimeclass"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
)

// This file builds the node agent's modules, one small function each, in the order their
// dependencies allow (NewKubelet calls them): every function gets only the parts it needs,
// all of them built already, so no part is handed a reference filled in later.

// machineFor is what the node reports of its machine: deps.MachineInfo when the caller
// describes it (berth sim's template), else this machine.
func machineFor(deps Dependencies, dataDir string) (*nodestatus.MachineInfo, error) {
	if deps.MachineInfo != nil {
		return deps.MachineInfo()
	}
	return nodestatus.ReadMachineInfo(dataDir)
}

// nodeAllocatable is what the downward API reports for a limit a container does not set: the
// machine's cpus and memory (the kubelet's node allocatable without reservations). The
// runtime manager (env) and the volume manager (downwardAPI files) answer from the same list.
func nodeAllocatable(m *nodestatus.MachineInfo) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(m.NumCores), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(m.MemoryCapacity, resource.BinarySI),
	}
}

// tellRuntimePodCIDR hands the runtime the node's pod range (UpdateRuntimeConfig), so that
// its CNI plugin allocates from it.
func tellRuntimePodCIDR(ctx context.Context, rt internalapi.RuntimeService, podCIDR string) {
	if podCIDR == "" {
		return
	}
	if err := rt.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: podCIDR}}); err != nil {
		klog.FromContext(ctx).Error(err, "Telling the runtime the pod CIDR")
	}
}

// runtimeName is the CRI runtime's name: container IDs carry it ("containerd://…"), as the
// kubelet's do.
func runtimeName(ctx context.Context, rt interface {
	Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error)
}) string {
	if v, err := rt.Version(ctx, "v1"); err == nil {
		return v.RuntimeName
	}
	return ""
}

// criCommandRunner runs exec probes straight through the CRI's ExecSync, as the runtime
// manager's RunInContainer does: the prober is built before the runtime manager, which takes
// the prober's verdicts (liveness and startup kill containers).
type criCommandRunner struct {
	runtime interface {
		ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error)
	}
}

var _ prober.CommandRunner = criCommandRunner{}

func (r criCommandRunner) RunInContainer(ctx context.Context, id container.ContainerID, cmd []string, timeout time.Duration) ([]byte, error) {
	stdout, stderr, err := r.runtime.ExecSync(ctx, id.ID, cmd, timeout)
	return append(stdout, stderr...), err
}

// podDeletionSafety tells the status manager whether a pod might still run (the pod
// workers know), so that it deletes a pod from the API only once it surely does not.
type podDeletionSafety struct {
	workers interface{ CouldHaveRunningContainers(types.UID) bool }
}

func (s podDeletionSafety) PodCouldHaveRunningContainers(pod *v1.Pod) bool {
	return s.workers.CouldHaveRunningContainers(pod.UID)
}

// runtimeModules is what the runtime manager is built on besides the CRI.
type runtimeModules struct {
	client      kubernetes.Interface
	recorder    record.EventRecorder
	clock       clock.Clock
	machine     *nodestatus.MachineInfo
	allocatable v1.ResourceList
	probes      kuberuntime.ProbeResults
	volumes     kuberuntime.VolumeHost
	serviceEnv  func(ctx context.Context, pod *v1.Pod) (map[string]string, error)
	actuated    kuberuntime.ActuatedResources
	handlers    *runtimeclass.Manager
}

// newRuntimeManager builds the runtime manager (SyncPod, startContainer, killContainer) over
// the CRI.
func newRuntimeManager(ctx context.Context, cfg Config, kc *kubeletconfig.KubeletConfiguration, deps Dependencies, m runtimeModules) (*kuberuntime.Manager, error) {
	clusterDNS := []net.IP{}
	for _, s := range kc.ClusterDNS {
		if ip := net.ParseIP(s); ip != nil {
			clusterDNS = append(clusterDNS, ip)
		}
	}
	return kuberuntime.NewManager(kuberuntime.Config{
		RuntimeName:           runtimeName(ctx, deps.Runtime),
		RuntimeHandlers:       m.handlers,
		PodLogsDir:            kc.PodLogsDir,
		RootDir:               cfg.DataDir,
		NodeName:              cfg.NodeName,
		NodeIPs:               []net.IP{cfg.NodeIP},
		ClusterDNS:            clusterDNS,
		ClusterDomain:         kc.ClusterDomain,
		ResolvConf:            *kc.ResolverConfig,
		CgroupDriver:          kc.CgroupDriver,
		MachineMemoryCapacity: m.machine.MemoryCapacity,
		NodeAllocatable:       m.allocatable,
		Objects:               apiObjects{m.client},
		Probes:                m.probes,
		Volumes:               m.volumes,
		ServiceEnv:            m.serviceEnv,
		Actuated:              m.actuated,
		NoPodCgroups:          deps.Simulated,
		Clock:                 m.clock,
	}, deps.Runtime, deps.Images, m.recorder)
}

// newPLEG builds the PLEG, which calls two methods of the runtime (GetPods and GetPodStatus;
// pleg.NewGenericPLEG still asks for the whole container.Runtime). It follows the runtime's container events behind upstream's
// EventedPLEG feature gate (alpha, off by default; containerd 1.6 has no stream): berth sim
// turns it on, as its in-memory runtime streams them, so that idle pods cost no relist every
// second.
func newPLEG(kc *kubeletconfig.KubeletConfiguration, rt container.Runtime, events pleg.EventSource, cache pleg.Cache, clk clock.Clock, deps Dependencies) *pleg.GenericPLEG {
	if !kc.FeatureGates[EventedPLEG] {
		events = nil
	}
	return pleg.NewGenericPLEG(rt, cache, time.Second, events, clk, deps.Metrics).(*pleg.GenericPLEG)
}

// newContainerLogManager builds the rotation of containers' logs; a simulated node has no
// logs to rotate.
func newContainerLogManager(kc *kubeletconfig.KubeletConfiguration, rt internalapi.RuntimeService, simulated bool) (*logs.Manager, error) {
	maxLogSize, err := resource.ParseQuantity(kc.ContainerLogMaxSize)
	if err != nil {
		return nil, fmt.Errorf("containerLogMaxSize %q: %w", kc.ContainerLogMaxSize, err)
	}
	if simulated {
		return nil, nil
	}
	m, err := logs.NewManager(rt, maxLogSize.Value(), int(*kc.ContainerLogMaxFiles))
	if err != nil {
		return nil, fmt.Errorf("container log manager: %w", err)
	}
	return m, nil
}

// newImageGC builds the image garbage collector.
func newImageGC(kc *kubeletconfig.KubeletConfiguration, rt images.GCRuntime, recorder record.EventRecorder, nodeRef *v1.ObjectReference) (*images.GCManager, error) {
	gc, err := images.NewGCManager(rt, images.GCPolicy{
		HighThresholdPercent: int(*kc.ImageGCHighThresholdPercent),
		LowThresholdPercent:  int(*kc.ImageGCLowThresholdPercent),
		MinAge:               kc.ImageMinimumGCAge.Duration,
	}, pause.ImageName, recorder, nodeRef)
	if err != nil {
		return nil, fmt.Errorf("image garbage collection: %w", err)
	}
	return gc, nil
}

// hardThresholds are the hard eviction thresholds that are kept out of allocatable (the node
// status): memory's quantity and nodefs' percentage.
func hardThresholds(thresholds []eviction.Threshold) (memory resource.Quantity, nodefsPercent float64) {
	nodefsPercent = float64(nodestatus.DefaultNodefsThresholdPercent)
	for _, t := range thresholds {
		switch {
		case t.Signal == eviction.SignalMemoryAvailable && t.Quantity != nil:
			memory = *t.Quantity
		case t.Signal == eviction.SignalNodeFsAvailable && t.Quantity == nil:
			nodefsPercent = t.Percentage * 100
		}
	}
	return memory, nodefsPercent
}

// startConfigSources starts the config sources (file, http, apiserver) into podConfig's
// merge: the API server's sends pods once the node is known (nodeHasSynced).
func startConfigSources(ctx context.Context, cfg Config, kc *kubeletconfig.KubeletConfiguration, client kubernetes.Interface, deps Dependencies,
	podConfig *config.PodConfig, nodeHasSynced func() bool) {
	if cfg.ManifestPath != "" {
		config.NewSourceFile(ctx, cfg.ManifestPath, cfg.NodeName, kc.FileCheckFrequency.Duration, podConfig.Channel(ctx, kubetypes.FileSource))
	}
	if cfg.ManifestURL != "" {
		config.NewSourceURL(ctx, cfg.ManifestURL, kc.StaticPodURLHeader, cfg.NodeName, kc.HTTPCheckFrequency.Duration, podConfig.Channel(ctx, kubetypes.HTTPSource))
	}
	source := deps.APIServerSource
	if source == nil {
		source = func(ctx context.Context, nodeName string, nodeHasSynced func() bool, updates chan<- interface{}) {
			config.NewSourceApiserver(ctx, client, nodeName, nodeHasSynced, updates)
		}
	}
	source(ctx, cfg.NodeName, nodeHasSynced, podConfig.Channel(ctx, kubetypes.ApiserverSource))
}

// makePodLogsDir makes the directory the runtime writes containers' logs under.
func makePodLogsDir(kc *kubeletconfig.KubeletConfiguration) error {
	if err := os.MkdirAll(kc.PodLogsDir, 0o755); err != nil {
		return fmt.Errorf("creating the pod logs dir: %w", err)
	}
	return nil
}
