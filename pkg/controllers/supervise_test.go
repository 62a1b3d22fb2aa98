package controllers

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/berth-cluster/berth/pkg/controllers/recovery"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// flakyController fails its first run, panics in its second, and runs properly afterwards.
type flakyController struct {
	runs *atomic.Int32
}

func (f flakyController) Run(ctx context.Context, _ int) error {
	switch f.runs.Add(1) {
	case 1:
		return errors.New("informers did not sync")
	case 2:
		panic("boom")
	}
	<-ctx.Done()
	return nil
}

// TestSuperviseControllerRestartsAStoppedController: a controller whose Run returns an error,
// then panics, is built again and run again after a back-off each time, and stays running.
func TestSuperviseControllerRestartsAStoppedController(t *testing.T) {
	restartBackoff, maxRestartBackoff = 10*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { restartBackoff, maxRestartBackoff = time.Second, time.Minute })
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component("flaky")))

	var runs, builds atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		superviseController(ctx, "flaky", 1, flakyController{&runs}, func() (controller, error) {
			builds.Add(1)
			return flakyController{&runs}, nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runs.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the third run must stay up
	if r, b := runs.Load(), builds.Load(); r != 3 || b != 2 {
		t.Errorf("runs = %d, rebuilds = %d; want 3 runs (error, panic, running) and 2 rebuilds", r, b)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(recovery.Component("flaky"))); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=controller/flaky} = %v, want %v", got, before+1)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("superviseController did not return after its context ended")
	}
}

// TestSuperviseBuildsAgain: a controller that could not be built (its service account's
// credentials were not there yet) is built again after a back-off, and then runs.
func TestSuperviseBuildsAgain(t *testing.T) {
	restartBackoff, maxRestartBackoff = 10*time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { restartBackoff, maxRestartBackoff = time.Second, time.Minute })
	var runs, builds atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		superviseController(ctx, "unbuilt", 1, nil, func() (controller, error) {
			if builds.Add(1) < 3 {
				return nil, errors.New("no token yet")
			}
			return blockingController{&runs}, nil
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for runs.Load() < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if r, b := runs.Load(), builds.Load(); r != 1 || b != 3 {
		t.Errorf("runs = %d, builds = %d; want 1 run after 3 builds", r, b)
	}
	cancel()
	<-done
}

// blockingController runs until its context ends.
type blockingController struct{ runs *atomic.Int32 }

func (c blockingController) Run(ctx context.Context, _ int) error {
	c.runs.Add(1)
	<-ctx.Done()
	return nil
}
