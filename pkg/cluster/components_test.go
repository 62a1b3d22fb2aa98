package cluster

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
)

// A component that fails, or panics, is restarted after a back-off, and its readyz check
// names it while it is down.
func TestSupervisorRestartsAStoppedComponentAndReportsItDown(t *testing.T) {
	s := newSupervisor()
	var runs atomic.Int32
	running := make(chan struct{})
	c := Component{Name: "node", Run: func(ctx context.Context, _ *rest.Config) error {
		switch runs.Add(1) {
		case 1:
			return errors.New("containerd would not start")
		case 2:
			panic("a bug")
		}
		close(running)
		<-ctx.Done()
		return nil
	}}
	check := s.checks([]Component{c})[0]
	if check.Name() != "component-node" {
		t.Errorf("check name %q", check.Name())
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.run(ctx, c, func() *rest.Config { return &rest.Config{} }, func() *rest.Config { return &rest.Config{} })
		close(done)
	}()

	deadline := time.Now().Add(5 * time.Second)
	for runs.Load() < 1 || check.Check(nil) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the failed component was not reported down")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := check.Check(nil); !strings.Contains(err.Error(), "component node is down: containerd would not start") {
		t.Errorf("check says %v", err)
	}
	select {
	case <-running:
	case <-time.After(10 * time.Second):
		t.Fatalf("the component was not restarted twice (runs %d)", runs.Load())
	}
	if err := check.Check(nil); err != nil {
		t.Errorf("a running component is reported down: %v", err)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the supervisor did not stop with its context")
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("runs = %d, want 3", n)
	}
}
