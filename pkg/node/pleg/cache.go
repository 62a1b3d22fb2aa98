package pleg

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// cache implements Cache. An entry is fresh for a reader asking for "newer than t" when it was
// read after t, or when the whole cache was confirmed after t (UpdateTime, at the end of each
// relist). Readers that find nothing fresh subscribe; Set and UpdateTime wake the subscribers
// whose wait is over.
type cache struct {
	mu   sync.Mutex
	pods map[types.UID]*cacheEntry
	// timestamp is the global freshness: every entry reflects the runtime at least as of it.
	// Nil until the first UpdateTime, so that nothing is served before the first relist.
	timestamp   *time.Time
	subscribers map[types.UID][]*subscriber
}

type cacheEntry struct {
	status   *container.PodStatus
	err      error
	modified time.Time
}

type subscriber struct {
	minTime time.Time
	ch      chan *cacheEntry // buffered 1; receives exactly one entry
}

var _ Cache = &cache{}
var _ ContextCache = &cache{}

// NewCache returns an empty pod status cache.
func NewCache() Cache {
	return &cache{pods: map[types.UID]*cacheEntry{}, subscribers: map[types.UID][]*subscriber{}}
}

func (c *cache) Get(uid types.UID) (*container.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.get(uid)
	return e.status, e.err
}

func (c *cache) GetNewerThan(uid types.UID, minTime time.Time) (*container.PodStatus, error) {
	return c.GetNewerThanContext(context.Background(), uid, minTime)
}

func (c *cache) GetNewerThanContext(ctx context.Context, uid types.UID, minTime time.Time) (*container.PodStatus, error) {
	c.mu.Lock()
	if e := c.getIfNewerThan(uid, minTime); e != nil {
		c.mu.Unlock()
		return e.status, e.err
	}
	sub := &subscriber{minTime: minTime, ch: make(chan *cacheEntry, 1)}
	c.subscribers[uid] = append(c.subscribers[uid], sub)
	c.mu.Unlock()

	select {
	case e := <-sub.ch:
		return e.status, e.err
	case <-ctx.Done():
		c.unsubscribe(uid, sub)
		// A notification may have raced with the cancellation: prefer the data.
		select {
		case e := <-sub.ch:
			return e.status, e.err
		default:
			return nil, ctx.Err()
		}
	}
}

func (c *cache) Set(uid types.UID, status *container.PodStatus, err error, timestamp time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Two writers (the relist and the CRI event stream) may race; the newest read wins.
	if old, ok := c.pods[uid]; ok && old.modified.After(timestamp) {
		return false
	}
	c.pods[uid] = &cacheEntry{status: status, err: err, modified: timestamp}
	c.notify(uid)
	return true
}

func (c *cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

func (c *cache) UpdateTime(timestamp time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timestamp = &timestamp
	for uid := range c.subscribers {
		c.notify(uid)
	}
}

// get returns the entry of uid, or an empty status: the runtime had nothing of the pod.
func (c *cache) get(uid types.UID) *cacheEntry {
	if e, ok := c.pods[uid]; ok {
		return e
	}
	return &cacheEntry{status: &container.PodStatus{ID: uid}}
}

// getIfNewerThan returns the entry of uid if it is fresh for minTime, else nil. Caller holds mu.
func (c *cache) getIfNewerThan(uid types.UID, minTime time.Time) *cacheEntry {
	if c.timestamp != nil && c.timestamp.After(minTime) {
		return c.get(uid)
	}
	if e, ok := c.pods[uid]; ok && e.modified.After(minTime) {
		return e
	}
	return nil
}

// notify hands the entry of uid to every subscriber it is now fresh for. Caller holds mu.
func (c *cache) notify(uid types.UID) {
	subs := c.subscribers[uid]
	kept := subs[:0]
	for _, s := range subs {
		if e := c.getIfNewerThan(uid, s.minTime); e != nil {
			s.ch <- e
			continue
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		delete(c.subscribers, uid)
		return
	}
	c.subscribers[uid] = kept
}

func (c *cache) unsubscribe(uid types.UID, sub *subscriber) {
	c.mu.Lock()
	defer c.mu.Unlock()
	subs := c.subscribers[uid]
	for i, s := range subs {
		if s == sub {
			subs = append(subs[:i], subs[i+1:]...)
			break
		}
	}
	if len(subs) == 0 {
		delete(c.subscribers, uid)
		return
	}
	c.subscribers[uid] = subs
}
