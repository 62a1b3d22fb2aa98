// Package cache is the scheduler's picture of the cluster: which pods run, or are about to
// run, on which nodes. scheduleOne takes a Snapshot of it at the start of every scheduling
// cycle (UpdateSnapshot, copying only the nodes that changed), and after selectHost it
// "assumes" the pod on the chosen node, so that the next cycle counts the pod there while the
// binding cycle is still posting pods/binding. The informers' pod and node events keep it in
// step with the API server.
package cache

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// cleanupPeriod is how often assumed pods whose binding finished are checked for expiry.
const cleanupPeriod = time.Second

// Cache holds every pod the scheduler counts (bound and assumed) summed up per node, the
// nodes grouped by zone, and which nodes have which images. It is safe for concurrent use;
// one mutex guards all of it.
//
// A pod's states in the cache:
//
//	             AssumePod                FinishBinding
//	Initial ─────────────────► Assumed ─────────────────► Expiring
//	 ▲ ▲  │                     │   │                      │   │
//	 │ └──┼──── ForgetPod ──────┘   │ AddPod        AddPod │   │ ttl passed
//	 │    │                         ▼                      │   │ without AddPod
//	 │    └──────── AddPod ──────► Added ◄─────────────────┘   │
//	 │                              │ ▲                        │
//	 │                    RemovePod │ └─ UpdatePod (stays)     │
//	 │                              ▼                          │
//	 │                           Deleted                       │
//	 └─────────────────────────────────────────────────────────┘
//	                          expired
//
// "Initial" and "Deleted" pods are not in the cache. Assumed and Expiring pods are both
// "assumed" (IsAssumedPod): they count on their node, and ForgetPod undoes them. A pod
// expires only once its binding finished, ttl passed and the informer never reported it
// bound (the binding was lost, or the pod deleted before we saw it); expiring gives its
// resources back, and if the pod shows up later AddPod counts it again. The cache relies on:
//   - no pod is assumed twice;
//   - a pod may be added without ever being assumed (bound by someone else, or scheduled
//     before a restart);
//   - a pod that was never added is neither updated nor removed.
type Cache struct {
	ttl   time.Duration
	clock clock.WithTicker
	// stopped is closed when the expiry loop has returned.
	stopped chan struct{}

	mu sync.RWMutex
	// pods are every pod the cache counts, by UID; assumed are the assumed ones among them.
	pods    map[types.UID]*podState
	assumed map[types.UID]*podState
	// nodes are the NodeInfos by node name, also linked from head in the order of their
	// latest change, so that UpdateSnapshot visits only what changed since it last ran. A
	// NodeInfo without a node stays while pods on it are known.
	nodes map[string]*nodeItem
	head  *nodeItem
	// tree holds the nodes that exist, by zone; it decides the snapshot's node order.
	tree *nodeTree
	// images are what each image name is and where it is.
	images map[string]*imageState
}

type podState struct {
	info *framework.PodInfo
	// bindingFinished is set by FinishBinding; only then may an assumed pod expire, at
	// deadline.
	bindingFinished bool
	deadline        time.Time
}

// nodeItem is a NodeInfo in the list ordered by most recent change.
type nodeItem struct {
	info       *framework.NodeInfo
	prev, next *nodeItem
}

// imageState is one image across the cluster.
type imageState struct {
	size  int64
	nodes sets.Set[string]
}

// Dump is a copy of the cache's contents, for debugging.
type Dump struct {
	AssumedPods sets.Set[types.UID]
	Nodes       map[string]*framework.NodeInfo
}

// New returns an empty cache whose assumed pods expire ttl after their binding finished
// unless the informer reports them bound first (0: never). It checks for expired pods every
// second until ctx ends.
func New(ctx context.Context, ttl time.Duration) *Cache {
	return newCache(ctx, ttl, clock.RealClock{})
}

func newCache(ctx context.Context, ttl time.Duration, clk clock.WithTicker) *Cache {
	c := &Cache{
		ttl:     ttl,
		clock:   clk,
		stopped: make(chan struct{}),
		pods:    map[types.UID]*podState{},
		assumed: map[types.UID]*podState{},
		nodes:   map[string]*nodeItem{},
		tree:    newNodeTree(),
		images:  map[string]*imageState{},
	}
	go c.run(ctx)
	return c
}

func (c *Cache) run(ctx context.Context) {
	defer close(c.stopped)
	logger := klog.FromContext(ctx)
	ticker := c.clock.NewTicker(cleanupPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			c.cleanup(ctx, logger)
		}
	}
}

// cleanup is one tick of run: a panic is logged and counted, and the next tick tries again
// (the cache's lock is released by a defer).
func (c *Cache) cleanup(ctx context.Context, logger klog.Logger) {
	defer panics.Recover(ctx, framework.PanicComponent, nil)
	c.cleanupAssumedPods(logger, c.clock.Now())
}

// cleanupAssumedPods forgets assumed pods whose binding finished more than ttl before now.
func (c *Cache) cleanupAssumedPods(logger klog.Logger, now time.Time) {
	if c.ttl == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, ps := range c.assumed {
		if !ps.bindingFinished || !now.After(ps.deadline) {
			continue
		}
		pod := ps.info.Pod
		logger.Info("Assumed pod expired: its binding finished but it was never reported bound",
			"pod", klog.KObj(pod), "node", klog.KRef("", pod.Spec.NodeName))
		if err := c.removePod(logger, key, ps); err != nil {
			logger.Error(err, "Expiring an assumed pod", "pod", klog.KObj(pod))
		}
	}
}

func podKey(pod *v1.Pod) (types.UID, error) {
	if pod.UID == "" {
		return "", fmt.Errorf("pod %s/%s has no UID, so the cache cannot key it", pod.Namespace, pod.Name)
	}
	return framework.PodKey(pod), nil
}

// AssumePod counts pod, whose Spec.NodeName is the chosen node, on that node before it is
// bound. It fails if the pod is already in the cache.
func (c *Cache) AssumePod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podKey(pod)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("pod %s has no node to be assumed on", klog.KObj(pod))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pods[key]; ok {
		return fmt.Errorf("pod %s (%s) is in the cache, so it cannot be assumed", klog.KObj(pod), key)
	}
	c.addPod(logger, key, framework.NewPodInfo(pod), true)
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod: the binding cycle is over, so the
// informer should report the pod bound within ttl. Pods not assumed are left alone.
func (c *Cache) FinishBinding(logger klog.Logger, pod *v1.Pod) error {
	key, err := podKey(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ps, ok := c.assumed[key]; ok {
		ps.bindingFinished = true
		ps.deadline = c.clock.Now().Add(c.ttl)
		logger.V(5).Info("Finished binding; the assumed pod may now expire", "pod", klog.KObj(pod))
	}
	return nil
}

// ForgetPod undoes AssumePod. It fails if the pod is not assumed, or was assumed on another
// node than pod.Spec.NodeName.
func (c *Cache) ForgetPod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podKey(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.assumed[key]
	if !ok {
		return fmt.Errorf("pod %s (%s) is not assumed, so it cannot be forgotten", klog.KObj(pod), key)
	}
	if on := ps.info.Pod.Spec.NodeName; on != pod.Spec.NodeName {
		return fmt.Errorf("pod %s (%s) was assumed on node %q, not %q", klog.KObj(pod), key, on, pod.Spec.NodeName)
	}
	return c.removePod(logger, key, ps)
}

// AddPod records that the informer saw pod bound. An assumed pod is confirmed (and moved,
// if it landed on another node than assumed); any other pod not yet in the cache is added,
// including one whose assumption expired.
func (c *Cache) AddPod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podKey(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[key]
	if !ok {
		c.addPod(logger, key, framework.NewPodInfo(pod), false)
		return nil
	}
	if _, assumed := c.assumed[key]; !assumed {
		return fmt.Errorf("pod %s (%s) was already added", klog.KObj(pod), key)
	}
	if on := ps.info.Pod.Spec.NodeName; on != pod.Spec.NodeName {
		logger.Info("Pod was added to a different node than it was assumed on",
			"pod", klog.KObj(pod), "assumedNode", klog.KRef("", on), "node", klog.KRef("", pod.Spec.NodeName))
	}
	// Replace the assumed copy so that the cache holds the pod as the API server has it.
	return c.updatePod(logger, key, ps, pod)
}

// UpdatePod replaces an added pod with its new version (its requests, labels or ports may
// have changed). Assumed pods are not updated: AddPod confirms them first.
func (c *Cache) UpdatePod(logger klog.Logger, oldPod, newPod *v1.Pod) error {
	key, err := podKey(oldPod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[key]
	if !ok {
		return fmt.Errorf("pod %s (%s) is not in the cache, so it cannot be updated", klog.KObj(oldPod), key)
	}
	if _, assumed := c.assumed[key]; assumed {
		return fmt.Errorf("assumed pod %s (%s) cannot be updated before it is added", klog.KObj(oldPod), key)
	}
	if on := ps.info.Pod.Spec.NodeName; on != newPod.Spec.NodeName {
		// A bound pod never moves, so an event was lost. kube-scheduler exits here; berth
		// follows the API server's word and moves the pod.
		logger.Error(nil, "Pod updated on a different node than it was added on; the scheduler cache was out of date",
			"pod", klog.KObj(newPod), "cachedNode", klog.KRef("", on), "node", klog.KRef("", newPod.Spec.NodeName))
	}
	return c.updatePod(logger, key, ps, newPod)
}

// RemovePod stops counting a pod, assumed or added.
func (c *Cache) RemovePod(logger klog.Logger, pod *v1.Pod) error {
	key, err := podKey(pod)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.pods[key]
	if !ok {
		return fmt.Errorf("pod %s (%s) is not in the cache, so it cannot be removed", klog.KObj(pod), key)
	}
	if on := ps.info.Pod.Spec.NodeName; on != pod.Spec.NodeName && pod.Spec.NodeName != "" {
		// An empty node name comes from a delete whose last known state we missed; anything
		// else means an event was lost. Remove the pod from where the cache counts it.
		logger.Error(nil, "Pod removed from a different node than it was added on; the scheduler cache was out of date",
			"pod", klog.KObj(pod), "cachedNode", klog.KRef("", on), "node", klog.KRef("", pod.Spec.NodeName))
	}
	return c.removePod(logger, key, ps)
}

// IsAssumedPod reports whether the pod is assumed and not yet confirmed by AddPod.
func (c *Cache) IsAssumedPod(pod *v1.Pod) (bool, error) {
	key, err := podKey(pod)
	if err != nil {
		return false, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.assumed[key]
	return ok, nil
}

// GetPod returns the cache's version of the pod, even if its node is gone.
func (c *Cache) GetPod(pod *v1.Pod) (*v1.Pod, error) {
	key, err := podKey(pod)
	if err != nil {
		return nil, err
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.pods[key]
	if !ok {
		return nil, fmt.Errorf("pod %s (%s) does not exist in the scheduler cache", klog.KObj(pod), key)
	}
	return ps.info.Pod, nil
}

// addPod counts a pod on its node; the caller holds the lock.
func (c *Cache) addPod(logger klog.Logger, key types.UID, pi *framework.PodInfo, assumed bool) {
	name := pi.Pod.Spec.NodeName
	item, ok := c.nodes[name]
	if !ok {
		// The pod's node is not known yet (events come on separate watches).
		item = &nodeItem{info: framework.NewNodeInfo()}
		c.nodes[name] = item
	}
	item.info.AddPod(pi)
	c.moveToHead(item)
	ps := &podState{info: pi}
	c.pods[key] = ps
	if assumed {
		c.assumed[key] = ps
	}
	logger.V(5).Info("Pod counted on node", "pod", klog.KObj(pi.Pod), "node", klog.KRef("", name), "assumed", assumed)
}

// removePod stops counting a pod; a NodeInfo left with neither node nor pods goes. The
// caller holds the lock.
func (c *Cache) removePod(logger klog.Logger, key types.UID, ps *podState) error {
	pod := ps.info.Pod
	name := pod.Spec.NodeName
	if item, ok := c.nodes[name]; !ok {
		logger.Error(nil, "Node not found when removing a pod", "pod", klog.KObj(pod), "node", klog.KRef("", name))
	} else {
		if err := item.info.RemovePod(pod); err != nil {
			return err
		}
		if len(item.info.Pods) == 0 && item.info.Node() == nil {
			c.unlink(item)
			delete(c.nodes, name)
		} else {
			c.moveToHead(item)
		}
	}
	delete(c.pods, key)
	delete(c.assumed, key)
	return nil
}

// updatePod replaces a pod with its new version, as Added; the caller holds the lock.
func (c *Cache) updatePod(logger klog.Logger, key types.UID, ps *podState, pod *v1.Pod) error {
	// A copy, since snapshots share PodInfos; Update keeps the parsed terms and sums if the
	// spec did not change.
	pi := *ps.info
	pi.Update(pod)
	if err := c.removePod(logger, key, ps); err != nil {
		return err
	}
	c.addPod(logger, key, &pi, false)
	return nil
}

// moveToHead marks item as the most recently changed NodeInfo.
func (c *Cache) moveToHead(item *nodeItem) {
	if c.head == item {
		return
	}
	c.unlink(item)
	item.next = c.head
	if c.head != nil {
		c.head.prev = item
	}
	c.head = item
}

// unlink takes item out of the list.
func (c *Cache) unlink(item *nodeItem) {
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.head == item {
		c.head = item.next
	}
	item.prev, item.next = nil, nil
}

// NodeCount returns the number of NodeInfos, counting those of removed nodes whose pods are
// still known (the "nodes" of scheduler_cache_size, as kube-scheduler counts them).
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodes)
}

// PodCount returns the number of pods counted, assumed ones included.
func (c *Cache) PodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.pods)
}

// AssumedPodCount returns the number of assumed pods.
func (c *Cache) AssumedPodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.assumed)
}

// Dump copies the cache's NodeInfos and assumed pods. It is for debugging: it copies all.
func (c *Cache) Dump() *Dump {
	c.mu.RLock()
	defer c.mu.RUnlock()
	d := &Dump{AssumedPods: sets.New[types.UID](), Nodes: make(map[string]*framework.NodeInfo, len(c.nodes))}
	for name, item := range c.nodes {
		d.Nodes[name] = item.info.Snapshot()
	}
	for key := range c.assumed {
		d.AssumedPods.Insert(key)
	}
	return d
}
