package pleg

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/berth-cluster/berth/pkg/node/container"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func status(uid types.UID, name string) *container.PodStatus {
	return &container.PodStatus{ID: uid, Name: name}
}

func TestCacheGetSet(t *testing.T) {
	c := NewCache()
	st, err := c.Get("u")
	if err != nil || st == nil || st.ID != "u" || len(st.ContainerStatuses) != 0 {
		t.Fatalf("Get of an unknown pod = %+v, %v; want an empty status", st, err)
	}
	if !c.Set("u", status("u", "a"), nil, t0.Add(2*time.Second)) {
		t.Fatal("first Set refused")
	}
	if c.Set("u", status("u", "older"), nil, t0.Add(time.Second)) {
		t.Error("Set of an older status accepted")
	}
	if !c.Set("u", status("u", "same-time"), nil, t0.Add(2*time.Second)) {
		t.Error("Set at the same time refused")
	}
	boom := errors.New("boom")
	if !c.Set("u", nil, boom, t0.Add(3*time.Second)) {
		t.Error("Set of an error refused")
	}
	if st, err := c.Get("u"); st != nil || !errors.Is(err, boom) {
		t.Errorf("Get = %v, %v; want the error", st, err)
	}
	c.Delete("u")
	if st, err := c.Get("u"); err != nil || st.Name != "" {
		t.Errorf("Get after Delete = %+v, %v", st, err)
	}
}

// getAsync runs GetNewerThan in a goroutine.
func getAsync(c Cache, minTime time.Time) chan *container.PodStatus {
	ch := make(chan *container.PodStatus, 1)
	go func() {
		st, _ := c.GetNewerThan("u", minTime)
		ch <- st
	}()
	return ch
}

func expectBlocked(t *testing.T, ch chan *container.PodStatus) {
	t.Helper()
	select {
	case st := <-ch:
		t.Fatalf("GetNewerThan returned %+v, want it blocked", st)
	case <-time.After(50 * time.Millisecond):
	}
}

func expectStatus(t *testing.T, ch chan *container.PodStatus, name string) {
	t.Helper()
	select {
	case st := <-ch:
		if st.Name != name {
			t.Fatalf("GetNewerThan returned %q, want %q", st.Name, name)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThan still blocked")
	}
}

func TestCacheGetNewerThan(t *testing.T) {
	tests := []struct {
		name string
		// setup runs before the read, act after it has started.
		setup, act func(c Cache)
		minTime    time.Time
		want       string // "" means blocked after act
	}{
		{
			name:    "entry newer: immediate",
			setup:   func(c Cache) { c.Set("u", status("u", "new"), nil, t0.Add(time.Second)) },
			minTime: t0,
			want:    "new",
		},
		{
			name:    "nothing yet: blocked until the first relist",
			minTime: time.Time{},
		},
		{
			name:    "global timestamp newer: the empty status",
			act:     func(c Cache) { c.UpdateTime(t0.Add(time.Second)) },
			minTime: t0,
			want:    "-",
		},
		{
			name:    "entry as old as minTime: blocked",
			setup:   func(c Cache) { c.Set("u", status("u", "old"), nil, t0) },
			minTime: t0,
		},
		{
			name:    "entry as old as minTime, then a newer Set",
			setup:   func(c Cache) { c.Set("u", status("u", "old"), nil, t0) },
			act:     func(c Cache) { c.Set("u", status("u", "new"), nil, t0.Add(time.Millisecond)) },
			minTime: t0,
			want:    "new",
		},
		{
			name:    "entry old, then the relist confirms it",
			setup:   func(c Cache) { c.Set("u", status("u", "old"), nil, t0.Add(-time.Second)) },
			act:     func(c Cache) { c.UpdateTime(t0.Add(time.Second)) },
			minTime: t0,
			want:    "old",
		},
		{
			name:    "a global timestamp not past minTime does not wake",
			act:     func(c Cache) { c.UpdateTime(t0) },
			minTime: t0,
		},
		{
			name: "another pod's Set does not wake",
			act:  func(c Cache) { c.Set("other", status("other", "x"), nil, t0.Add(time.Hour)) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			if tt.setup != nil {
				tt.setup(c)
			}
			ch := getAsync(c, tt.minTime)
			if tt.act != nil {
				time.Sleep(10 * time.Millisecond)
				tt.act(c)
			}
			switch tt.want {
			case "":
				expectBlocked(t, ch)
				c.UpdateTime(tt.minTime.Add(time.Hour)) // release the goroutine
				<-ch
			case "-":
				expectStatus(t, ch, "")
			default:
				expectStatus(t, ch, tt.want)
			}
		})
	}
}

func TestCacheGetNewerThanContext(t *testing.T) {
	c := NewCache().(*cache)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetNewerThanContext(ctx, "u", t0)
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("GetNewerThanContext did not return on cancel")
	}
	c.mu.Lock()
	n := len(c.subscribers)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d subscriptions left after cancel", n)
	}
}
