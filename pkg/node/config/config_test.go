package config

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/berth-cluster/berth/pkg/node/types"
)

const testTimeout = 10 * time.Second

// next reads one update or fails.
func next(t *testing.T, ch <-chan types.PodUpdate) types.PodUpdate {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(testTimeout):
		t.Fatal("no update")
		return types.PodUpdate{}
	}
}

// expectNone checks that nothing arrives for a while.
func expectNone(t *testing.T, ch <-chan types.PodUpdate) {
	t.Helper()
	select {
	case u := <-ch:
		t.Fatalf("unexpected update %s from %s", describe([]types.PodUpdate{u}), u.Source)
	case <-time.After(100 * time.Millisecond):
	}
}

func TestPodConfig(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	recorder := record.NewFakeRecorder(10)
	cfg := NewPodConfig(recorder)
	file := cfg.Channel(ctx, types.FileSource)
	api := cfg.Channel(ctx, types.ApiserverSource)
	if cfg.Channel(ctx, types.FileSource) != file {
		t.Fatal("Channel made a second channel for the same source")
	}
	updates := cfg.Updates()
	ready := NewSourcesReady(cfg.SeenAllSources)
	// observe does what the syncLoop does with an update, and describes it.
	observe := func() string {
		u := next(t, updates)
		ready.AddSource(u.Source)
		return u.Source + " " + describe([]types.PodUpdate{u})
	}

	if ready.AllReady() {
		t.Fatal("ready before any source sent anything")
	}
	file <- types.PodUpdate{Op: types.SET}
	if got := observe(); got != "file ADD:" {
		t.Fatalf("got %q, want the empty ADD of a first SET", got)
	}
	if ready.AllReady() {
		t.Fatal("ready before the apiserver source sent anything")
	}

	// Incremental operations do not make a source seen; its SET does.
	api <- types.PodUpdate{Op: types.ADD, Pods: []*v1.Pod{makePod("a").obj()}}
	if got := observe(); got != "api ADD:a" {
		t.Fatalf("got %q", got)
	}
	if ready.AllReady() {
		t.Fatal("ready before the apiserver source sent a SET")
	}
	api <- &types.PodUpdate{Op: types.SET, Pods: []*v1.Pod{makePod("a").obj(), makePod("b").obj()}}
	if got := observe(); got != "api ADD:b" {
		t.Fatalf("got %q", got)
	}
	if !ready.AllReady() {
		t.Fatal("not ready after both sources sent a SET and were observed")
	}

	// Anything but a PodUpdate is dropped.
	api <- "nonsense"
	expectNone(t, updates)

	// A duplicate name is an event.
	file <- types.PodUpdate{Op: types.SET, Pods: []*v1.Pod{makePod("x").obj(), makePod("x").uid("other").obj()}}
	if got := observe(); got != "file ADD:x" {
		t.Fatalf("got %q", got)
	}
	select {
	case e := <-recorder.Events:
		want := `Warning FailedValidation Error validating pod x_default(other) from file due to duplicate pod name "x", ignoring`
		if e != want {
			t.Errorf("event %q, want %q", e, want)
		}
	case <-time.After(testTimeout):
		t.Fatal("no event for the duplicate pod")
	}

	// A new source makes the config not ready until it is heard from.
	http := cfg.Channel(ctx, types.HTTPSource)
	if ready.AllReady() {
		t.Fatal("ready with a silent http source")
	}
	http <- types.PodUpdate{Op: types.SET, Pods: []*v1.Pod{makePod("h").obj()}}
	if got := observe(); got != "http ADD:h" || !ready.AllReady() {
		t.Fatalf("got %q, ready %v", got, ready.AllReady())
	}
}

func TestPodConfigKeepsOrderAcrossSources(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := NewPodConfig(nil)
	sources := []string{"s1", "s2", "s3"}
	const rounds = 20
	done := make(chan struct{})
	for _, s := range sources {
		ch := cfg.Channel(ctx, s)
		go func() {
			for i := 0; i < rounds; i++ {
				name := "p" + strings.Repeat("x", i)
				ch <- types.PodUpdate{Op: types.SET, Pods: []*v1.Pod{makePod(name).obj()}}
			}
			done <- struct{}{}
		}()
	}
	// Each source's updates arrive in its own order: ADD p, then REMOVE p + ADD px, ...
	last := map[string]int{}
	for n := 0; n < len(sources)*(2*rounds-1); n++ {
		u := next(t, cfg.Updates())
		if u.Op == types.ADD {
			l := len(u.Pods[0].Name) - 1
			if l != last[u.Source] {
				t.Fatalf("%s: ADD of round %d after round %d", u.Source, l, last[u.Source]-1)
			}
			last[u.Source]++
		}
	}
	for range sources {
		<-done
	}
	expectNone(t, cfg.Updates())
}

func TestPodConfigStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cfg := NewPodConfig(nil)
	ch := cfg.Channel(ctx, "s")
	// Fill the updates buffer, then one more: the merge blocks on delivery.
	for i := 0; i <= updatesBuffer; i++ {
		ch <- types.PodUpdate{Op: types.ADD, Pods: []*v1.Pod{makePod(strings.Repeat("a", i+1)).obj()}}
	}
	cancel()
	// The listener returns instead of reading: a send would now block forever.
	select {
	case ch <- types.PodUpdate{Op: types.SET}:
		t.Fatal("the listener still reads after its context ended")
	case <-time.After(200 * time.Millisecond):
	}
}
