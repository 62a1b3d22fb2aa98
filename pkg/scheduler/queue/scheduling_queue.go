// Package queue is the scheduling queue, where seed 003's flow enters the scheduler: the
// scheduler's event handlers Add, Update and Delete unscheduled pods here and report the
// cluster events that may help waiting pods; scheduleOne Pops the next pod, and hands it back
// with AddUnschedulableIfNotPresent when no node fits, or calls Done when it is bound. The
// queue also remembers the pods that preemption nominated for a node (framework.PodNominator).
//
// It behaves as kube-scheduler's PriorityQueue (pkg/scheduler/backend/queue): activeQ,
// backoffQ and unschedulablePods, PreEnqueue gating, QueueingHints, and the events seen while
// a pod is in flight deciding where it goes back.
//
// Contract with scheduleOne: every popped pod ends with AddUnschedulableIfNotPresent (which
// calls Done) or Done. The pod handed back is a copy (QueuedPodInfo.DeepCopy) that the caller
// no longer touches, carrying the pod's latest version from the informer (the queue keeps no
// versions of in-flight pods) and, in UnschedulablePlugins and PendingPlugins, exactly what
// rejected it this time (both empty for an Error).
package queue

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	listersv1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Defaults, as kube-scheduler's.
const (
	DefaultPodInitialBackoffDuration         = 1 * time.Second
	DefaultPodMaxBackoffDuration             = 10 * time.Second
	DefaultPodMaxInUnschedulablePodsDuration = 5 * time.Minute

	// backoffFlushInterval is how often pods whose back-off is over move to activeQ.
	backoffFlushInterval = time.Second
	// unschedulableFlushInterval is how often unschedulablePods is searched for pods that
	// have waited longer than podMaxInUnschedulablePodsDuration.
	unschedulableFlushInterval = 30 * time.Second
)

// ErrClosed is what Pop returns once the queue is closed and activeQ is empty.
var ErrClosed = errors.New("scheduling queue is closed")

// PriorityQueue is the scheduling queue. Every pending pod it knows is in exactly one place:
//
//   - activeQ: a heap in the profile's QueueSort order (priority, then time); Pop takes its head.
//   - backoffQ: a heap by back-off expiry. A pod waits there 1 s after its first failed
//     attempt, doubling per attempt up to 10 s, counted from its return to the queue.
//   - unschedulablePods: a map of pods that failed and wait for a cluster event that may help
//     them, and of pods a PreEnqueue plugin holds back ("gated", never attempted while gated).
//   - in flight: popped, scheduleOne works on it, until AddUnschedulableIfNotPresent or Done.
//
// An event "helps" a pod when a plugin that rejected it (UnschedulablePlugins/PendingPlugins,
// or only its GatingPlugin while gated) registered a matching event and that plugin's
// QueueingHint says Queue.
//
//	         PreEnqueue rejects: gated
//	Add ───────────────────────────────────────────────────┐
//	 │ PreEnqueue passes                                    ▼
//	 ▼                helpful event, own spec update,
//	activeQ ◄──────── Activate, 5 min there (checked ───── unschedulablePods
//	 ▲  │ Pop         every 30 s); a gated pod only once     ▲     │ the same, while
//	 │  ▼             PreEnqueue passes                      │     │ still backing off
//	 │ in flight ─── AddUnschedulableIfNotPresent ──────────┘     │
//	 │  │  │         (nothing helpful came meanwhile)              │
//	 │  │  └──────── Done (bound) ──► gone                         │
//	 │  └─────────── AddUnschedulableIfNotPresent ──► backoffQ ◄──┘
//	 │               (Error, or a helpful event came)   │
//	 └────────────── back-off over (checked every 1 s) ─┘
//
// Delete removes a pod from wherever it is, and from the nominator. One mutex guards it all;
// Pop waits on a condition variable of that mutex. PreEnqueue plugins and QueueingHints run
// with the mutex held, so they must be quick and must not call back into the queue.
type PriorityQueue struct {
	// flushers are the goroutines Run starts; Close waits for them.
	flushers sync.WaitGroup
	// Set at construction, read-only after.
	clock                 clock.WithTicker
	podInitialBackoff     time.Duration
	podMaxBackoff         time.Duration
	podMaxInUnschedulable time.Duration
	preEnqueuePlugins     map[string][]framework.PreEnqueuePlugin
	hints                 QueueingHintMapPerProfile
	metrics               MetricsRecorder
	stop                  chan struct{}
	// nominator has its own lock, taken after lock.
	nominator *nominator

	// lock guards the rest; cond (on lock) wakes Pop.
	lock              sync.Mutex
	cond              sync.Cond
	activeQ           *podHeap
	backoffQ          *podHeap
	unschedulablePods unschedulablePods
	inFlight          inFlight
	schedulingCycle   int64
	closed            bool
	reported          pendingCounts
}

var _ framework.PodNominator = &PriorityQueue{}

type options struct {
	clock                 clock.WithTicker
	podInitialBackoff     time.Duration
	podMaxBackoff         time.Duration
	podMaxInUnschedulable time.Duration
	preEnqueuePlugins     map[string][]framework.PreEnqueuePlugin
	hints                 QueueingHintMapPerProfile
	metrics               MetricsRecorder
	podLister             listersv1.PodLister
}

// Option configures a PriorityQueue.
type Option func(*options)

// WithClock sets the clock (a fake one in tests).
func WithClock(c clock.WithTicker) Option { return func(o *options) { o.clock = c } }

// WithPodInitialBackoffDuration sets the back-off after the first failed attempt.
func WithPodInitialBackoffDuration(d time.Duration) Option {
	return func(o *options) { o.podInitialBackoff = d }
}

// WithPodMaxBackoffDuration caps the back-off; 0 disables back-off.
func WithPodMaxBackoffDuration(d time.Duration) Option {
	return func(o *options) { o.podMaxBackoff = d }
}

// WithPodMaxInUnschedulablePodsDuration sets how long a pod may wait in unschedulablePods
// before it is retried anyway.
func WithPodMaxInUnschedulablePodsDuration(d time.Duration) Option {
	return func(o *options) { o.podMaxInUnschedulable = d }
}

// WithPreEnqueuePluginMap sets, per profile, the PreEnqueue plugins, run in order.
func WithPreEnqueuePluginMap(m map[string][]framework.PreEnqueuePlugin) Option {
	return func(o *options) { o.preEnqueuePlugins = m }
}

// WithQueueingHintMap sets, per profile, which plugin cares about which event (see
// BuildQueueingHintMap). Without it, or for a profile missing from it, any event moves every
// unschedulable pod of that profile (kube-scheduler's behaviour before QueueingHints).
func WithQueueingHintMap(m QueueingHintMapPerProfile) Option {
	return func(o *options) { o.hints = m }
}

// WithMetricsRecorder sets where the queue reports its metrics.
func WithMetricsRecorder(r MetricsRecorder) Option { return func(o *options) { o.metrics = r } }

// WithPodLister lets the nominator refuse nominations of pods that are gone or bound.
func WithPodLister(l listersv1.PodLister) Option { return func(o *options) { o.podLister = l } }

// NewPriorityQueue returns a queue that orders activeQ by lessFn (the profile's QueueSort).
func NewPriorityQueue(lessFn func(a, b *framework.QueuedPodInfo) bool, opts ...Option) *PriorityQueue {
	o := options{
		clock:                 clock.RealClock{},
		podInitialBackoff:     DefaultPodInitialBackoffDuration,
		podMaxBackoff:         DefaultPodMaxBackoffDuration,
		podMaxInUnschedulable: DefaultPodMaxInUnschedulablePodsDuration,
		metrics:               noopRecorder{},
	}
	for _, opt := range opts {
		opt(&o)
	}
	p := &PriorityQueue{
		clock:                 o.clock,
		podInitialBackoff:     o.podInitialBackoff,
		podMaxBackoff:         o.podMaxBackoff,
		podMaxInUnschedulable: o.podMaxInUnschedulable,
		preEnqueuePlugins:     o.preEnqueuePlugins,
		hints:                 o.hints,
		metrics:               o.metrics,
		nominator:             newNominator(o.podLister),
		stop:                  make(chan struct{}),
		activeQ:               newPodHeap(lessFn),
		unschedulablePods:     unschedulablePods{pods: map[types.UID]unschedulableEntry{}},
		inFlight:              inFlight{pods: map[types.UID]*list.Element{}},
	}
	p.cond.L = &p.lock
	// Pods whose back-off ends first come first; among equals, the activeQ order.
	p.backoffQ = newPodHeap(func(a, b *framework.QueuedPodInfo) bool {
		ea, eb := p.backoffExpiry(a), p.backoffExpiry(b)
		if !ea.Equal(eb) {
			return ea.Before(eb)
		}
		return lessFn(a, b)
	})
	return p
}

// Run starts the flushes (backoffQ → activeQ every second; unschedulablePods leftovers every
// 30 s) until Close. The tickers exist when Run returns, so a test may step its fake clock
// right away.
func (p *PriorityQueue) Run(logger klog.Logger) {
	backoffTicker := p.clock.NewTicker(backoffFlushInterval)
	leftoverTicker := p.clock.NewTicker(unschedulableFlushInterval)
	ctx := klog.NewContext(context.Background(), logger)
	p.flushers.Go(func() { p.every(ctx, backoffTicker, func() { p.flushBackoffQCompleted(logger) }) })
	p.flushers.Go(func() { p.every(ctx, leftoverTicker, func() { p.flushUnschedulablePodsLeftover(logger) }) })
}

// every runs f on each tick until Close. A panic in one flush (a pod's QueueingHint or
// PreEnqueue is recovered on its own already) is logged and counted, and the next tick
// flushes again: the queue's lock is always released by a defer.
func (p *PriorityQueue) every(ctx context.Context, t clock.Ticker, f func()) {
	defer t.Stop()
	tick := func() {
		defer panics.Recover(ctx, framework.PanicComponent, nil)
		f()
	}
	for {
		select {
		case <-p.stop:
			return
		case <-t.C():
			tick()
		}
	}
}

// Close stops the flushes, waits for them, and wakes Pop, which returns ErrClosed once
// activeQ is empty.
func (p *PriorityQueue) Close() {
	p.lock.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
		p.cond.Broadcast()
	}
	p.unlock()
	p.flushers.Wait() // after the unlock: a flush takes the lock
}

// unlock reports what changed to the metrics and releases the queue.
func (p *PriorityQueue) unlock() {
	p.syncMetrics()
	p.lock.Unlock()
}

// Add queues a new unscheduled pod: to activeQ, or gated in unschedulablePods when a
// PreEnqueue plugin rejects it.
func (p *PriorityQueue) Add(logger klog.Logger, pod *v1.Pod) {
	p.lock.Lock()
	defer p.unlock()
	if old := p.lookup(pod.UID); old != nil {
		// A repeated Add (an informer relist) is an update.
		p.updateLocked(logger, old.Pod, pod)
		return
	}
	if p.inFlight.get(pod.UID) != nil {
		return
	}
	p.addLocked(logger, pod)
}

func (p *PriorityQueue) addLocked(logger klog.Logger, pod *v1.Pod) {
	pInfo := &framework.QueuedPodInfo{
		PodInfo:              framework.NewPodInfo(pod),
		Timestamp:            p.clock.Now(),
		UnschedulablePlugins: sets.New[string](),
		PendingPlugins:       sets.New[string](),
	}
	// A pod that arrives with status.nominatedNodeName (a scheduler restart) keeps its place.
	p.nominator.add(logger, pInfo.PodInfo, nil)
	if p.moveToActiveQ(logger, pInfo, EventUnscheduledPodAdd.Label) {
		p.cond.Broadcast()
	}
}

// Update follows a pod's new version. In activeQ or backoffQ the pod is updated in place. In
// unschedulablePods, a change beyond status and bookkeeping (isPodUpdated) may make it
// schedulable: it moves to activeQ, or to backoffQ while backing off; a gated pod moves to
// activeQ as soon as its PreEnqueue plugins pass. In flight, the change is remembered for
// AddUnschedulableIfNotPresent. A pod the queue does not know is added.
func (p *PriorityQueue) Update(logger klog.Logger, oldPod, newPod *v1.Pod) {
	p.lock.Lock()
	defer p.unlock()
	p.updateLocked(logger, oldPod, newPod)
}

func (p *PriorityQueue) updateLocked(logger klog.Logger, oldPod, newPod *v1.Pod) {
	uid := newPod.UID
	if p.inFlight.get(uid) != nil {
		if isPodUpdated(oldPod, newPod) {
			p.inFlight.addEvent(&clusterEvent{event: podUpdateEvent, oldObj: oldPod, newObj: newPod, target: uid})
		}
		return
	}
	for _, h := range []*podHeap{p.activeQ, p.backoffQ} {
		if pInfo := h.Get(uid); pInfo != nil {
			pInfo.PodInfo.Update(newPod)
			h.AddOrUpdate(pInfo) // priority or labels may have changed
			p.nominator.update(logger, oldPod, pInfo.PodInfo)
			return
		}
	}
	if pInfo := p.unschedulablePods.get(uid); pInfo != nil {
		pInfo.PodInfo.Update(newPod)
		p.nominator.update(logger, oldPod, pInfo.PodInfo)
		if !isPodUpdated(oldPod, newPod) {
			return
		}
		queue := p.requeue(logger, pInfo, queueAfterBackoff, EventUnscheduledPodUpdate.Label)
		if v := logger.V(5); v.Enabled() {
			v.Info("Pod updated", "pod", klog.KObj(newPod), "queue", queue)
		}
		if queue == QueueActive {
			p.cond.Broadcast()
		}
		return
	}
	p.addLocked(logger, newPod)
}

// Delete forgets a pod wherever it is: a sub-queue, the nominator, or in flight (then
// AddUnschedulableIfNotPresent drops it).
func (p *PriorityQueue) Delete(pod *v1.Pod) {
	p.lock.Lock()
	defer p.unlock()
	p.nominator.delete(pod)
	uid := pod.UID
	if p.activeQ.Delete(uid) != nil || p.backoffQ.Delete(uid) != nil || p.unschedulablePods.delete(uid) != nil {
		return
	}
	if f := p.inFlight.get(uid); f != nil {
		f.deleted = true
	}
}

// Activate moves pods from unschedulablePods or backoffQ to activeQ (still subject to
// PreEnqueue). A pod in flight goes to activeQ or backoffQ when it comes back; pods the queue
// does not hold are ignored.
func (p *PriorityQueue) Activate(logger klog.Logger, pods map[string]*v1.Pod) {
	p.lock.Lock()
	defer p.unlock()
	activated := false
	for _, pod := range pods {
		pInfo := p.unschedulablePods.get(pod.UID)
		if pInfo == nil {
			pInfo = p.backoffQ.Delete(pod.UID)
		}
		if pInfo == nil {
			if p.inFlight.get(pod.UID) != nil {
				p.inFlight.addEvent(&clusterEvent{event: EventForceActivate, newObj: pod, target: pod.UID})
			}
			continue
		}
		if p.moveToActiveQ(logger, pInfo, ForceActivate) {
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

// Pop takes the head of activeQ, waiting for one if it is empty, until Close. It starts a
// scheduling cycle: SchedulingCycle and the pod's Attempts grow by one, and the pod is in
// flight until AddUnschedulableIfNotPresent or Done.
func (p *PriorityQueue) Pop(logger klog.Logger) (*framework.QueuedPodInfo, error) {
	p.lock.Lock()
	defer p.unlock()
	for {
		for p.activeQ.Len() == 0 {
			if p.closed {
				return nil, ErrClosed
			}
			p.cond.Wait()
		}
		pInfo := p.activeQ.Pop()
		uid := pInfo.Pod.UID
		if p.inFlight.get(uid) != nil {
			logger.Error(nil, "Discarding a popped pod that is already in flight; it is queued twice", "pod", klog.KObj(pInfo.Pod))
			continue
		}
		p.schedulingCycle++
		pInfo.Attempts++
		if pInfo.InitialAttemptTimestamp == nil {
			now := p.clock.Now()
			pInfo.InitialAttemptTimestamp = &now
		}
		p.inFlight.add(uid)
		return pInfo, nil
	}
}

// Done ends the scheduling attempt of a popped pod (bound, or not to be retried).
func (p *PriorityQueue) Done(uid types.UID) {
	p.lock.Lock()
	defer p.unlock()
	p.inFlight.done(uid)
}

// SchedulingCycle is the number of pods popped so far.
func (p *PriorityQueue) SchedulingCycle() int64 {
	p.lock.Lock()
	defer p.lock.Unlock()
	return p.schedulingCycle
}

// AddUnschedulableIfNotPresent takes back a pod whose attempt failed, and ends the attempt
// (Done). If an event that helps the pod came while it was in flight, or the pod failed with
// an Error (no UnschedulablePlugins or PendingPlugins), it goes to backoffQ (activeQ when a
// Pending plugin's event helped it); otherwise it waits in unschedulablePods. A pod deleted
// while in flight is dropped. podSchedulingCycle is the cycle that popped it (for logs).
func (p *PriorityQueue) AddUnschedulableIfNotPresent(logger klog.Logger, pInfo *framework.QueuedPodInfo, podSchedulingCycle int64) error {
	p.lock.Lock()
	defer p.unlock()
	pod := pInfo.Pod
	defer p.inFlight.done(pod.UID)

	if p.unschedulablePods.get(pod.UID) != nil {
		return fmt.Errorf("pod %s is already present in unschedulablePods", klog.KObj(pod))
	}
	if p.activeQ.Get(pod.UID) != nil {
		return fmt.Errorf("pod %s is already present in activeQ", klog.KObj(pod))
	}
	if p.backoffQ.Get(pod.UID) != nil {
		return fmt.Errorf("pod %s is already present in backoffQ", klog.KObj(pod))
	}
	if f := p.inFlight.get(pod.UID); f != nil && f.deleted {
		if v := logger.V(4); v.Enabled() {
			v.Info("Pod was deleted during its scheduling attempt, not queueing it again", "pod", klog.KObj(pod))
		}
		return nil
	}

	// The back-off counts from now, and grows with Attempts.
	pInfo.Timestamp = p.clock.Now()
	pInfo.BackoffExpiration = time.Time{}
	strategy := p.strategyForInFlightPod(logger, pInfo)
	queue := p.requeue(logger, pInfo, strategy, ScheduleAttemptFailure)
	if v := logger.V(3); v.Enabled() {
		v.Info("Pod moved to an internal scheduling queue", "pod", klog.KObj(pod), "event", ScheduleAttemptFailure,
			"queue", queue, "schedulingCycle", podSchedulingCycle, "unschedulablePlugins", pInfo.UnschedulablePlugins)
	}
	if queue == QueueActive {
		p.cond.Broadcast()
	}
	return nil
}

// MoveAllToActiveOrBackoffQueue applies a cluster event to the pods in unschedulablePods
// (those for which preCheck, if set, says true): each pod it helps goes to backoffQ if still
// backing off, else to activeQ. oldObj and newObj are the event's objects, for the hints.
func (p *PriorityQueue) MoveAllToActiveOrBackoffQueue(logger klog.Logger, event framework.ClusterEvent, oldObj, newObj interface{}, preCheck func(*v1.Pod) bool) {
	p.lock.Lock()
	defer p.unlock()
	p.moveAllLocked(logger, &clusterEvent{event: event, oldObj: oldObj, newObj: newObj}, preCheck)
}

// AssignedPodAdded applies the arrival of a pod bound to a node. Of the pods that
// InterPodAffinity rejected, only those with a required affinity term that the new pod
// matches are considered; of those PodTopologySpread rejected, those in its namespace. The
// bound pod's nomination, if any, is dropped.
func (p *PriorityQueue) AssignedPodAdded(logger klog.Logger, pod *v1.Pod) {
	p.lock.Lock()
	defer p.unlock()
	p.nominator.delete(pod)
	p.moveAllLocked(logger, &clusterEvent{event: EventAssignedPodAdd, newObj: pod, narrow: crossTopologyNarrow(nil, pod)}, nil)
}

// AssignedPodUpdated applies an update of a bound pod (event says what changed). As in
// AssignedPodAdded, InterPodAffinity's pods are considered when the new version matches a
// required affinity term or the old one matched a required anti-affinity term, and
// PodTopologySpread's when they share the namespace.
func (p *PriorityQueue) AssignedPodUpdated(logger klog.Logger, oldPod, newPod *v1.Pod, event framework.ClusterEvent) {
	p.lock.Lock()
	defer p.unlock()
	p.nominator.delete(newPod)
	p.moveAllLocked(logger, &clusterEvent{event: event, oldObj: oldPod, newObj: newPod, narrow: crossTopologyNarrow(oldPod, newPod)}, nil)
}

// PendingPods lists the pods in activeQ, backoffQ and unschedulablePods, with a summary such
// as "activeQ:1; backoffQ:0; unschedulablePods:2" (gated pods count as unschedulable).
func (p *PriorityQueue) PendingPods() ([]*v1.Pod, string) {
	p.lock.Lock()
	defer p.lock.Unlock()
	pods := make([]*v1.Pod, 0, p.activeQ.Len()+p.backoffQ.Len()+len(p.unschedulablePods.pods))
	for _, pInfo := range p.activeQ.List() {
		pods = append(pods, pInfo.Pod)
	}
	for _, pInfo := range p.backoffQ.List() {
		pods = append(pods, pInfo.Pod)
	}
	for _, e := range p.unschedulablePods.pods {
		pods = append(pods, e.pInfo.Pod)
	}
	return pods, fmt.Sprintf("activeQ:%d; backoffQ:%d; unschedulablePods:%d",
		p.activeQ.Len(), p.backoffQ.Len(), len(p.unschedulablePods.pods))
}

// AddNominatedPod records that pi waits for the node ni names (ModeOverride), or for its
// status.nominatedNodeName (ModeNoop).
func (p *PriorityQueue) AddNominatedPod(pi *framework.PodInfo, ni *framework.NominatingInfo) {
	p.nominator.add(klog.Background(), pi, ni)
}

// DeleteNominatedPodIfExists forgets a pod's nomination.
func (p *PriorityQueue) DeleteNominatedPodIfExists(pod *v1.Pod) { p.nominator.delete(pod) }

// UpdateNominatedPod follows a nominated pod's new version.
func (p *PriorityQueue) UpdateNominatedPod(oldPod *v1.Pod, newPodInfo *framework.PodInfo) {
	p.nominator.update(klog.Background(), oldPod, newPodInfo)
}

// NominatedPodsForNode returns copies of the PodInfos of the pods nominated for nodeName,
// safe to use concurrently; the pods themselves are shared and read-only.
func (p *PriorityQueue) NominatedPodsForNode(nodeName string) []*framework.PodInfo {
	return p.nominator.forNode(nodeName)
}

// moveToActiveQ runs the PreEnqueue plugins and puts the pod in activeQ, or, if one rejects
// it, gated in unschedulablePods. It reports whether the pod is in activeQ; the caller wakes
// Pop.
func (p *PriorityQueue) moveToActiveQ(logger klog.Logger, pInfo *framework.QueuedPodInfo, event string) bool {
	if !p.runPreEnqueuePlugins(logger, pInfo) {
		if p.unschedulablePods.addOrUpdate(pInfo) {
			p.metrics.IncomingPod(QueueUnschedulable, event)
			if v := logger.V(5); v.Enabled() {
				v.Info("Pod is gated", "pod", klog.KObj(pInfo.Pod), "plugin", pInfo.GatingPlugin, "event", event)
			}
		}
		return false
	}
	p.unschedulablePods.delete(pInfo.Pod.UID)
	p.activeQ.AddOrUpdate(pInfo)
	p.metrics.IncomingPod(QueueActive, event)
	if v := logger.V(5); v.Enabled() {
		v.Info("Pod moved to activeQ", "pod", klog.KObj(pInfo.Pod), "event", event)
	}
	return true
}

// runPreEnqueuePlugins runs the profile's PreEnqueue plugins in order, stopping at the first
// that does not say Success: it becomes the pod's GatingPlugin and one of its
// UnschedulablePlugins. It reports whether all passed.
func (p *PriorityQueue) runPreEnqueuePlugins(logger klog.Logger, pInfo *framework.QueuedPodInfo) bool {
	plugins := p.preEnqueuePlugins[pInfo.Pod.Spec.SchedulerName]
	if len(plugins) == 0 {
		pInfo.GatingPlugin = ""
		return true
	}
	ctx := klog.NewContext(context.Background(), logger)
	for _, pl := range plugins {
		s := callPreEnqueue(ctx, pl, pInfo.Pod)
		if s.IsSuccess() {
			continue
		}
		pInfo.GatingPlugin = pl.Name()
		if pInfo.UnschedulablePlugins == nil {
			pInfo.UnschedulablePlugins = sets.New[string]()
		}
		pInfo.UnschedulablePlugins.Insert(pl.Name())
		if s.Code() == framework.Error {
			logger.Error(s.AsError(), "PreEnqueue plugin failed", "pod", klog.KObj(pInfo.Pod), "plugin", pl.Name())
		} else {
			if v := logger.V(4); v.Enabled() {
				v.Info("PreEnqueue plugin holds the pod back", "pod", klog.KObj(pInfo.Pod), "plugin", pl.Name(), "status", s)
			}
		}
		return false
	}
	pInfo.GatingPlugin = ""
	return true
}

// requeue puts a pod that is in unschedulablePods, or in no sub-queue, where strategy says:
// unschedulablePods (skip), backoffQ (after back-off, while backing off) or activeQ (subject
// to PreEnqueue). It returns the queue the pod ended in.
func (p *PriorityQueue) requeue(logger klog.Logger, pInfo *framework.QueuedPodInfo, strategy queueingStrategy, event string) string {
	switch {
	case strategy == queueSkip:
		if p.unschedulablePods.addOrUpdate(pInfo) {
			p.metrics.IncomingPod(QueueUnschedulable, event)
		}
		return QueueUnschedulable
	case strategy == queueAfterBackoff && p.isBackingOff(pInfo):
		p.unschedulablePods.delete(pInfo.Pod.UID)
		p.backoffQ.AddOrUpdate(pInfo)
		p.metrics.IncomingPod(QueueBackoff, event)
		if v := logger.V(5); v.Enabled() {
			v.Info("Pod moved to backoffQ", "pod", klog.KObj(pInfo.Pod), "event", event)
		}
		return QueueBackoff
	}
	if p.moveToActiveQ(logger, pInfo, event) {
		return QueueActive
	}
	return QueueUnschedulable
}

// lookup finds a pod in activeQ, backoffQ or unschedulablePods.
func (p *PriorityQueue) lookup(uid types.UID) *framework.QueuedPodInfo {
	if pInfo := p.activeQ.Get(uid); pInfo != nil {
		return pInfo
	}
	if pInfo := p.backoffQ.Get(uid); pInfo != nil {
		return pInfo
	}
	return p.unschedulablePods.get(uid)
}

// unschedulablePods holds the pods that wait for a helpful event, and the gated ones.
type unschedulablePods struct {
	pods map[types.UID]unschedulableEntry
	// gated counts the entries recorded as gated.
	gated int
}

type unschedulableEntry struct {
	pInfo *framework.QueuedPodInfo
	// gated is the pod's state when it was last stored, so that gated stays a true count
	// while PreEnqueue plugins run on stored pods.
	gated bool
}

func (u *unschedulablePods) get(uid types.UID) *framework.QueuedPodInfo {
	if e, ok := u.pods[uid]; ok {
		return e.pInfo
	}
	return nil
}

// addOrUpdate stores pInfo and reports whether it is new here.
func (u *unschedulablePods) addOrUpdate(pInfo *framework.QueuedPodInfo) bool {
	uid := pInfo.Pod.UID
	old, existed := u.pods[uid]
	if existed && old.gated {
		u.gated--
	}
	gated := pInfo.GatingPlugin != ""
	if gated {
		u.gated++
	}
	u.pods[uid] = unschedulableEntry{pInfo: pInfo, gated: gated}
	return !existed
}

func (u *unschedulablePods) delete(uid types.UID) *framework.QueuedPodInfo {
	e, ok := u.pods[uid]
	if !ok {
		return nil
	}
	if e.gated {
		u.gated--
	}
	delete(u.pods, uid)
	return e.pInfo
}
