package queue

import (
	"container/list"
	"iter"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
)

// queueingStrategy is where an event sends a pod from unschedulablePods.
type queueingStrategy int

const (
	// queueSkip: the event does not help; the pod stays.
	queueSkip queueingStrategy = iota
	// queueAfterBackoff: to backoffQ while the pod is backing off, else activeQ.
	queueAfterBackoff
	// queueImmediately: to activeQ (a plugin that answered Pending is satisfied).
	queueImmediately
)

// Names of the plugins whose rejections only some pods' events can resolve
// (AssignedPodAdded/AssignedPodUpdated narrow them).
const (
	interPodAffinityName  = "InterPodAffinity"
	podTopologySpreadName = "PodTopologySpread"
)

// podUpdateEvent is a pod's own spec update, recorded for it alone while it is in flight.
var podUpdateEvent = framework.ClusterEvent{Resource: framework.WildCard, ActionType: framework.All, Label: EventUnscheduledPodUpdate.Label}

// clusterEvent is an event as the queue applies it.
type clusterEvent struct {
	event          framework.ClusterEvent
	oldObj, newObj interface{}
	// target, for a wildcard event, is the only pod it moves (Activate, own update).
	target types.UID
	// narrow, when set, says whether a rejecting plugin's hint is worth asking for this pod
	// (false: the event cannot help the pod as far as that plugin is concerned).
	narrow func(plugin string, pInfo *framework.QueuedPodInfo) bool
}

// inFlight tracks the popped pods and the events that arrived since each was popped, so that
// a pod coming back learns whether something that may help it happened meanwhile. events
// holds both, in arrival order: a pod's events are the ones after its own element. Events
// before the oldest in-flight pod concern nobody and are dropped.
type inFlight struct {
	pods   map[types.UID]*list.Element
	events list.List // of *inFlightPod and *clusterEvent
}

type inFlightPod struct {
	uid types.UID
	// deleted: Delete came while the pod was in flight; it is not queued again.
	deleted bool
}

func (f *inFlight) add(uid types.UID) {
	f.pods[uid] = f.events.PushBack(&inFlightPod{uid: uid})
}

func (f *inFlight) get(uid types.UID) *inFlightPod {
	if e, ok := f.pods[uid]; ok {
		return e.Value.(*inFlightPod)
	}
	return nil
}

// addEvent records ev if any pod is in flight.
func (f *inFlight) addEvent(ev *clusterEvent) {
	if len(f.pods) > 0 {
		f.events.PushBack(ev)
	}
}

// eventsSince lists the events that came after uid was popped.
func (f *inFlight) eventsSince(uid types.UID) ([]*clusterEvent, bool) {
	el, ok := f.pods[uid]
	if !ok {
		return nil, false
	}
	var out []*clusterEvent
	for e := el.Next(); e != nil; e = e.Next() {
		if ce, ok := e.Value.(*clusterEvent); ok {
			out = append(out, ce)
		}
	}
	return out, true
}

func (f *inFlight) done(uid types.UID) {
	el, ok := f.pods[uid]
	if !ok {
		return
	}
	delete(f.pods, uid)
	f.events.Remove(el)
	for e := f.events.Front(); e != nil; e = f.events.Front() {
		if _, isEvent := e.Value.(*clusterEvent); !isEvent {
			break
		}
		f.events.Remove(e)
	}
}

// moveAllLocked applies ev to the pods in unschedulablePods that preCheck accepts, and
// records it for the pods in flight.
func (p *PriorityQueue) moveAllLocked(logger klog.Logger, ev *clusterEvent, preCheck func(*v1.Pod) bool) {
	if !p.isEventOfInterest(ev.event) {
		if v := logger.V(6); v.Enabled() {
			v.Info("No plugin cares about this event", "event", eventLabel(ev.event))
		}
		return
	}
	p.movePods(logger, func(yield func(*framework.QueuedPodInfo) bool) {
		for _, e := range p.unschedulablePods.pods {
			if (preCheck == nil || preCheck(e.pInfo.Pod)) && !yield(e.pInfo) {
				return
			}
		}
	}, ev)
}

// movePods moves the pods (of unschedulablePods) that ev helps, and records ev for the pods
// in flight. It decides for all pods first and moves them after, so that it does not change
// unschedulablePods while ranging over it.
func (p *PriorityQueue) movePods(logger klog.Logger, pods iter.Seq[*framework.QueuedPodInfo], ev *clusterEvent) {
	type move struct {
		pInfo    *framework.QueuedPodInfo
		strategy queueingStrategy
	}
	var moves []move
	hints := map[string]matchedHints{} // per profile, computed once per event
	for pInfo := range pods {
		profile := pInfo.Pod.Spec.SchedulerName
		m, ok := hints[profile]
		if !ok {
			m = p.matchingHints(profile, ev.event)
			hints[profile] = m
		}
		if s := p.podStrategy(logger, pInfo, ev, m); s != queueSkip {
			moves = append(moves, move{pInfo, s})
		}
	}
	label := eventLabel(ev.event)
	activated := false
	for _, mv := range moves {
		if p.requeue(logger, mv.pInfo, mv.strategy, label) == QueueActive {
			activated = true
		}
	}
	p.inFlight.addEvent(ev)
	if activated {
		p.cond.Broadcast()
	}
}

// strategyForInFlightPod decides where a pod coming back from a failed attempt goes, from
// the events that came while it was in flight.
func (p *PriorityQueue) strategyForInFlightPod(logger klog.Logger, pInfo *framework.QueuedPodInfo) queueingStrategy {
	if pInfo.UnschedulablePlugins.Len() == 0 && pInfo.PendingPlugins.Len() == 0 {
		// An Error, not a rejection: retry after back-off.
		return queueAfterBackoff
	}
	events, ok := p.inFlight.eventsSince(pInfo.Pod.UID)
	if !ok {
		logger.Error(nil, "Pod handed back was not in flight; retrying it after back-off", "pod", klog.KObj(pInfo.Pod))
		return queueAfterBackoff
	}
	strategy := queueSkip
	for _, ev := range events {
		switch p.podStrategy(logger, pInfo, ev, p.matchingHints(pInfo.Pod.Spec.SchedulerName, ev.event)) {
		case queueImmediately:
			return queueImmediately
		case queueAfterBackoff:
			if pInfo.PendingPlugins.Len() == 0 {
				return queueAfterBackoff
			}
			strategy = queueAfterBackoff
		}
	}
	return strategy
}

// matchedHints are a profile's hint functions for the registered events that match one event;
// known is false for a profile with no QueueingHintMap.
type matchedHints struct {
	fns   []QueueingHintFunction
	known bool
}

func (p *PriorityQueue) matchingHints(profile string, e framework.ClusterEvent) matchedHints {
	m, ok := p.hints[profile]
	if !ok {
		return matchedHints{}
	}
	out := matchedHints{known: true}
	for registered, fns := range m {
		if registered.Match(e) {
			out.fns = append(out.fns, fns...)
		}
	}
	return out
}

// isEventOfInterest reports whether any profile registered an event that ev matches (always
// true without hint maps, and for wildcard events).
func (p *PriorityQueue) isEventOfInterest(e framework.ClusterEvent) bool {
	if isWildCard(e) || len(p.hints) == 0 {
		return true
	}
	for _, m := range p.hints {
		for registered := range m {
			if registered.Match(e) {
				return true
			}
		}
	}
	return false
}

// podStrategy asks the hints of the plugins that rejected pInfo (only its GatingPlugin while
// gated) whether ev may help it. A hint that fails counts as Queue, so that no pod is stuck.
// For a profile without hints, every rejecting plugin that ev.narrow lets through counts as
// Queue.
func (p *PriorityQueue) podStrategy(logger klog.Logger, pInfo *framework.QueuedPodInfo, ev *clusterEvent, m matchedHints) queueingStrategy {
	if isWildCard(ev.event) {
		if ev.target != "" && ev.target != pInfo.Pod.UID {
			return queueSkip
		}
		return queueAfterBackoff
	}
	gating, unsched, pending := pInfo.GatingPlugin, pInfo.UnschedulablePlugins, pInfo.PendingPlugins
	rejectedBy := func(plugin string) bool {
		if gating != "" {
			return plugin == gating
		}
		return unsched.Has(plugin) || pending.Has(plugin)
	}
	if gating == "" && unsched.Len() == 0 && pending.Len() == 0 {
		return queueAfterBackoff
	}
	if !m.known {
		if ev.narrow == nil {
			return queueAfterBackoff
		}
		if gating != "" {
			if ev.narrow(gating, pInfo) {
				return queueAfterBackoff
			}
			return queueSkip
		}
		for plugin := range unsched {
			if ev.narrow(plugin, pInfo) {
				return queueAfterBackoff
			}
		}
		for plugin := range pending {
			if ev.narrow(plugin, pInfo) {
				return queueAfterBackoff
			}
		}
		return queueSkip
	}
	strategy := queueSkip
	for _, fn := range m.fns {
		plugin := fn.PluginName
		if !rejectedBy(plugin) || (ev.narrow != nil && !ev.narrow(plugin, pInfo)) {
			continue
		}
		if fn.QueueingHintFn != nil {
			hint, err := callQueueingHint(logger, fn, pInfo.Pod, ev.oldObj, ev.newObj)
			if err != nil {
				logger.Error(err, "QueueingHint failed; queueing the pod", "plugin", plugin, "pod", klog.KObj(pInfo.Pod), "event", eventLabel(ev.event))
			} else if hint == framework.QueueSkip {
				continue
			}
		}
		if pending.Has(plugin) {
			return queueImmediately
		}
		if pending.Len() == 0 {
			return queueAfterBackoff
		}
		strategy = queueAfterBackoff
	}
	return strategy
}

// crossTopologyNarrow limits what a bound pod's arrival or update can do for InterPodAffinity
// and PodTopologySpread: the first only helps a pod with a required affinity term the new
// version matches, or a required anti-affinity term the old version matched; the second only
// a pod in the same namespace. Other plugins are left to their hints.
func crossTopologyNarrow(oldPod, newPod *v1.Pod) func(string, *framework.QueuedPodInfo) bool {
	return func(plugin string, pInfo *framework.QueuedPodInfo) bool {
		switch plugin {
		case interPodAffinityName:
			return anyTermMatches(pInfo.RequiredAffinityTerms, newPod) ||
				(oldPod != nil && anyTermMatches(pInfo.RequiredAntiAffinityTerms, oldPod))
		case podTopologySpreadName:
			return pInfo.Pod.Namespace == newPod.Namespace
		}
		return true
	}
}

// anyTermMatches reports whether pod matches one of terms. The queue does not know namespace
// labels, so a term with a namespace selector is taken to cover every namespace: the pod is
// retried rather than left waiting.
func anyTermMatches(terms []framework.AffinityTerm, pod *v1.Pod) bool {
	for i := range terms {
		t := &terms[i]
		if t.Selector == nil {
			continue
		}
		inNamespace := t.Namespaces.Has(pod.Namespace) ||
			(t.NamespaceSelector != nil && t.NamespaceSelector != labels.Nothing())
		if inNamespace && t.Selector.Matches(labels.Set(pod.Labels)) {
			return true
		}
	}
	return false
}

// isPodUpdated reports a change that may make a pod schedulable: anything but its status
// (except resource claim statuses), resourceVersion, generation, managedFields and finalizers.
func isPodUpdated(oldPod, newPod *v1.Pod) bool {
	if oldPod == nil {
		return true
	}
	if !equality.Semantic.DeepEqual(oldPod.Spec, newPod.Spec) ||
		!equality.Semantic.DeepEqual(oldPod.Status.ResourceClaimStatuses, newPod.Status.ResourceClaimStatuses) {
		return true
	}
	om, nm := oldPod.ObjectMeta, newPod.ObjectMeta // copies, stripped below
	om.ResourceVersion, nm.ResourceVersion = "", ""
	om.Generation, nm.Generation = 0, 0
	om.ManagedFields, nm.ManagedFields = nil, nil
	om.Finalizers, nm.Finalizers = nil, nil
	return !equality.Semantic.DeepEqual(om, nm)
}

// backoffDuration is podInitialBackoff doubled for each attempt after the first, at most
// podMaxBackoff.
func (p *PriorityQueue) backoffDuration(attempts int) time.Duration {
	d := p.podInitialBackoff
	for i := 1; i < attempts; i++ {
		if d >= p.podMaxBackoff/2 {
			return p.podMaxBackoff
		}
		d *= 2
	}
	return min(d, p.podMaxBackoff)
}

// backoffExpiry is when a pod's back-off ends: its Timestamp (its return to the queue) plus
// the back-off for its Attempts; zero for a pod never attempted. It is cached in
// BackoffExpiration, which AddUnschedulableIfNotPresent clears.
func (p *PriorityQueue) backoffExpiry(pInfo *framework.QueuedPodInfo) time.Time {
	if pInfo.BackoffExpiration.IsZero() && pInfo.Attempts > 0 && p.podMaxBackoff > 0 {
		pInfo.BackoffExpiration = pInfo.Timestamp.Add(p.backoffDuration(pInfo.Attempts))
	}
	return pInfo.BackoffExpiration
}

func (p *PriorityQueue) isBackingOff(pInfo *framework.QueuedPodInfo) bool {
	return p.clock.Now().Before(p.backoffExpiry(pInfo))
}

// flushBackoffQCompleted moves the pods whose back-off is over to activeQ.
func (p *PriorityQueue) flushBackoffQCompleted(logger klog.Logger) {
	p.lock.Lock()
	defer p.unlock()
	activated := false
	for {
		pInfo := p.backoffQ.Peek()
		if pInfo == nil || p.isBackingOff(pInfo) {
			break
		}
		p.backoffQ.Pop()
		if p.moveToActiveQ(logger, pInfo, BackoffComplete) {
			activated = true
		}
	}
	if activated {
		p.cond.Broadcast()
	}
}

// flushUnschedulablePodsLeftover retries the pods that have waited in unschedulablePods
// longer than podMaxInUnschedulablePodsDuration, in case no event ever comes for them.
func (p *PriorityQueue) flushUnschedulablePodsLeftover(logger klog.Logger) {
	p.lock.Lock()
	defer p.unlock()
	now := p.clock.Now()
	var pods []*framework.QueuedPodInfo
	for _, e := range p.unschedulablePods.pods {
		if now.Sub(e.pInfo.Timestamp) > p.podMaxInUnschedulable {
			pods = append(pods, e.pInfo)
		}
	}
	if len(pods) > 0 {
		p.movePods(logger, slices.Values(pods), &clusterEvent{event: EventUnschedulableTimeout})
	}
}
