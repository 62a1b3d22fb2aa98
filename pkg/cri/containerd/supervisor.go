package containerd

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Back-off between restarts of containerd: the first at once (a killed containerd is back
// within a second, its shims and containers untouched), then doubling to 10 s while it keeps
// failing; a containerd that served for a minute starts the count again.
const (
	restartMaxBackoff = 10 * time.Second
	restartResetAfter = time.Minute
	// healthPeriod is how often the supervisor asks a containerd it did not start (one left
	// by a previous node agent) whether it still answers.
	healthPeriod = time.Second
)

// Supervisor keeps berth's containerd running: the node agent's runtime must come back by
// itself after a crash or a kill, as systemd brings back the containerd of a kubelet.
type Supervisor struct {
	cfg      Config
	endpoint string
	// adoptable: the endpoint is inside the state dir, so a containerd found there is
	// berth's own (a previous node agent's) and may be started again from berth's config.
	adoptable bool

	mu       sync.Mutex
	proc     *Process // the containerd this supervisor started; nil while it uses one it found
	restarts int

	cancel context.CancelFunc
	done   chan struct{}
}

// Supervise makes sure a containerd answers on c's endpoint (starting one, as Start does, when
// none answers) and keeps it so until ctx ends or Stop: a containerd it started that exits,
// or one it found that stops answering, is started again. It returns once a containerd
// answers.
func Supervise(ctx context.Context, c Config) (*Supervisor, error) {
	full, err := c.withDefaults()
	if err != nil {
		// Without a config of berth's (no CNI plugins here, say) only a runtime that already
		// answers can be used: it is watched, never started.
		if c.Endpoint == "" || !Available(ctx, c.Endpoint) {
			return nil, err
		}
		s := &Supervisor{cfg: c, endpoint: "unix://" + socketPath(c.Endpoint), done: make(chan struct{})}
		ctx, s.cancel = context.WithCancel(ctx)
		go s.run(ctx)
		return s, nil
	}
	c = full
	s := &Supervisor{
		cfg:       c,
		endpoint:  "unix://" + socketPath(c.Endpoint),
		adoptable: strings.HasPrefix(socketPath(c.Endpoint), c.StateDir+string(filepath.Separator)),
		done:      make(chan struct{}),
	}
	if !Available(ctx, s.endpoint) {
		if s.proc, err = Start(ctx, c); err != nil {
			return nil, err
		}
	}
	ctx, s.cancel = context.WithCancel(ctx)
	go s.run(ctx)
	return s, nil
}

// Endpoint is the CRI endpoint, a unix:// URL.
func (s *Supervisor) Endpoint() string { return s.endpoint }

// LogFile is the file containerd's output goes to.
func (s *Supervisor) LogFile() string { return filepath.Join(s.cfg.StateDir, logFile) }

// Restarts is how many times containerd has been started again.
func (s *Supervisor) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Pid is the process ID of the containerd this supervisor started last; 0 for a found one.
func (s *Supervisor) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return 0
	}
	return s.proc.Pid()
}

// Stop ends the supervision, then the containerd this supervisor started (a found one is left
// running, as before). Containers keep running in their shims.
func (s *Supervisor) Stop() error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return nil
	}
	return p.Stop()
}

// run is the supervising goroutine: Stop waits for it, and a fault in it is contained and
// the loop resumed, so that a bug here never leaves containerd unwatched.
func (s *Supervisor) run(ctx context.Context) {
	defer close(s.done)
	panics.Forever(ctx, "containerd-supervisor", s.loop)
}

func (s *Supervisor) loop(ctx context.Context) {
	logger := klog.FromContext(ctx)
	backoff := time.Duration(0)
	for {
		s.mu.Lock()
		p := s.proc
		s.mu.Unlock()
		started := time.Now()
		if !s.waitGone(ctx, p) {
			return
		}
		if p == nil && !s.adoptable {
			// Someone else's runtime: not ours to start. Watch for it to come back.
			logger.Error(nil, "The container runtime stopped answering; it is not berth's to restart", "endpoint", s.endpoint)
			for ctx.Err() == nil && !Available(ctx, s.endpoint) {
				sleep(ctx, healthPeriod)
			}
			continue
		}
		if p != nil {
			logger.Error(p.waitErr, "containerd exited; starting it again", "after", backoff, "log", s.LogFile())
		} else {
			logger.Error(nil, "containerd stopped answering; starting it again", "after", backoff, "endpoint", s.endpoint)
		}
		if time.Since(started) >= restartResetAfter {
			backoff = 0
		}
		for {
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(max(2*backoff, time.Second), restartMaxBackoff)
			if Available(ctx, s.endpoint) {
				break // someone started it meanwhile
			}
			np, err := Start(ctx, s.cfg)
			if err == nil {
				s.mu.Lock()
				s.proc = np
				s.restarts++
				s.mu.Unlock()
				logger.Info("containerd is running again", "pid", np.Pid(), "endpoint", s.endpoint)
				break
			}
			if ctx.Err() != nil {
				return
			}
			logger.Error(err, "Starting containerd again failed", "retryAfter", backoff)
		}
	}
}

// waitGone waits until containerd p has exited (or, for a found one, stops answering twice
// in a row), and reports false when ctx ended first.
func (s *Supervisor) waitGone(ctx context.Context, p *Process) bool {
	if p != nil {
		select {
		case <-ctx.Done():
			return false
		case <-p.Done():
			return ctx.Err() == nil
		}
	}
	misses := 0
	for misses < 2 {
		if !sleep(ctx, healthPeriod) {
			return false
		}
		if Available(ctx, s.endpoint) {
			misses = 0
		} else {
			misses++
		}
	}
	return ctx.Err() == nil
}

// sleep waits d, or less if ctx ends; it reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
