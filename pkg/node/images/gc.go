package images

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The image garbage collector (seed 000's realImageGCManager): it keeps a record of every
// image it has seen, when it first saw it and when a container last used it, and when the
// image filesystem is fuller than HighThresholdPercent it removes unused images, least
// recently used first, until usage is down to LowThresholdPercent. It never removes an image a
// container (running or exited) uses, a pinned one, the sandbox image, or one younger than
// MinAge.

// GCPolicy is the image GC policy (the KubeletConfiguration's imageGC* fields).
type GCPolicy struct {
	HighThresholdPercent int
	LowThresholdPercent  int
	MinAge               time.Duration
}

// GCRuntime is what the image GC needs of the container runtime.
type GCRuntime interface {
	ListImages(ctx context.Context) ([]container.Image, error)
	RemoveImage(ctx context.Context, image container.ImageSpec) error
	GetPods(ctx context.Context, all bool) ([]*container.Pod, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

type imageRecord struct {
	firstDetected time.Time
	lastUsed      time.Time
	size          int64
	pinned        bool
	tags          []string
}

// GCManager is the image garbage collector.
type GCManager struct {
	runtime      GCRuntime
	policy       GCPolicy
	sandboxImage string
	recorder     record.EventRecorder
	nodeRef      *v1.ObjectReference

	mu      sync.Mutex
	records map[string]*imageRecord
}

// NewGCManager checks the policy and returns the collector.
func NewGCManager(runtime GCRuntime, policy GCPolicy, sandboxImage string, recorder record.EventRecorder, nodeRef *v1.ObjectReference) (*GCManager, error) {
	if policy.HighThresholdPercent < 0 || policy.HighThresholdPercent > 100 {
		return nil, fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", policy.HighThresholdPercent)
	}
	if policy.LowThresholdPercent < 0 || policy.LowThresholdPercent > 100 {
		return nil, fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", policy.LowThresholdPercent)
	}
	if policy.LowThresholdPercent > policy.HighThresholdPercent {
		return nil, fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", policy.LowThresholdPercent, policy.HighThresholdPercent)
	}
	return &GCManager{runtime: runtime, policy: policy, sandboxImage: sandboxImage, recorder: recorder, nodeRef: nodeRef, records: map[string]*imageRecord{}}, nil
}

// detectImages records the runtime's images and marks those containers use as used now; it
// returns the IDs in use.
func (m *GCManager) detectImages(ctx context.Context, now time.Time) (map[string]bool, error) {
	images, err := m.runtime.ListImages(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	pods, err := m.runtime.GetPods(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	inUse := map[string]bool{}
	for _, p := range pods {
		for _, c := range p.Containers {
			inUse[c.ImageID] = true
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[string]bool{}
	for _, img := range images {
		seen[img.ID] = true
		r, ok := m.records[img.ID]
		if !ok {
			r = &imageRecord{firstDetected: now}
			m.records[img.ID] = r
		}
		if inUse[img.ID] {
			r.lastUsed = now
		}
		r.size, r.pinned, r.tags = img.Size, img.Pinned, img.RepoTags
		for _, tag := range img.RepoTags {
			if tag == m.sandboxImage {
				r.pinned = true // containerd 1.6 does not pin the sandbox image itself
			}
		}
	}
	for id := range m.records {
		if !seen[id] {
			delete(m.records, id)
		}
	}
	return inUse, nil
}

// GarbageCollect frees image space when the image filesystem is fuller than the high
// threshold, down to the low one.
func (m *GCManager) GarbageCollect(ctx context.Context) error {
	now := time.Now()
	inUse, err := m.detectImages(ctx, now)
	if err != nil {
		return err
	}
	capacity, available, err := m.imageFsStats(ctx)
	if err != nil {
		return err
	}
	if capacity == 0 {
		return fmt.Errorf("invalid capacity 0 on image filesystem")
	}
	usagePercent := 100 - int(available*100/capacity)
	if usagePercent < m.policy.HighThresholdPercent {
		return nil
	}
	amountToFree := capacity*int64(100-m.policy.LowThresholdPercent)/100 - available
	logger := klog.FromContext(ctx)
	logger.Info("Disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", usagePercent, "highThreshold", m.policy.HighThresholdPercent, "amountToFree", amountToFree, "lowThreshold", m.policy.LowThresholdPercent)
	freed, err := m.freeSpace(ctx, amountToFree, now, inUse)
	if err != nil {
		return err
	}
	if freed < amountToFree {
		err := fmt.Errorf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", amountToFree, freed)
		m.recorder.Event(m.nodeRef, v1.EventTypeWarning, "FreeDiskSpaceFailed", err.Error())
		return err
	}
	return nil
}

// DeleteUnusedImages removes every image no container uses (the eviction manager's reclaim
// under disk pressure), still sparing pinned, sandbox and too young images.
func (m *GCManager) DeleteUnusedImages(ctx context.Context) error {
	now := time.Now()
	inUse, err := m.detectImages(ctx, now)
	if err != nil {
		return err
	}
	_, err = m.freeSpace(ctx, math.MaxInt64, now, inUse)
	return err
}

// freeSpace removes eligible images, least recently used (then oldest) first, until
// bytesToFree are freed; it returns what it freed.
func (m *GCManager) freeSpace(ctx context.Context, bytesToFree int64, now time.Time, inUse map[string]bool) (int64, error) {
	type candidate struct {
		id string
		r  imageRecord
	}
	m.mu.Lock()
	var candidates []candidate
	for id, r := range m.records {
		if inUse[id] || r.pinned {
			continue
		}
		candidates = append(candidates, candidate{id, *r})
	}
	m.mu.Unlock()
	sort.Slice(candidates, func(i, j int) bool {
		if !candidates[i].r.lastUsed.Equal(candidates[j].r.lastUsed) {
			return candidates[i].r.lastUsed.Before(candidates[j].r.lastUsed)
		}
		return candidates[i].r.firstDetected.Before(candidates[j].r.firstDetected)
	})
	logger := klog.FromContext(ctx)
	var freed int64
	for _, c := range candidates {
		if freed >= bytesToFree {
			break
		}
		if now.Sub(c.r.firstDetected) < m.policy.MinAge {
			logger.V(5).Info("Image's age is less than the policy's minAge, not eligible for garbage collection", "imageID", c.id, "age", now.Sub(c.r.firstDetected), "minAge", m.policy.MinAge)
			continue
		}
		logger.Info("Removing image to free bytes", "imageID", c.id, "size", c.r.size, "tags", c.r.tags)
		if err := m.runtime.RemoveImage(ctx, container.ImageSpec{Image: c.id}); err != nil {
			logger.Error(err, "Removing an image", "imageID", c.id)
			continue
		}
		m.mu.Lock()
		delete(m.records, c.id)
		m.mu.Unlock()
		freed += c.r.size
	}
	return freed, nil
}

// imageFsStats is the image filesystem's capacity and available bytes, from the filesystem
// holding the runtime's image store.
func (m *GCManager) imageFsStats(ctx context.Context) (capacity, available int64, err error) {
	info, err := m.runtime.ImageFsInfo(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("image filesystem info: %w", err)
	}
	fs := info.GetImageFilesystems()
	if len(fs) == 0 || fs[0].GetFsId().GetMountpoint() == "" {
		return 0, 0, fmt.Errorf("the runtime reports no image filesystem")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(fs[0].GetFsId().GetMountpoint(), &st); err != nil {
		return 0, 0, fmt.Errorf("statfs of the image filesystem: %w", err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize, nil
}
