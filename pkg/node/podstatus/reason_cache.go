package podstatus

import (
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// maxReasonCacheEntries bounds the reason cache, as the kubelet's does.
const maxReasonCacheEntries = 1000

// ReasonCache remembers why each container last failed to start — ErrImagePull,
// ImagePullBackOff, CrashLoopBackOff, CreateContainerConfigError, ... with its message — so
// that the container's status says Waiting with that reason until a start succeeds. It is an
// LRU of at most 1000 entries keyed by pod UID and container name, filled from the
// PodSyncResult of every SyncPod. It is safe for concurrent use.
type ReasonCache struct {
	cache *lru.Cache
}

type reasonKey struct {
	uid  types.UID
	name string
}

type reasonItem struct {
	err     error
	message string
}

// NewReasonCache returns an empty cache.
func NewReasonCache() *ReasonCache {
	return &ReasonCache{cache: lru.New(maxReasonCacheEntries)}
}

// Update records the outcome of the StartContainer steps of one SyncPod: a failed start
// stores its reason and message, a successful one clears the container's entry. Other steps
// (sandbox, kill, ...) do not touch the cache.
func (c *ReasonCache) Update(uid types.UID, result container.PodSyncResult) {
	for _, r := range result.SyncResults {
		if r == nil || r.Action != container.StartContainer {
			continue
		}
		name, ok := r.Target.(string)
		if !ok {
			continue
		}
		if r.Error != nil {
			c.cache.Add(reasonKey{uid, name}, reasonItem{err: r.Error, message: r.Message})
		} else {
			c.Remove(uid, name)
		}
	}
}

// Remove forgets the container's reason.
func (c *ReasonCache) Remove(uid types.UID, name string) {
	c.cache.Remove(reasonKey{uid, name})
}

// Get returns why the container last failed to start: one of the container.Err* values and
// the message that went with it.
func (c *ReasonCache) Get(uid types.UID, name string) (reason error, message string, ok bool) {
	v, ok := c.cache.Get(reasonKey{uid, name})
	if !ok {
		return nil, "", false
	}
	item := v.(reasonItem)
	return item.err, item.message, true
}
