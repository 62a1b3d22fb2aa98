package pleg

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/metrics"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

const (
	// eventChannelCapacity is the size of Watch's channel; events beyond it are dropped.
	eventChannelCapacity = 1000
	// relistThreshold is how long Healthy tolerates no finished relist.
	relistThreshold = 3 * time.Minute
	// While the runtime streams container events the relist is only a safety net: it runs
	// every eventedRelistPeriod and Healthy tolerates eventedRelistThreshold (upstream's
	// figures for the generic PLEG beside the evented one).
	eventedRelistPeriod    = 300 * time.Second
	eventedRelistThreshold = 10 * time.Minute
	// The back-off between attempts to subscribe to the runtime's container events.
	eventStreamInitialBackOff = time.Second
	eventStreamMaxBackOff     = time.Minute
	// eventStreamBuffer is the size of the channel the event stream writes to.
	eventStreamBuffer = 1000
)

// GenericPLEG generates pod lifecycle events by diffing snapshots of the runtime, taken by a
// relist every relistPeriod and, between relists, for one pod at a time whenever the runtime
// streams a container event for it.
//
// Both paths update one snapshot under one lock: a change is reported by whichever path sees it
// first and never again by the other. A pod whose status cannot be read keeps its old snapshot
// (so its change is found again) and is read again at the next relist.
//
// Like upstream's, it assumes a container is not created, run and removed within one relist
// period while the event stream is down; the kubelet's periodic resync is the safety net.
//
// While the stream is established (upstream's EventedPLEG) the relist runs only every
// eventedRelistPeriod, and the cache's time is moved on every relistPeriod instead, once the
// events queued by then are handled: pod workers waiting for a status newer than their last
// sync go on as with a relist, and a node's idle pods cost nothing per second. When the
// stream breaks the PLEG relists at once and every relistPeriod until it is back.
type GenericPLEG struct {
	runtime      PodLister
	cache        Cache
	relistPeriod time.Duration
	events       EventSource
	clock        clock.Clock
	eventCh      chan *PodLifecycleEvent
	metrics      *metrics.Metrics

	// mu serializes relists and event handling; it guards pods and reinspect.
	mu sync.Mutex
	// pods is the snapshot: what the PLEG last reported of each pod the runtime has.
	pods map[types.UID]podSnapshot
	// reinspect holds pods whose status could not be read; they are read at the next relist.
	reinspect map[types.UID]bool

	// relistTime is when the last successful relist started (zero before the first).
	relistTime atomic.Pointer[time.Time]
	// streamEvents counts events received from the event stream (for the back-off reset).
	streamEvents atomic.Int64
	// streaming is true while the runtime's event stream is established.
	streaming atomic.Bool
	// streamBroke wakes Run's wait when the stream ends, so that it relists at once.
	streamBroke chan struct{}
	startOnce   sync.Once
}

var _ PodLifecycleEventGenerator = &GenericPLEG{}

// NewGenericPLEG returns a PLEG that relists runtime every relistPeriod and, when events is
// not nil, also follows the runtime's container event stream.
func NewGenericPLEG(runtime PodLister, cache Cache, relistPeriod time.Duration, events EventSource, clock clock.Clock, m *metrics.Metrics) PodLifecycleEventGenerator {
	return &GenericPLEG{
		metrics:      m,
		runtime:      runtime,
		cache:        cache,
		relistPeriod: relistPeriod,
		events:       events,
		clock:        clock,
		eventCh:      make(chan *PodLifecycleEvent, eventChannelCapacity),
		pods:         map[types.UID]podSnapshot{},
		reinspect:    map[types.UID]bool{},
		streamBroke:  make(chan struct{}, 1),
	}
}

// Watch returns the event channel.
func (g *GenericPLEG) Watch() chan *PodLifecycleEvent { return g.eventCh }

// Start runs Run in a goroutine, once; it returns at once.
func (g *GenericPLEG) Start(ctx context.Context) {
	g.startOnce.Do(func() { go g.Run(ctx) })
}

// Run relists at once and then every relistPeriod, and follows the event stream if there is
// one, until ctx ends; it returns when all of its goroutines have ended.
func (g *GenericPLEG) Run(ctx context.Context) {
	var wg sync.WaitGroup
	if g.events != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			panics.Forever(ctx, Component, g.watchEvents)
		}()
	}
	for {
		// A relist that panics is retried at the next period, as a failed one is.
		_ = panics.Call(ctx, Component, func() error { g.Relist(ctx); return nil })
		period := g.relistPeriod
		if g.streaming.Load() {
			period = eventedRelistPeriod
		}
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-g.streamBroke:
		case <-g.clock.After(period):
		}
	}
}

// Healthy reports whether a relist finished within relistThreshold.
func (g *GenericPLEG) Healthy() (bool, error) {
	t := g.relistTime.Load()
	if t == nil {
		return false, fmt.Errorf("pleg has yet to be successful")
	}
	threshold := relistThreshold
	if g.streaming.Load() {
		threshold = eventedRelistThreshold
	}
	if elapsed := g.clock.Since(*t); elapsed > threshold {
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}

// Relist lists every pod of the runtime, diffs the listing against the snapshot, refreshes the
// cache of the pods that changed, and sends their events.
func (g *GenericPLEG) Relist(ctx context.Context) {
	logger := klog.FromContext(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()

	timestamp := g.clock.Now()
	defer g.metrics.ObserveRelist(timestamp, g.relistTime.Load())
	listed, err := g.runtime.GetPods(ctx, true)
	if err != nil {
		logger.Error(err, "GenericPLEG: Unable to retrieve pods")
		return
	}
	g.relistTime.Store(&timestamp)

	current := make(map[types.UID]*container.Pod, len(listed))
	for _, p := range listed {
		current[p.ID] = p
	}
	uids := make([]types.UID, 0, len(current)+len(g.pods))
	for uid := range current {
		uids = append(uids, uid)
	}
	for uid := range g.pods {
		if _, ok := current[uid]; !ok {
			uids = append(uids, uid)
		}
	}
	sort.Slice(uids, func(i, j int) bool { return uids[i] < uids[j] })

	for _, uid := range uids {
		g.reconcileListed(ctx, uid, current[uid])
	}
	// Every entry is now at least as fresh as the listing: this wakes pod workers waiting for
	// a status newer than their last sync, changed or not.
	g.cache.UpdateTime(timestamp)
}

// reconcileListed handles one pod of a relist; pod is nil when the runtime no longer lists it.
// Caller holds mu.
func (g *GenericPLEG) reconcileListed(ctx context.Context, uid types.UID, pod *container.Pod) {
	logger := klog.FromContext(ctx)
	next := snapshotOfPod(pod)
	events := computeEvents(uid, g.pods[uid], next)
	reinspect := g.reinspect[uid]
	delete(g.reinspect, uid)
	if len(events) == 0 && !reinspect {
		if pod == nil {
			// An empty pod that vanished: nothing to report, just forget it.
			delete(g.pods, uid)
			g.cache.Delete(uid)
		}
		return
	}

	var status *container.PodStatus
	if pod == nil {
		logger.V(4).Info("PLEG: Delete status for pod", "podUID", uid)
		g.cache.Delete(uid)
	} else {
		var err error
		if status, err = g.updateCache(ctx, uid, pod.Name, pod.Namespace); err != nil {
			logger.V(4).Info("PLEG: Ignoring events for pod", "pod", klog.KRef(pod.Namespace, pod.Name), "err", err)
			g.reinspect[uid] = true
			return
		}
	}
	if len(events) == 0 {
		events = []*PodLifecycleEvent{{ID: uid, Type: PodSync}}
	}
	g.record(uid, next)
	g.send(logger, events, status)
}

// watchEvents follows the runtime's container event stream until ctx ends, subscribing again
// with back-off whenever the stream breaks. A runtime without the stream (containerd 1.6 answers
// Unimplemented) is not asked again: the relist alone then does the work.
func (g *GenericPLEG) watchEvents(ctx context.Context) {
	logger := klog.FromContext(ctx)
	ch := make(chan *runtimeapi.ContainerEventResponse, eventStreamBuffer)
	done := make(chan struct{})
	go func() {
		defer close(done)
		backOff := eventStreamInitialBackOff
		for attempt := 0; ; attempt++ {
			before := g.streamEvents.Load()
			err := g.events.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
				g.streaming.Store(true)
				logger.V(2).Info("Following the container runtime's event stream", "relistPeriod", eventedRelistPeriod)
			})
			if g.streaming.Swap(false) {
				select {
				case g.streamBroke <- struct{}{}:
				default:
				}
			}
			if ctx.Err() != nil {
				return
			}
			if grpcstatus.Code(err) == codes.Unimplemented {
				// containerd before 1.7 has no event stream: the relist alone does the work.
				logger.Info("The container runtime does not stream container events; relisting only", "relistPeriod", g.relistPeriod)
				return
			}
			if g.streamEvents.Load() != before {
				// The stream worked for a while: start the back-off over.
				backOff, attempt = eventStreamInitialBackOff, 0
			}
			if attempt == 0 {
				logger.Info("Container event stream broke; relisting covers the gap", "err", err, "retryIn", backOff)
			} else {
				logger.V(4).Info("Container event stream still unavailable", "err", err, "retryIn", backOff)
			}
			select {
			case <-ctx.Done():
				return
			case <-g.clock.After(backOff):
			}
			backOff = min(2*backOff, eventStreamMaxBackOff)
		}
	}()
	// Drain until the subscriber has returned, so that it never blocks on a full channel.
	fresh := g.clock.NewTimer(g.relistPeriod)
	defer fresh.Stop()
	for {
		select {
		case ev := <-ch:
			g.handleStreamed(ctx, ev)
		case <-fresh.C():
			if g.streaming.Load() {
				g.markFresh(ctx, ch)
			}
			fresh.Reset(g.relistPeriod)
		case <-done:
			return
		}
	}
}

// markFresh handles the events queued by now, which is everything the runtime sent by now,
// and then dates the whole cache now, as a relist would.
func (g *GenericPLEG) markFresh(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse) {
	now := g.clock.Now()
	for {
		select {
		case ev := <-ch:
			g.handleStreamed(ctx, ev)
		default:
			g.cache.UpdateTime(now)
			return
		}
	}
}

// handleStreamed counts and handles one event of the stream.
func (g *GenericPLEG) handleStreamed(ctx context.Context, ev *runtimeapi.ContainerEventResponse) {
	g.streamEvents.Add(1)
	if ctx.Err() == nil {
		g.HandleContainerEvent(ctx, ev)
	}
}

// HandleContainerEvent refreshes the pod of one CRI container event at once: it reads the
// pod's status, diffs it against the snapshot, stores it in the cache and sends the events.
// An event the snapshot already reflects (the relist saw it first) costs nothing.
func (g *GenericPLEG) HandleContainerEvent(ctx context.Context, ev *runtimeapi.ContainerEventResponse) {
	logger := klog.FromContext(ctx)
	meta := ev.GetPodSandboxStatus().GetMetadata()
	if meta == nil {
		// The sandbox may be gone already; its own event or the relist covers it.
		logger.V(4).Info("PLEG: Ignoring container event without a pod sandbox", "containerID", ev.GetContainerId(), "type", ev.GetContainerEventType())
		return
	}
	uid := types.UID(meta.Uid)
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.reinspect[uid] && g.pods[uid].stateOf(ev.ContainerId) == eventState(ev.ContainerEventType) {
		return
	}
	status, err := g.updateCache(ctx, uid, meta.Name, meta.Namespace)
	if err != nil {
		g.reinspect[uid] = true
		return
	}
	delete(g.reinspect, uid)
	next := snapshotOfStatus(status)
	events := computeEvents(uid, g.pods[uid], next)
	if next == nil {
		g.cache.Delete(uid)
	}
	g.record(uid, next)
	g.send(logger, events, status)
}

// updateCache reads a pod's status and stores it (or the error) in the cache. Caller holds mu.
func (g *GenericPLEG) updateCache(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	logger := klog.FromContext(ctx)
	timestamp := g.clock.Now()
	status, err := g.runtime.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		logger.Error(err, "PLEG: Write status", "pod", klog.KRef(namespace, name))
		g.cache.Set(uid, status, err, timestamp)
		return nil, err
	}
	logger.V(4).Info("PLEG: Write status", "pod", klog.KRef(namespace, name))
	status.IPs = g.podIPs(uid, status)
	g.cache.Set(uid, status, nil, timestamp)
	return status, nil
}

// podIPs keeps the cached IPs of a pod whose sandboxes have all stopped: the network is torn
// down with the sandbox, but the API keeps showing a finished pod's IP.
func (g *GenericPLEG) podIPs(uid types.UID, status *container.PodStatus) []string {
	if len(status.IPs) != 0 {
		return status.IPs
	}
	old, err := g.cache.Get(uid)
	if err != nil || old == nil || len(old.IPs) == 0 {
		return nil
	}
	for _, sb := range status.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return status.IPs
		}
	}
	return old.IPs
}

// record makes next the snapshot of uid. Caller holds mu.
func (g *GenericPLEG) record(uid types.UID, next podSnapshot) {
	if next == nil {
		delete(g.pods, uid)
		return
	}
	g.pods[uid] = next
}

// send delivers events to Watch's channel, dropping them when it is full.
func (g *GenericPLEG) send(logger klog.Logger, events []*PodLifecycleEvent, status *container.PodStatus) {
	for _, e := range events {
		if e.Type == ContainerChanged {
			// Not acted upon, as upstream: it only refreshed the cache.
			continue
		}
		select {
		case g.eventCh <- e:
		default:
			logger.Error(nil, "Event channel is full, discard this relist() cycle event")
		}
		if e.Type == ContainerDied && status != nil {
			for _, c := range status.ContainerStatuses {
				if c.ID.ID == e.Data {
					logger.V(2).Info("Generic (PLEG): container finished", "podID", e.ID, "containerID", c.ID.ID, "exitCode", c.ExitCode)
				}
			}
		}
	}
}

// RelistPod inspects one pod now, as a container event from the runtime would make it: the
// node agent calls it right after it started containers, so that a runtime without an event
// stream (containerd 1.6) does not leave the start unseen until the next relist.
func (g *GenericPLEG) RelistPod(ctx context.Context, uid types.UID, name, namespace string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	status, err := g.updateCache(ctx, uid, name, namespace)
	if err != nil {
		g.reinspect[uid] = true
		return
	}
	delete(g.reinspect, uid)
	next := snapshotOfStatus(status)
	events := computeEvents(uid, g.pods[uid], next)
	if next == nil {
		g.cache.Delete(uid)
	}
	g.record(uid, next)
	g.send(klog.FromContext(ctx), events, status)
}

// PodLister is what the PLEG needs of the runtime: its pods, and one pod's status.
type PodLister interface {
	GetPods(ctx context.Context, all bool) ([]*container.Pod, error)
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
}

// Component names the PLEG in berth_recovered_panics_total.
const Component = "pleg"
