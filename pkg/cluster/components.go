package cluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Component is a long-running part of the cluster that talks to the API server: the
// controllers, the scheduler, the node agent. Run blocks until ctx ends. One that returns
// early, with an error or not, or panics, is restarted with back-off: in one process, one
// part's fault must not end the others (DESIGN.md).
type Component struct {
	// Name is how the logs and the API server's /readyz ("component-NAME") call it.
	Name string
	// Identity is who it is to the API server: Run's config carries a client certificate of
	// the cluster CA for it when the control plane runs components as themselves
	// (Config.ComponentIdentities). Without a user, or otherwise, it runs as the admin.
	Identity Identity
	// Setup, when set, runs once as the admin before the first Run (retried with Run's
	// back-off until it succeeds): what kubeadm's addon phase does for a component, such as
	// the cluster DNS's service account and role.
	Setup func(ctx context.Context, admin *rest.Config) error
	Run   func(ctx context.Context, config *rest.Config) error
}

// Back-off between restarts of a component: 1 s doubling to 30 s, back to 1 s after a run
// that lasted restartResetAfter.
const (
	restartInitialBackoff = time.Second
	restartMaxBackoff     = 30 * time.Second
	restartResetAfter     = time.Minute
)

// supervisor runs the components and knows which of them are down.
type supervisor struct {
	mu   sync.Mutex
	down map[string]error
}

func newSupervisor() *supervisor { return &supervisor{down: map[string]error{}} }

// run runs c with a fresh copy of config until ctx ends, restarting it whenever it stops.
func (s *supervisor) run(ctx context.Context, c Component, config, admin func() *rest.Config) {
	logger := klog.FromContext(ctx).WithValues("component", c.Name)
	backoff := restartInitialBackoff
	setUp := c.Setup == nil
	for {
		start := time.Now()
		err := panics.Call(ctx, "component/"+c.Name, func() error {
			if !setUp {
				if err := c.Setup(ctx, admin()); err != nil {
					return fmt.Errorf("setting up: %w", err)
				}
				setUp = true
			}
			return c.Run(ctx, config())
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("it stopped")
		}
		if time.Since(start) >= restartResetAfter {
			backoff = restartInitialBackoff
		}
		s.setDown(c.Name, err)
		logger.Error(err, "A component stopped; restarting it", "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, restartMaxBackoff)
		s.setDown(c.Name, nil)
		logger.Info("Restarting the component")
	}
}

func (s *supervisor) setDown(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		delete(s.down, name)
	} else {
		s.down[name] = err
	}
}

// checks are the API server's readyz checks, one per component: /readyz?verbose names the one
// that is down ("[-]component-node failed").
func (s *supervisor) checks(components []Component) []healthz.HealthChecker {
	var out []healthz.HealthChecker
	for _, c := range components {
		out = append(out, healthz.NamedCheck("component-"+c.Name, func(*http.Request) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			if err := s.down[c.Name]; err != nil {
				return fmt.Errorf("component %s is down: %w", c.Name, err)
			}
			return nil
		}))
	}
	return out
}
