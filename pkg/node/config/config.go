package config

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// updatesBuffer is how many merged updates may wait for the syncLoop, as the kubelet's.
const updatesBuffer = 50

// PodConfig merges any number of named sources into one ordered stream of PodUpdates.
//
// A source gets its channel from Channel and sends types.PodUpdate values on it:
//   - SET: every pod the source has now. The first SET makes the source "seen"
//     (SeenAllSources); the file and http sources only ever send SET.
//   - ADD, UPDATE, DELETE, RECONCILE: these pods were added or changed at the source (all
//     four mean the same to the merge: it compares each pod with what it had).
//   - REMOVE: these pods are gone from the source.
//
// The merge keeps each source's pods by UID and, for each update it receives, emits on
// Updates() at most one update per operation, in this order:
//
//	REMOVE     pods the source no longer has
//	ADD        pods new to the source (an empty ADD when a source's first SET brings nothing,
//	           so that the syncLoop marks the source as seen)
//	UPDATE     pods whose spec, labels or annotations changed
//	DELETE     pods that changed and now have a deletionTimestamp (graceful deletion)
//	RECONCILE  pods of which only the status changed
//
// Pods in an update keep the order the source sent them in; REMOVE lists pods by
// namespace/name. Updates from all sources come out in the order they were merged.
type PodConfig struct {
	recorder record.EventRecorder
	updates  chan types.PodUpdate

	// mergeMu makes each merge and the delivery of its updates one step, so that updates
	// leave in the order they were merged. It is held while the syncLoop is slow to read.
	mergeMu sync.Mutex
	storage *podStorage // guarded by mergeMu

	// mu guards the sources and which of them sent a SET; never held while blocked.
	mu      sync.Mutex
	sources map[string]chan interface{}
	seen    sets.Set[string]
}

// NewPodConfig returns a PodConfig with no sources yet. recorder gets the Warning events
// about pods the merge ignores (FailedValidation); it may be nil.
func NewPodConfig(recorder record.EventRecorder) *PodConfig {
	return newPodConfig(recorder, clock.RealClock{})
}

func newPodConfig(recorder record.EventRecorder, clk clock.PassiveClock) *PodConfig {
	return &PodConfig{
		recorder: recorder,
		updates:  make(chan types.PodUpdate, updatesBuffer),
		storage:  newPodStorage(clk),
		sources:  map[string]chan interface{}{},
		seen:     sets.New[string](),
	}
}

// Channel returns the channel the named source sends its types.PodUpdates on, creating it
// (and the goroutine that merges from it, which stops when ctx ends) on the first call.
func (c *PodConfig) Channel(ctx context.Context, source string) chan<- interface{} {
	if source == "" {
		panic("config: Channel given an empty source name")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.sources[source]; ok {
		return ch
	}
	ch := make(chan interface{})
	c.sources[source] = ch
	go c.listen(ctx, source, ch)
	return ch
}

// Updates is the merged stream: the syncLoop's configCh.
func (c *PodConfig) Updates() <-chan types.PodUpdate {
	return c.updates
}

// SeenAllSources reports whether seenSources (the sources the syncLoop has had an update
// from) holds every source of this config, and each of those has sent a SET.
func (c *PodConfig) SeenAllSources(seenSources sets.Set[string]) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for source := range c.sources {
		if !seenSources.Has(source) || !c.seen.Has(source) {
			return false
		}
	}
	return true
}

func (c *PodConfig) listen(ctx context.Context, source string, ch <-chan interface{}) {
	logger := klog.FromContext(ctx).WithValues("source", source)
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case obj := <-ch:
			var u types.PodUpdate
			switch o := obj.(type) {
			case types.PodUpdate:
				u = o
			case *types.PodUpdate:
				u = *o
			default:
				logger.Error(nil, "Ignoring an update that is not a types.PodUpdate", "type", fmt.Sprintf("%T", obj))
				continue
			}
			c.merge(ctx, logger, source, u)
		}
	}
}

// merge runs one update through the storage and delivers what comes out of it.
func (c *PodConfig) merge(ctx context.Context, logger klog.Logger, source string, u types.PodUpdate) {
	c.mergeMu.Lock()
	defer c.mergeMu.Unlock()

	c.mu.Lock()
	firstSet := u.Op == types.SET && !c.seen.Has(source)
	if u.Op == types.SET {
		c.seen.Insert(source)
	}
	c.mu.Unlock()

	out, rejected := c.storage.merge(logger, source, u, firstSet)
	for _, r := range rejected {
		logger.Info("Pod failed validation due to duplicate pod name, ignoring", "pod", klog.KObj(r))
		if c.recorder != nil {
			c.recorder.Eventf(r, v1.EventTypeWarning, "FailedValidation",
				"Error validating pod %s from %s due to duplicate pod name %q, ignoring", podDesc(r), source, r.Name)
		}
	}
	for _, update := range out {
		select {
		case c.updates <- update:
		case <-ctx.Done():
			return
		}
	}
}

// podDesc is how the kubelet names a pod in messages: name_namespace(uid).
func podDesc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// firstSeenLayout is the kubernetes.io/config.seen timestamp's format (RFC 3339, fixed
// nanoseconds), as the kubelet writes it.
const firstSeenLayout = "2006-01-02T15:04:05.000000000Z07:00"

func formatFirstSeen(t time.Time) string { return t.Format(firstSeenLayout) }
