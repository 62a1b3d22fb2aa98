package images

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// countingLister is a runtime whose images the test sets, counting the listings.
type countingLister struct {
	mu     sync.Mutex
	images []container.Image
	err    error
	calls  int
}

func (f *countingLister) ListImages(context.Context) ([]container.Image, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return append([]container.Image(nil), f.images...), nil
}

func (f *countingLister) set(images []container.Image, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images, f.err = images, err
}

func (f *countingLister) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func ids(images []container.Image) []string {
	var out []string
	for _, img := range images {
		out = append(out, img.ID)
	}
	return out
}

// TestListRefreshesEvery30s: the image list lists the runtime at once and then every 30 s,
// reading it costs no listing, a new image shows at the next refresh, and a failed listing
// keeps the last good list.
func TestListRefreshesEvery30s(t *testing.T) {
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := &countingLister{images: []container.Image{{ID: "pause", Size: 1}}}
	l := NewList(rt, clock)
	if got, err := l.GetImageList(); err != nil || len(got) != 0 {
		t.Fatalf("before Run: %v, %v; want an empty list", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { l.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	waitList := func(what string, want ...string) {
		t.Helper()
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			got, _ := l.GetImageList()
			return slices.Equal(ids(got), want), nil
		})
		if err != nil {
			got, _ := l.GetImageList()
			t.Fatalf("%s: list %v, want %v", what, ids(got), want)
		}
	}
	waitList("the first listing, at once", "pause")
	// Run makes its ticker before the first listing: the clock may step now.

	rt.set([]container.Image{{ID: "pause", Size: 1}, {ID: "imported", Size: 5}}, nil)
	for range 100 {
		l.GetImageList() // the node status reads it at every update
	}
	clock.Step(29 * time.Second)
	time.Sleep(20 * time.Millisecond)
	if got, _ := l.GetImageList(); !slices.Equal(ids(got), []string{"pause"}) || rt.count() != 1 {
		t.Fatalf("before 30 s: list %v after %d listings; want the first list from one listing", ids(got), rt.count())
	}
	clock.Step(time.Second)
	waitList("the refresh at 30 s", "pause", "imported")
	if n := rt.count(); n != 2 {
		t.Errorf("%d listings in 30 s, want 2", n)
	}

	rt.set(nil, errors.New("runtime down"))
	clock.Step(ListPeriod)
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return rt.count() == 3, nil
	}); err != nil {
		t.Fatal("no listing at 60 s")
	}
	time.Sleep(20 * time.Millisecond)
	if got, _ := l.GetImageList(); !slices.Equal(ids(got), []string{"pause", "imported"}) {
		t.Errorf("after a failed listing: %v, want the last good list", ids(got))
	}
}
