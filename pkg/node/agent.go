package node

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	internalapi "k8s.io/cri-api/pkg/apis"
	"k8s.io/klog/v2"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
	"github.com/berth-cluster/berth/pkg/cri/pause"
	"github.com/berth-cluster/berth/pkg/node/admission"
	"github.com/berth-cluster/berth/pkg/node/allocation"
	"github.com/berth-cluster/berth/pkg/node/clustertrustbundle"
	"github.com/berth-cluster/berth/pkg/node/config"
	"github.com/berth-cluster/berth/pkg/node/envvars"
	"github.com/berth-cluster/berth/pkg/node/eviction"
	"github.com/berth-cluster/berth/pkg/node/images"
	"github.com/berth-cluster/berth/pkg/node/metrics"
	"github.com/berth-cluster/berth/pkg/node/mirror"
	"github.com/berth-cluster/berth/pkg/node/nodestatus"
	"github.com/berth-cluster/berth/pkg/node/objectcache"
	"github.com/berth-cluster/berth/pkg/node/oom"
	"github.com/berth-cluster/berth/pkg/node/pleg"
	"github.com/berth-cluster/berth/pkg/node/podcertificate"
	"github.com/berth-cluster/berth/pkg/node/podmanager"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	"github.com/berth-cluster/berth/pkg/node/podworkers"
	"github.com/berth-cluster/berth/pkg/node/prober"
	"github.com/berth-cluster/berth/pkg/node/runtimeclass"
	"github.com/berth-cluster/berth/pkg/node/server"
	"github.com/berth-cluster/berth/pkg/node/stats"
	"github.com/berth-cluster/berth/pkg/node/status"
	"github.com/berth-cluster/berth/pkg/node/sysctl"
	"github.com/berth-cluster/berth/pkg/node/token"
	kubetypes "github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/node/volume"
	"github.com/berth-cluster/berth/pkg/util/panics"
	"github.com/berth-cluster/berth/pkg/version"
)

// Config is what `berth node` (and `berth up`) tell the node agent.
type Config struct {
	NodeName string
	// NodeIP is the node's InternalIP: the API server reaches the node API there.
	NodeIP net.IP
	// PodCIDR is the node's pod range; empty takes spec.podCIDR from the Node once set.
	PodCIDR string
	// DataDir is the node agent's root: pods, and containerd's state when berth starts it.
	DataDir string
	// PKIDir holds the cluster CA; the node's serving certificate is issued from it.
	PKIDir       string
	ManifestPath string
	ManifestURL  string
	// RuntimeEndpoint overrides the configuration's containerRuntimeEndpoint. With neither,
	// the node uses (and starts) its own containerd at DataDir/containerd/containerd.sock.
	RuntimeEndpoint string
	// Bridge is the Linux bridge of the pod network when berth starts containerd (berth0).
	Bridge string
	// Kubelet is the KubeletConfiguration, defaulted (LoadKubeletConfiguration).
	Kubelet *kubeletconfig.KubeletConfiguration
	// LogsDir is what the node API serves under /logs/ (/var/log).
	LogsDir string
	// Labels are added to the Node at registration.
	Labels map[string]string
	// ImageGCPeriod is how often the image GC looks at the image filesystem (5 min, the
	// kubelet's fixed period).
	ImageGCPeriod time.Duration
	// ReplaceKubernetesService makes the stand-in (APIServer) win over the kubernetes Service
	// for containers' KUBERNETES_SERVICE_HOST/PORT: for a node whose cluster IPs nothing
	// routes (no service proxy on the machine). Off, the real Service wins, as on the kubelet
	// (berth up, whose service proxy routes it).
	ReplaceKubernetesService bool
	// APIServer is the API server's URL as the node's kubeconfig names it (Run sets it).
	// While the cluster has no kubernetes Service, containers' KUBERNETES_SERVICE_HOST/PORT
	// point there (envvars.APIServerService); "" gives them none.
	APIServer string
}

// Run builds the node agent of a real node and runs it until ctx ends: its API clients, the
// runtime (containerd, started here when nothing answers on the endpoint), the modules
// (NewKubelet), the node API, and then Kubelet.Run.
func Run(ctx context.Context, restConfig *rest.Config, cfg Config) error {
	logger := klog.FromContext(ctx).WithValues("node", cfg.NodeName)
	ctx = klog.NewContext(ctx, logger)
	kc := cfg.Kubelet
	if kc == nil {
		var err error
		if kc, err = LoadKubeletConfiguration(""); err != nil {
			return err
		}
	}
	if cfg.NodeName == "" {
		return errors.New("node name is required")
	}
	if cfg.NodeIP == nil {
		cfg.NodeIP = net.IPv4(127, 0, 0, 1)
	}
	if cfg.LogsDir == "" {
		cfg.LogsDir = server.DefaultLogsDir
	}
	if cfg.APIServer == "" {
		cfg.APIServer = restConfig.Host
	}
	restConfig = rest.CopyConfig(restConfig)
	restConfig.ContentType = "application/vnd.kubernetes.protobuf"
	restConfig.UserAgent = "berth-node/" + cfg.NodeName
	restConfig.QPS, restConfig.Burst = float32(*kc.KubeAPIQPS), int(kc.KubeAPIBurst)
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	// Events have a client of their own (the kubelet's eventRecordQPS), so that a burst of
	// events never delays a status update.
	eventConfig := rest.CopyConfig(restConfig)
	eventConfig.QPS, eventConfig.Burst = 50, 100
	eventClient, err := kubernetes.NewForConfig(eventConfig)
	if err != nil {
		return err
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: eventClient.CoreV1().Events("")})
	defer broadcaster.Shutdown()
	recorder := broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: cfg.NodeName})

	// The runtime, through the CRI only.
	endpoint := cfg.RuntimeEndpoint
	if endpoint == "" {
		endpoint = kc.ContainerRuntimeEndpoint
	}
	if endpoint == "" {
		endpoint = "unix://" + filepath.Join(cfg.DataDir, "containerd", "containerd.sock")
	}
	// berth's containerd is supervised: started when nothing answers on the endpoint, and
	// started again whenever it exits, as systemd restarts a kubelet's containerd.
	runtimeProc, err := containerd.Supervise(ctx, containerd.Config{
		StateDir:     filepath.Join(cfg.DataDir, "containerd"),
		Endpoint:     strings.TrimPrefix(endpoint, "unix://"),
		PodCIDR:      cfg.PodCIDR,
		Bridge:       cfg.Bridge,
		SandboxImage: pause.ImageName,
	})
	if err != nil {
		return fmt.Errorf("starting containerd: %w", err)
	}
	defer runtimeProc.Stop()
	logger.Info("Supervising containerd", "endpoint", runtimeProc.Endpoint(), "log", runtimeProc.LogFile())
	if err := cri.EnsureSandboxImage(ctx, endpoint, pause.ImageName); err != nil {
		return fmt.Errorf("loading the sandbox image: %w", err)
	}
	nodeMetrics := metrics.New()
	runtimeService, imageService, err := cri.Connect(ctx, endpoint)
	if err != nil {
		return err
	}
	runtimeService = metrics.InstrumentRuntime(runtimeService, nodeMetrics)
	imageService = metrics.InstrumentImages(imageService, nodeMetrics)
	kl, updates, err := NewKubelet(ctx, cfg, kc, Dependencies{
		Client:   client,
		Recorder: recorder,
		Runtime:  runtimeService,
		Images:   imageService,
		Metrics:  nodeMetrics,
	})
	if err != nil {
		return err
	}

	// The node API: logs, exec, attach, port-forward, the stats summary and metrics.
	certFile, keyFile, err := cluster.EnsureNodeServing(cfg.PKIDir, cfg.NodeName, []net.IP{cfg.NodeIP})
	if err != nil {
		return fmt.Errorf("the node API's certificate: %w", err)
	}
	authz, err := nodeAPIAuthorizer(client, kc)
	if err != nil {
		return err
	}
	// The node API goroutine ends with Run, and comes back after a panic or a failed start
	// (its port still held by a previous process, say).
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // before wg.Wait
	wg.Go(func() {
		panics.Forever(ctx, "node-api", func(ctx context.Context) {
			err := server.Serve(ctx, server.ServerConfig{
				Address:      net.JoinHostPort(kc.Address, fmt.Sprint(kc.Port)),
				CertFile:     certFile,
				KeyFile:      keyFile,
				ClientCAFile: filepath.Join(cfg.PKIDir, "ca.crt"),
				NodeName:     cfg.NodeName,
				Authorizer:   authz,
				LogsDir:      cfg.LogsDir,
				Summary:      kl.statsProvider.Summary,
				Metrics:      stats.MetricsHandler(cfg.NodeName, runtimeService, nodeMetrics.Collectors()...),
			}, kl.podManager, kl.runtime)
			if err != nil && ctx.Err() == nil {
				logger.Error(err, "The node API stopped")
			}
		})
	})
	return kl.Run(ctx, updates)
}

// nodeAPIAuthorizer is how the node API authorizes requests, as the configuration's
// authorization.mode says: by default (Webhook) it asks the API server with a
// SubjectAccessReview, which works against berth's API server and an upstream kube-apiserver
// alike; the client's credentials must be allowed to create subjectaccessreviews.
func nodeAPIAuthorizer(client kubernetes.Interface, kc *kubeletconfig.KubeletConfiguration) (authorizer.UnconditionalAuthorizer, error) {
	switch kc.Authorization.Mode {
	case kubeletconfig.KubeletAuthorizationModeWebhook:
		return server.NewDelegatingAuthorizer(client.AuthorizationV1(),
			kc.Authorization.Webhook.CacheAuthorizedTTL.Duration, kc.Authorization.Webhook.CacheUnauthorizedTTL.Duration)
	case kubeletconfig.KubeletAuthorizationModeAlwaysAllow:
		return authorizerfactory.NewAlwaysAllowAuthorizer(), nil
	}
	return nil, fmt.Errorf("the node API's authorization mode %q is neither %s nor %s", kc.Authorization.Mode,
		kubeletconfig.KubeletAuthorizationModeWebhook, kubeletconfig.KubeletAuthorizationModeAlwaysAllow)
}

// Dependencies are what NewKubelet builds a node agent on. Run makes them for a real node;
// berth sim makes them for thousands of simulated nodes in one process, sharing one client
// and one watch of bound pods, each with an in-memory CRI runtime.
type Dependencies struct {
	Client   kubernetes.Interface
	Recorder record.EventRecorder
	Runtime  internalapi.RuntimeService
	Images   internalapi.ImageManagerService
	// Metrics are the node agent's own; nil records none.
	Metrics *metrics.Metrics
	// APIServerSource sends the pods bound to the node (config.NewSourceApiserver's
	// contract); nil is a watch of the node's own.
	APIServerSource func(ctx context.Context, nodeName string, nodeHasSynced func() bool, updates chan<- interface{})
	// Nodes is a shared informer of Nodes including this one, run by the caller; nil: the
	// node status controller watches its own Node.
	Nodes coreinformers.NodeInformer
	// Services are the cluster's Services for the containers' service variables, run by the
	// caller (berth sim shares one among its nodes); nil: Kubelet.Run runs its own.
	Services *envvars.Services
	// RuntimeClasses look runtime handlers up, run by the caller; nil: the node agent runs
	// its own.
	RuntimeClasses *runtimeclass.Manager
	// Tokens are the service-account tokens of the node's projected volumes, run by the
	// caller (a test that moves the manager's clock); nil: the node agent's own.
	Tokens *token.Manager
	// MachineInfo describes the node; nil reads this machine.
	MachineInfo func() (*nodestatus.MachineInfo, error)
	// Simulated says the runtime runs nothing on this machine (berth's in-memory runtime):
	// no pod cgroups, no OOM watcher, no container log rotation, and no eviction manager,
	// whose signals would be this machine's rather than the node's.
	Simulated bool
	// Clock is the node agent's clock; nil is the real one.
	Clock clock.WithTicker
}

// machineAddresses are this machine's global unicast addresses.
func machineAddresses() []net.IP {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var ips []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
			ips = append(ips, n.IP)
		}
	}
	return ips
}

// EventedPLEG is the kubelet feature gate (KubeletConfiguration featureGates) under which the
// PLEG follows the runtime's container event stream and relists only every 5 minutes.
const EventedPLEG = "EventedPLEG"

// NewKubelet builds the node agent's modules on deps (seed 000's NewMainKubelet): the
// runtime manager over the CRI, pod manager, PLEG, pod workers, status, probe, volume, image
// GC and eviction managers, node status, admission and the config sources. It returns the
// Kubelet and the merged pod updates to run it with.
//
// The modules are built in the order their dependencies allow, each from the parts built
// before it (modules.go): pod workers, then the status manager (which asks them whether a
// pod may still run), the prober (exec probes straight through the CRI), the volume manager,
// and the runtime manager on the prober's verdicts and the volume manager. The Kubelet is
// the pod workers' PodSyncer (SyncPod and the termination steps), as in the seeds.
func NewKubelet(ctx context.Context, cfg Config, kc *kubeletconfig.KubeletConfiguration, deps Dependencies) (*Kubelet, <-chan kubetypes.PodUpdate, error) {
	client, recorder := deps.Client, deps.Recorder
	if cfg.NodeIP == nil {
		// As Run defaults it: a nil IP would be reported as the pods' hostIP "<nil>", which
		// the API's status validation refuses.
		cfg.NodeIP = net.IPv4(127, 0, 0, 1)
	}
	var clk clock.WithTicker = clock.RealClock{}
	if deps.Clock != nil {
		clk = deps.Clock
	}
	tellRuntimePodCIDR(ctx, deps.Runtime, cfg.PodCIDR)
	machine, err := machineFor(deps, cfg.DataDir)
	if err != nil {
		return nil, nil, err
	}
	allocatable := nodeAllocatable(machine)

	kl := &Kubelet{
		nodeName:         cfg.NodeName,
		nodeIPs:          []net.IP{cfg.NodeIP},
		rootDir:          cfg.DataDir,
		client:           client,
		recorder:         recorder,
		clock:            clk,
		podManager:       podmanager.New(),
		podCache:         pleg.NewCache(),
		metrics:          deps.Metrics,
		runtimeState:     nodestatus.NewRuntimeState(),
		reasonCache:      podstatus.NewReasonCache(),
		crashLoopBackOff: flowcontrol.NewBackOff(10*time.Second, 5*time.Minute),
		imageGCPeriod:    cfg.ImageGCPeriod,
	}
	if kl.imageGCPeriod <= 0 {
		kl.imageGCPeriod = 5 * time.Minute
	}
	kl.workQueue = podworkers.NewWorkQueue(clk)
	kl.podWorkers = podworkers.New(kl, recorder, kl.workQueue, kc.SyncFrequency.Duration, 10*time.Second, kl.podCache)
	kl.statusManager = status.NewManager(client, kl.podManager, podDeletionSafety{kl.podWorkers})
	kl.probeManager = prober.NewManager(ctx, kl.statusManager, criCommandRunner{deps.Runtime}, recorder, kl.podWorkers.IsPodTerminationRequested)
	kl.runtimeClasses, kl.ownRuntimeClasses = deps.RuntimeClasses, deps.RuntimeClasses == nil
	if kl.ownRuntimeClasses {
		kl.runtimeClasses = runtimeclass.NewManager(client)
	}
	kl.services, kl.ownServices = deps.Services, deps.Services == nil
	if kl.ownServices {
		kl.services = envvars.NewServices(client)
	}
	kl.tokens, kl.ownTokens = deps.Tokens, deps.Tokens == nil
	if kl.ownTokens {
		kl.tokens = token.NewManager(client, clk)
	}
	serviceEnv := kl.services.EnvFor
	if cfg.APIServer != "" {
		standIn, err := envvars.APIServerService(cfg.APIServer, cfg.NodeIP, machineAddresses())
		if err != nil {
			return nil, nil, err
		}
		serviceEnv = kl.services.EnvForWithStandIn(standIn, cfg.ReplaceKubernetesService)
	}
	// The volumes read their objects from watches (the kubelet's Watch change-detection
	// strategy): the resync asks for every running pod's objects each period.
	kl.objects = objectcache.New(client, clk)
	kl.volumeManager = volume.NewManager(kl.podsDir(), kl.objects, kl.tokens, func() v1.ResourceList { return allocatable })
	// clusterTrustBundle and podCertificate sources: each starts its informer at its first use.
	kl.trustBundles = clustertrustbundle.NewManager(client)
	kl.podCertificates = podcertificate.NewManager(client, recorder, cfg.NodeName, clk)
	kl.volumeManager.SetCertificates(kl.trustBundles, kl.podCertificates)
	// What the node granted each pod and what the runtime applied: kept in the data dir, so
	// that a restart resumes both.
	allocated, actuated := openResourceStores(ctx, cfg.DataDir)
	kl.actuated = actuated
	runtime, err := newRuntimeManager(ctx, cfg, kc, deps, runtimeModules{
		client:      client,
		recorder:    recorder,
		clock:       clk,
		machine:     machine,
		allocatable: allocatable,
		probes:      probeVerdicts{kl.probeManager},
		volumes:     kl.volumeManager,
		serviceEnv:  serviceEnv,
		actuated:    actuated,
		handlers:    kl.runtimeClasses,
	})
	if err != nil {
		return nil, nil, err
	}
	kl.runtime, kl.podDirs = runtime, runtime
	kl.pleg = newPLEG(kc, runtime, deps.Runtime, kl.podCache, clk, deps)
	if kl.containerLogManager, err = newContainerLogManager(kc, deps.Runtime, deps.Simulated); err != nil {
		return nil, nil, err
	}
	if kl.imageGC, err = newImageGC(kc, runtime, recorder, kl.nodeRef()); err != nil {
		return nil, nil, err
	}
	kl.imageList = images.NewList(runtime, clk)
	kl.statsProvider = stats.NewProvider(cfg.NodeName, cfg.DataDir, kc.PodLogsDir, deps.Runtime, deps.Images, kl.podManager.GetPods)
	podConfig := config.NewPodConfig(recorder)
	kl.sourcesReady = config.NewSourcesReady(podConfig.SeenAllSources)

	thresholds, err := eviction.ParseThresholds(kc.EvictionHard)
	if err != nil {
		return nil, nil, err
	}
	memoryThreshold, nodefsPercent := hardThresholds(thresholds)
	var pressure nodestatus.PressureSource
	// A simulated node has no eviction manager: its signals would be this machine's.
	if !deps.Simulated {
		kl.eviction = eviction.NewManager(kl.podsToMeasure,
			func(uid types.UID) string { return filepath.Join(kl.podsDir(), string(uid)) }, kl.evictPod,
			eviction.Config{
				Thresholds:               thresholds,
				PressureTransitionPeriod: kc.EvictionPressureTransitionPeriod.Duration,
				Summary:                  kl.statsProvider.Summary,
				DeleteUnusedContainers:   kl.garbageCollectForEviction,
				DeleteUnusedImages:       kl.imageGC.DeleteUnusedImages,
				Recorder:                 recorder,
				Node:                     kl.nodeRef(),
				Metrics:                  deps.Metrics,
			})
		pressure = kl.eviction
	}
	kl.nodeStatus = nodestatus.New(client, nodestatus.Config{
		NodeName:               cfg.NodeName,
		NodeIP:                 cfg.NodeIP,
		PodCIDR:                cfg.PodCIDR,
		KubeletVersion:         version.GitVersion(),
		MaxPods:                int64(kc.MaxPods),
		Images:                 kl.imageList,
		HardEvictionMemory:     memoryThreshold,
		NodefsThresholdPercent: nodefsPercent,
		RootDir:                cfg.DataDir,
		DaemonPort:             kc.Port,
		Labels:                 cfg.Labels,
		Taints:                 kc.RegisterWithTaints,
		StatusUpdateFrequency:  kc.NodeStatusUpdateFrequency.Duration,
		StatusReportFrequency:  kc.NodeStatusReportFrequency.Duration,
		LeaseDuration:          time.Duration(kc.NodeLeaseDurationSeconds) * time.Second,
		UpdateRuntimeUp:        kl.updateRuntimeUp,
		Pressure:               pressure,
		MachineInfo:            deps.MachineInfo,
		Clock:                  clk,
		Nodes:                  deps.Nodes,
	}, runtime, kl.runtimeState, recorder)
	// Safe sysctls are always allowed, unsafe ones only as the node's configuration says.
	sysctls, err := sysctl.NodeAllowlist(klog.FromContext(ctx), kc.AllowedUnsafeSysctls)
	if err != nil {
		return nil, nil, fmt.Errorf("allowedUnsafeSysctls: %w", err)
	}
	kl.admitHandlers = []admission.PodAdmitHandler{sysctls, admission.NewPredicateAdmitHandler(kl.nodeStatus.GetNode)}
	if !deps.Simulated {
		kl.oomWatcher = oom.NewWatcher(recorder, kl.nodeRef())
		kl.admitHandlers = append([]admission.PodAdmitHandler{kl.eviction}, kl.admitHandlers...)
	}
	kl.allocation = allocation.NewManager(allocation.Config{
		Allocated:    allocated,
		Admit:        func(pod *v1.Pod, others []*v1.Pod) (bool, string, string) { return kl.canAdmitPod(others, pod) },
		GetPodByUID:  kl.podManager.GetPodByUID,
		ActivePods:   func() []*v1.Pod { return kl.activePods(&v1.Pod{}) },
		SourcesReady: kl.sourcesReady.AllReady,
		Recorder:     recorder,
		Clock:        clk,
	})
	kl.mirrorClient = mirror.NewClient(client, cfg.NodeName, kl.nodeStatus.GetNode)

	nodeHasSynced := func() bool { _, err := kl.nodeStatus.GetNode(); return err == nil }
	startConfigSources(ctx, cfg, kc, client, deps, podConfig, nodeHasSynced)
	if err := makePodLogsDir(kc); err != nil {
		return nil, nil, err
	}
	return kl, podConfig.Updates(), nil
}

// openResourceStores opens the records of allocated and actuated resources in dataDir (in
// memory without one). A record that cannot be read is logged and starts empty: the pods are
// then admitted at their specs' resources.
func openResourceStores(ctx context.Context, dataDir string) (allocated, actuated *allocation.Store) {
	open := func(file string) *allocation.Store {
		path := ""
		if dataDir != "" {
			path = filepath.Join(dataDir, file)
		}
		s, err := allocation.NewStore(path)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Failed to read a pod resources record; starting with an empty one", "path", path)
		}
		return s
	}
	return open(allocation.AllocatedStateFile), open(allocation.ActuatedStateFile)
}

// garbageCollectForEviction is the eviction manager's first reclaim of node disk: dead
// containers and sandboxes.
func (kl *Kubelet) garbageCollectForEviction(ctx context.Context) error {
	return kl.runtime.GarbageCollect(ctx, containerGCPolicy, kl.podWorkers, kl.sourcesReady.AllReady())
}
