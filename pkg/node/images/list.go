package images

import (
	"context"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// ListPeriod is how often the image list is refreshed (the kubelet's image cache: 30 s).
const ListPeriod = 30 * time.Second

// ImageLister is what the image list needs of the container runtime.
type ImageLister interface {
	ListImages(ctx context.Context) ([]container.Image, error)
}

// List is the node's images as its status reports them (the image GC manager's imageCache in
// the kubelet): Run lists the runtime's images at once and then every ListPeriod, and every
// node status update reads the last list rather than asking the runtime again. A failed
// listing keeps the previous list.
type List struct {
	runtime ImageLister
	clock   clock.WithTicker

	mu     sync.Mutex
	images []container.Image
}

// NewList returns an image list, empty until Run first lists the runtime's images.
func NewList(runtime ImageLister, clk clock.WithTicker) *List {
	return &List{runtime: runtime, clock: clk}
}

// Run refreshes the list now and every ListPeriod until ctx ends.
func (l *List) Run(ctx context.Context) {
	t := l.clock.NewTicker(ListPeriod)
	defer t.Stop()
	for {
		l.refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (l *List) refresh(ctx context.Context) {
	images, err := l.runtime.ListImages(ctx)
	if err != nil {
		klog.FromContext(ctx).Info("Failed to update image list", "err", err)
		return
	}
	l.mu.Lock()
	l.images = images
	l.mu.Unlock()
}

// GetImageList returns the last list of images; the caller must not change it.
func (l *List) GetImageList() ([]container.Image, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.images, nil
}
