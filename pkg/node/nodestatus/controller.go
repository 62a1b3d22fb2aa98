package nodestatus

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// The kubelet's defaults.
const (
	DefaultMaxPods                = 110
	DefaultDaemonPort             = 10250
	DefaultStatusUpdateFrequency  = 10 * time.Second
	DefaultStatusReportFrequency  = 5 * time.Minute
	DefaultLeaseDuration          = 40 * time.Second
	DefaultLeaseRenewInterval     = 10 * time.Second
	DefaultMaxImages              = 50
	DefaultNodefsThresholdPercent = 10

	// nodeStatusUpdateRetry is how many times a status update is tried in one sync.
	nodeStatusUpdateRetry = 5
	// fastStatusUpdatePeriod is how often a starting node checks whether it became ready.
	fastStatusUpdatePeriod = 100 * time.Millisecond
	// nodeReadyGracePeriod is how long fastStatusUpdateOnce keeps trying.
	nodeReadyGracePeriod = 120 * time.Second
)

// DefaultHardEvictionMemory is the kubelet's memory.available hard eviction threshold.
var DefaultHardEvictionMemory = resource.MustParse("100Mi")

// PressureSource tells whether the node is short of memory, disk or process IDs (the kubelet's
// eviction manager).
type PressureSource interface {
	IsUnderMemoryPressure() bool
	IsUnderDiskPressure() bool
	IsUnderPIDPressure() bool
}

// Config says what node this is and how often to report on it. Zero values take the kubelet's
// defaults.
type Config struct {
	NodeName string
	// Hostname is the hostname label and address; NodeName when empty.
	Hostname string
	// NodeIP is the node's InternalIP. When nil, the node name's DNS addresses on this host,
	// else the host's first global unicast address.
	NodeIP net.IP
	// PodCIDR is the node's pod range ("10.244.1.0/24", or two comma-separated for dual stack),
	// set on the Node when the node agent creates it; berth has no CIDR allocator yet.
	PodCIDR        string
	KubeletVersion string
	// MaxPods is the pods capacity (110).
	MaxPods int64
	// Reserved is system-reserved plus kube-reserved, kept out of allocatable.
	Reserved v1.ResourceList
	// HardEvictionMemory is the memory.available hard eviction threshold (100Mi), and
	// NodefsThresholdPercent the nodefs.available one (10 % of ephemeral storage); both are kept
	// out of allocatable. A negative percent means no threshold.
	HardEvictionMemory     resource.Quantity
	NodefsThresholdPercent float64
	// RootDir is the node agent's root dir: its filesystem is the ephemeral storage.
	RootDir string
	// DaemonPort is the node API's port (10250), reported in status.daemonEndpoints.
	DaemonPort int32
	// Labels and Taints are added to the Node when the node agent creates it.
	Labels map[string]string
	Taints []v1.Taint
	// StatusUpdateFrequency is how often the status is computed (10 s); it is sent when it
	// changed or StatusReportFrequency (5 min) passed, since the Lease is the heartbeat.
	StatusUpdateFrequency time.Duration
	StatusReportFrequency time.Duration
	// LeaseDuration (40 s) and LeaseRenewInterval (10 s) are the node Lease's.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// MaxImages is how many images the status lists (50; negative for all).
	MaxImages int
	// Images is the node's image list (images.List, refreshed every 30 s, as the kubelet's
	// image cache); nil reports no images.
	Images ImageList

	// Pressure reports resource pressure; nil means never under pressure.
	Pressure PressureSource
	// UpdateRuntimeUp refreshes the RuntimeState while the node waits to become ready (the
	// node agent's updateRuntimeUp); nil uses UpdateRuntimeUp on the Controller's runtime.
	UpdateRuntimeUp func(ctx context.Context)
	// MachineInfo reads the machine; nil uses ReadMachineInfo(RootDir).
	MachineInfo func() (*MachineInfo, error)
	// Clock is the time; nil is the real clock.
	Clock clock.WithTicker
	// Nodes is a shared informer of Nodes that includes this one, run by the caller (berth
	// sim shares one among its nodes); nil: the Controller watches its own Node.
	Nodes coreinformers.NodeInformer
}

func (c *Config) complete() {
	if c.Hostname == "" {
		c.Hostname = c.NodeName
	}
	if c.MaxPods == 0 {
		c.MaxPods = DefaultMaxPods
	}
	if c.HardEvictionMemory.IsZero() {
		c.HardEvictionMemory = DefaultHardEvictionMemory.DeepCopy()
	}
	if c.NodefsThresholdPercent == 0 {
		c.NodefsThresholdPercent = DefaultNodefsThresholdPercent
	}
	if c.DaemonPort == 0 {
		c.DaemonPort = DefaultDaemonPort
	}
	if c.StatusUpdateFrequency == 0 {
		c.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if c.StatusReportFrequency == 0 {
		c.StatusReportFrequency = DefaultStatusReportFrequency
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.LeaseRenewInterval == 0 {
		c.LeaseRenewInterval = DefaultLeaseRenewInterval
	}
	if c.MaxImages == 0 {
		c.MaxImages = DefaultMaxImages
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.MachineInfo == nil {
		rootDir := c.RootDir
		c.MachineInfo = func() (*MachineInfo, error) { return ReadMachineInfo(rootDir) }
	}
}

// Controller keeps the node's Node object and Lease: it registers the node, reports its status
// (seed 000's syncNodeStatus and fastStatusUpdateOnce) and renews its Lease
// (nodeLeaseController).
//
// The status is computed by pure setters (setters.go) from inputs the Controller reads first;
// the Controller sends it and records the events of the changes once it is stored. Its own
// state, guarded by mu (the kubelet's syncNodeStatusMux):
//
//	unregistered ──registerWithAPIServer──► registered
//	registered: every StatusUpdateFrequency syncNodeStatus ── changed, or StatusReportFrequency
//	            passed ──► PATCH nodes/status, lastStatusReport = now
//	starting:   every 100 ms fastStatusUpdateOnce ── Ready computed True ──► PATCH, done
type Controller struct {
	client   kubernetes.Interface
	cfg      Config
	runtime  Runtime
	state    *RuntimeState
	recorder record.EventRecorder
	clock    clock.WithTicker

	informers  informers.SharedInformerFactory // nil with a shared Nodes informer
	nodeLister corelisters.NodeLister
	nodeSynced cache.InformerSynced
	started    chan struct{} // closed once the informer runs
	// startOnce closes started once: Run comes back after a panic (panics.Forever).
	startOnce sync.Once

	mu                sync.Mutex
	registered        bool
	lastStatusReport  time.Time
	reportDelay       time.Duration
	lastUnschedulable bool
	rebootRecorded    bool
	// lastConditionEvents is the last event recorded for each condition.
	lastConditionEvents map[v1.NodeConditionType]string
	nodeIP              net.IP
}

// New returns the controller of the node cfg names.
func New(client kubernetes.Interface, cfg Config, runtime Runtime, runtimeState *RuntimeState, recorder record.EventRecorder) *Controller {
	cfg.complete()
	var factory informers.SharedInformerFactory
	nodes := cfg.Nodes
	if nodes == nil {
		factory = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", cfg.NodeName).String()
		}))
		nodes = factory.Core().V1().Nodes()
	}
	c := &Controller{
		client:     client,
		cfg:        cfg,
		runtime:    runtime,
		state:      runtimeState,
		recorder:   recorder,
		clock:      cfg.Clock,
		informers:  factory,
		nodeLister: nodes.Lister(),
		nodeSynced: nodes.Informer().HasSynced,
		started:    make(chan struct{}),
		nodeIP:     cfg.NodeIP,

		lastConditionEvents: map[v1.NodeConditionType]string{},
	}
	if c.cfg.UpdateRuntimeUp == nil {
		c.cfg.UpdateRuntimeUp = func(ctx context.Context) { UpdateRuntimeUp(ctx, c.runtime, c.state, c.clock.Now()) }
	}
	return c
}

// Run registers the node, then keeps its status and Lease current until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	c.recorder.Eventf(c.nodeRef(), v1.EventTypeNormal, "Starting", "Starting kubelet.")
	if c.informers != nil {
		c.informers.Start(ctx.Done())
		// Only at the end: a Run that panicked is run again, and a factory once shut down
		// starts nothing.
		defer func() {
			if ctx.Err() != nil {
				c.informers.Shutdown()
			}
		}()
	}
	c.startOnce.Do(func() { close(c.started) })

	c.mu.Lock()
	c.registerWithAPIServer(ctx)
	c.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	// The Lease's owner and the fast status update read the Node from the informer.
	if err := wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(context.Context) (bool, error) {
		_, err := c.GetNode()
		return err == nil, nil
	}); err != nil {
		return
	}

	var wg sync.WaitGroup
	wg.Go(func() { panics.Forever(ctx, Component, c.newLeaseController().Run) })
	wg.Go(func() { _ = panics.Call(ctx, Component, func() error { c.fastStatusUpdateOnce(ctx); return nil }) })
	wg.Go(func() {
		panics.Forever(ctx, Component, func(ctx context.Context) {
			wait.UntilWithContext(ctx, c.syncNodeStatus, c.cfg.StatusUpdateFrequency)
		})
	})
	wg.Wait()
	logger.V(2).Info("Node status controller stopped", "node", c.cfg.NodeName)
}

// GetNode returns the node's Node as last seen by the informer.
func (c *Controller) GetNode() (*v1.Node, error) {
	select {
	case <-c.started:
	default:
		return nil, fmt.Errorf("node %q not known yet: the node status controller has not started", c.cfg.NodeName)
	}
	if !c.nodeSynced() {
		return nil, fmt.Errorf("node %q not known yet: the node informer has not synced", c.cfg.NodeName)
	}
	node, err := c.nodeLister.Get(c.cfg.NodeName)
	if err != nil {
		return nil, fmt.Errorf("node %q not found: %w", c.cfg.NodeName, err)
	}
	return node, nil
}

// Eventf records an event about the node (for example the node agent's
// NodeAllocatableEnforced once its cgroups enforce the allocatable resources).
func (c *Controller) Eventf(eventType, reason, messageFmt string, args ...interface{}) {
	c.recorder.Eventf(c.nodeRef(), eventType, reason, messageFmt, args...)
}

// nodeRef is the node as events name it, with its UID once the node is known.
func (c *Controller) nodeRef() *v1.ObjectReference {
	ref := &v1.ObjectReference{Kind: "Node", Name: c.cfg.NodeName}
	if node, err := c.GetNode(); err == nil {
		ref.UID = node.UID
	}
	return ref
}

// record records events once their status is stored. A condition change computed twice (by
// fastStatusUpdateOnce and syncNodeStatus from a not yet updated informer) is recorded once,
// and so is a reboot. Called with mu held.
func (c *Controller) record(events []event) {
	if len(events) == 0 {
		return
	}
	ref := c.nodeRef()
	for _, e := range events {
		switch {
		case e.reason == "Rebooted":
			if c.rebootRecorded {
				continue
			}
			c.rebootRecorded = true
		case e.condition != "":
			if c.lastConditionEvents[e.condition] == e.reason {
				continue
			}
			c.lastConditionEvents[e.condition] = e.reason
		}
		c.recorder.Event(ref, e.eventType, e.reason, e.message)
	}
}

// readInputs reads what the node's status is made of. Called with mu held.
func (c *Controller) readInputs(ctx context.Context) *statusInputs {
	logger := klog.FromContext(ctx)
	in := &statusInputs{now: c.clock.Now(), runtimeType: c.runtime.Type()}
	in.nodeIP, in.nodeIPErr = c.resolveNodeIP()
	in.machine, in.machineErr = c.cfg.MachineInfo()
	if in.machineErr != nil {
		logger.Error(in.machineErr, "Error getting machine info")
	}
	if v, err := c.runtime.Version(ctx); err == nil {
		in.runtimeVersion = v
	}
	if c.cfg.Images != nil {
		in.images, in.imagesErr = c.cfg.Images.GetImageList()
	}
	in.runtimeErr = c.state.RuntimeErrors()
	in.networkErr = c.state.NetworkErrors()
	if p := c.cfg.Pressure; p != nil {
		in.memoryPressure, in.diskPressure, in.pidPressure = p.IsUnderMemoryPressure(), p.IsUnderDiskPressure(), p.IsUnderPIDPressure()
	}
	return in
}

// errNoNodeIP is why a node without a configured IP has no InternalIP.
var errNoNodeIP = errors.New("no usable address found on this host")

// resolveNodeIP finds the node's InternalIP once, when none is configured.
func (c *Controller) resolveNodeIP() (net.IP, error) {
	if c.nodeIP != nil {
		return c.nodeIP, nil
	}
	local := map[string]bool{}
	var first net.IP
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.IsGlobalUnicast() {
				local[n.IP.String()] = true
				if first == nil {
					first = n.IP
				}
			}
		}
	}
	if ips, err := net.LookupIP(c.cfg.NodeName); err == nil {
		for _, ip := range ips {
			if local[ip.String()] {
				c.nodeIP = ip
				return ip, nil
			}
		}
	}
	if first == nil {
		return nil, errNoNodeIP
	}
	c.nodeIP = first
	return first, nil
}

// updateNode computes node's new status from the inputs; changed says whether it differs from
// original in more than heartbeats. Called with mu held.
func (c *Controller) updateNode(ctx context.Context, original *v1.Node) (node *v1.Node, changed bool, events []event) {
	node = original.DeepCopy()
	labelsFixed := ensureOSLabels(node)
	events, errs := setNodeStatus(&c.cfg, node, c.readInputs(ctx))
	for _, err := range errs {
		klog.FromContext(ctx).Error(err, "Failed to set some node status fields", "node", klog.KObj(node))
	}
	return node, labelsFixed || nodeStatusChanged(&original.Status, &node.Status), events
}

// syncNodeStatus sends the node's status if it changed or StatusReportFrequency passed,
// registering the node first if needed.
func (c *Controller) syncNodeStatus(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.registerWithAPIServer(ctx)
	if err := c.updateNodeStatus(ctx); err != nil {
		klog.FromContext(ctx).Error(err, "Unable to update node status")
	}
}

func (c *Controller) updateNodeStatus(ctx context.Context) error {
	var errs []error
	for i := 0; i < nodeStatusUpdateRetry && ctx.Err() == nil; i++ {
		err := c.tryUpdateNodeStatus(ctx, i)
		if err == nil {
			return nil
		}
		klog.FromContext(ctx).Error(err, "Error updating node status, will retry")
		errs = append(errs, err)
	}
	return fmt.Errorf("update node status exceeds retry count: %w", errors.Join(errs...))
}

// tryUpdateNodeStatus reads the node (from the informer first, as the kubelet does to spare the
// API server; from the API server on retries, after a conflict) and sends its new status.
func (c *Controller) tryUpdateNodeStatus(ctx context.Context, try int) error {
	var original *v1.Node
	var err error
	if try == 0 {
		original, err = c.GetNode()
	}
	if try > 0 || err != nil {
		original, err = c.client.CoreV1().Nodes().Get(ctx, c.cfg.NodeName, metav1.GetOptions{})
	}
	if err != nil {
		return fmt.Errorf("error getting node %q: %w", c.cfg.NodeName, err)
	}
	node, changed, events := c.updateNode(ctx, original)
	now := c.clock.Now()
	if !changed && now.Sub(c.lastStatusReport) < c.cfg.StatusReportFrequency+c.reportDelay {
		c.recordSchedulable(node)
		return nil
	}
	// Spread the periodic reports of many nodes: a random delay after a change or a restart,
	// none once the period runs regularly.
	if changed || c.lastStatusReport.IsZero() {
		c.reportDelay = time.Duration(float64(c.cfg.StatusReportFrequency) * (rand.Float64() - 0.5))
	} else {
		c.reportDelay = 0
	}
	if _, err := c.patchNodeStatus(ctx, original, node); err != nil {
		return err
	}
	c.lastStatusReport = now
	c.record(events)
	c.recordSchedulable(node)
	return nil
}

// recordSchedulable records NodeSchedulable / NodeNotSchedulable when spec.unschedulable changed
// since the last sync (a cordon or uncordon).
func (c *Controller) recordSchedulable(node *v1.Node) {
	if node.Spec.Unschedulable == c.lastUnschedulable {
		return
	}
	c.lastUnschedulable = node.Spec.Unschedulable
	reason := "NodeSchedulable"
	if node.Spec.Unschedulable {
		reason = "NodeNotSchedulable"
	}
	c.record([]event{statusEvent(c.cfg.NodeName, "", reason)})
}

// fastStatusUpdateOnce checks every 100 ms, while the node is not Ready, whether it would be,
// and sends the status as soon as it is: a new node turns Ready within a tick of its runtime
// coming up rather than at the next syncNodeStatus.
func (c *Controller) fastStatusUpdateOnce(ctx context.Context) {
	start := c.clock.Now()
	ticker := c.clock.NewTicker(fastStatusUpdatePeriod)
	defer ticker.Stop()
	for {
		if c.fastNodeStatusUpdate(ctx, c.clock.Since(start) >= nodeReadyGracePeriod) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// fastNodeStatusUpdate is one check of fastStatusUpdateOnce; true ends the loop.
func (c *Controller) fastNodeStatusUpdate(ctx context.Context, timedOut bool) bool {
	logger := klog.FromContext(ctx)
	if timedOut {
		logger.Error(nil, "Node not becoming ready in time after startup")
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	original, err := c.GetNode()
	if err != nil {
		logger.V(4).Info("Node not in the informer yet", "err", err)
		return false
	}
	if ready := findCondition(original, v1.NodeReady); ready != nil && ready.Status == v1.ConditionTrue {
		return true
	}
	c.cfg.UpdateRuntimeUp(ctx)
	node, changed, events := c.updateNode(ctx, original)
	if ready := findCondition(node, v1.NodeReady); !changed || ready == nil || ready.Status != v1.ConditionTrue {
		return false
	}
	logger.Info("Fast updating node status as it just became ready")
	if _, err := c.patchNodeStatus(ctx, original, node); err != nil {
		// The informer's copy was probably stale; the regular path reads the API server.
		logger.Error(err, "Error updating node status, will retry with syncNodeStatus")
		if err := c.updateNodeStatus(ctx); err != nil {
			logger.Error(err, "Unable to update node status")
		}
		return true
	}
	c.lastStatusReport = c.clock.Now()
	c.record(events)
	return true
}

// Runtime is what the node status needs of the container runtime: its name and version for
// nodeInfo and its health for the Ready condition.
type Runtime interface {
	Type() string
	Version(ctx context.Context) (string, error)
	Status(ctx context.Context) (*container.RuntimeStatus, error)
}

// ImageList is the node's images as last listed (status.images): the status does not ask the
// runtime for them at every update.
type ImageList interface {
	GetImageList() ([]container.Image, error)
}

// Component names the node status controller in berth_recovered_panics_total.
const Component = "nodestatus"
