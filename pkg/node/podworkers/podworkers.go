package podworkers

import (
	"context"
	"errors"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/pleg"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// FailedSync is the event reason of a pod whose status could not be determined, or whose
// sync failed with an internal error.
const FailedSync = "FailedSync"

// Component names the pod workers in berth_recovered_panics_total.
const Component = "podworker"

// podWorkers is the driver: it holds the machine under one lock, runs one goroutine per pod
// and carries out the machine's actions.
type podWorkers struct {
	syncer    PodSyncer
	recorder  record.EventRecorder
	workQueue WorkQueue
	podCache  pleg.Cache
	// jitter spreads requeue delays (wait.Jitter; tests may fix it).
	jitter func(d time.Duration, factor float64) time.Duration

	// rootCtx bounds every worker; Run cancels it.
	rootCtx    context.Context
	rootCancel context.CancelFunc
	wg         sync.WaitGroup

	mu      sync.Mutex // guards m, workers, logger
	m       *machine
	workers map[types.UID]*worker
	logger  klog.Logger
}

// worker is one pod's goroutine.
type worker struct {
	uid  types.UID
	wake chan struct{} // buffered 1: "there may be work"
	// ctx is the context of the pod's syncs, reused until cancelled (a kill cancels it).
	ctx    context.Context
	cancel context.CancelFunc
}

var _ PodWorkers = &podWorkers{}

// New returns the pod workers. resyncInterval is how long after a successful sync the pod is
// due again in workQueue (1 min), backOffPeriod the same after a failed one (10 s).
func New(syncer PodSyncer, recorder record.EventRecorder, workQueue WorkQueue, resyncInterval, backOffPeriod time.Duration, podCache pleg.Cache) PodWorkers {
	return newPodWorkers(syncer, recorder, workQueue, resyncInterval, backOffPeriod, podCache, clock.RealClock{})
}

func newPodWorkers(syncer PodSyncer, recorder record.EventRecorder, workQueue WorkQueue, resyncInterval, backOffPeriod time.Duration, podCache pleg.Cache, clk clock.PassiveClock) *podWorkers {
	ctx, cancel := context.WithCancel(context.Background())
	return &podWorkers{
		syncer:     syncer,
		recorder:   recorder,
		workQueue:  workQueue,
		podCache:   podCache,
		jitter:     wait.Jitter,
		rootCtx:    ctx,
		rootCancel: cancel,
		m:          newMachine(clk, resyncInterval, backOffPeriod),
		workers:    map[types.UID]*worker{},
		logger:     klog.Background(),
	}
}

// Run blocks until ctx ends, then stops every worker and waits for them.
func (p *podWorkers) Run(ctx context.Context) {
	p.mu.Lock()
	p.logger = klog.FromContext(ctx)
	p.mu.Unlock()
	<-ctx.Done()
	p.mu.Lock()
	p.rootCancel() // under mu: no worker starts after this
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *podWorkers) UpdatePod(options UpdatePodOptions) {
	runtimeTerminal := false
	if pod := options.Pod; pod != nil && isTerminalPhase(pod) {
		if status, err := p.podCache.Get(pod.UID); err == nil {
			runtimeTerminal = isPodStatusTerminal(status)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rootCtx.Err() != nil {
		return
	}
	p.act(p.m.update(p.logger, options, runtimeTerminal))
}

// isPodStatusTerminal reports a runtime status with nothing running.
func isPodStatusTerminal(status *container.PodStatus) bool {
	for _, c := range status.ContainerStatuses {
		if c.State == container.ContainerStateRunning {
			return false
		}
	}
	for _, sb := range status.SandboxStatuses {
		if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			return false
		}
	}
	return true
}

func (p *podWorkers) SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync {
	p.mu.Lock()
	defer p.mu.Unlock()
	known, acts := p.m.syncKnownPods(p.logger, desiredPods)
	p.act(acts)
	return known
}

// act carries out the machine's actions. Caller holds mu.
func (p *podWorkers) act(acts []action) {
	for _, a := range acts {
		switch a.kind {
		case actStartWorker:
			if p.rootCtx.Err() != nil {
				continue
			}
			w := &worker{uid: a.uid, wake: make(chan struct{}, 1)}
			p.workers[a.uid] = w // replaces a worker of a forgotten pod, which then exits
			p.wg.Add(1)
			go p.workerLoop(w)
		case actWake:
			if w := p.workers[a.uid]; w != nil {
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
		case actCancel:
			if w := p.workers[a.uid]; w != nil && w.cancel != nil {
				w.cancel()
			}
		case actStopWorker:
			if w := p.workers[a.uid]; w != nil {
				delete(p.workers, a.uid)
				if w.cancel != nil {
					w.cancel()
				}
				select {
				case w.wake <- struct{}{}:
				default:
				}
			}
		case actClose:
			close(a.ch)
		case actEnqueue:
			delay := a.delay
			if a.jitter > 0 && delay > 0 {
				delay = p.jitter(delay, a.jitter)
			}
			p.workQueue.Enqueue(a.uid, delay)
		}
	}
}

// workerLoop is one pod's goroutine: it carries out the pod's work until the machine says the
// pod is done, the pod is forgotten, or the workers stop.
func (p *podWorkers) workerLoop(w *worker) {
	defer p.wg.Done()
	defer func() {
		if w.cancel != nil {
			w.cancel()
		}
	}()
	for {
		select {
		case <-p.rootCtx.Done():
			return
		case <-w.wake:
		}
		for p.rootCtx.Err() == nil {
			p.mu.Lock()
			if p.workers[w.uid] != w {
				p.mu.Unlock()
				return
			}
			work, step, acts := p.m.startWork(w.uid)
			p.act(acts)
			if step == stepExit {
				delete(p.workers, w.uid)
				logger := p.logger
				p.mu.Unlock()
				logger.V(3).Info("Pod worker has stopped", "podUID", w.uid)
				return
			}
			if step == stepIdle {
				p.mu.Unlock()
				break
			}
			if w.ctx == nil || w.ctx.Err() != nil {
				if w.cancel != nil {
					w.cancel()
				}
				w.ctx, w.cancel = context.WithCancel(klog.NewContext(p.rootCtx, p.logger))
			}
			ctx, logger := w.ctx, p.logger.WithValues("podUID", w.uid)
			p.mu.Unlock()

			logger.V(4).Info("Processing pod event", "workType", work.State, "updateType", work.Options.UpdateType)
			res := p.doWork(ctx, w.uid, work)

			p.mu.Lock()
			p.act(p.m.finishWork(logger, w.uid, work, res))
			p.mu.Unlock()
			if ps, ok := p.syncer.(PostSyncer); ok && res.ran && work.State == SyncPod && work.Options.Pod != nil {
				_ = panics.Call(ctx, Component, func() error { ps.PodSyncRecorded(ctx, work.Options.Pod); return nil })
			}
			logger.V(4).Info("Processing pod event done", "workType", work.State)
		}
	}
}

// doWork reads a fresh status and calls the syncer.
func (p *podWorkers) doWork(ctx context.Context, uid types.UID, work podWork) workResult {
	opts := work.Options
	var status *container.PodStatus
	if opts.RunningPod == nil {
		var err error
		status, err = p.statusNewerThan(ctx, uid, work.NewerThan)
		if err != nil {
			if ctx.Err() == nil && p.recorder != nil {
				p.recorder.Eventf(opts.Pod, v1.EventTypeWarning, FailedSync, "error determining status: %v", err)
			}
			return workResult{err: err}
		}
	}
	var res workResult
	res.ran = true
	// One pod's sync never takes the node agent down: a panic is this pod's failed sync.
	res.err = panics.Call(ctx, Component, func() (err error) {
		switch work.State {
		case TerminatedPod:
			return p.syncer.SyncTerminatedPod(ctx, opts.Pod, status)
		case TerminatingPod:
			if opts.RunningPod != nil {
				return p.syncer.SyncTerminatingRuntimePod(ctx, opts.RunningPod)
			}
			return p.syncer.SyncTerminatingPod(ctx, opts.Pod, status, work.GracePeriod, work.StatusFn)
		default:
			res.isTerminal, err = p.syncer.SyncPod(ctx, opts.UpdateType, opts.Pod, opts.MirrorPod, status)
			return err
		}
	})
	if pe := (*panics.Error)(nil); errors.As(res.err, &pe) {
		p.reportPanic(ctx, opts, status, pe)
	}
	return res
}

// reportPanic tells the user of a sync that panicked: a Warning event on the pod, and the
// syncer's status reason. A panic while reporting is contained too.
func (p *podWorkers) reportPanic(ctx context.Context, opts UpdatePodOptions, status *container.PodStatus, err error) {
	pod := opts.Pod
	if pod == nil {
		return // an orphaned runtime pod: the log has it
	}
	if p.recorder != nil {
		p.recorder.Eventf(pod, v1.EventTypeWarning, FailedSync, "error syncing pod: %v", err)
	}
	if r, ok := p.syncer.(PanicReporter); ok {
		_ = panics.Call(ctx, Component, func() error { r.PodSyncPanicked(ctx, pod, status, err); return nil })
	}
}

// statusNewerThan waits for a cache status of the pod read after t, or for ctx to end.
func (p *podWorkers) statusNewerThan(ctx context.Context, uid types.UID, t time.Time) (*container.PodStatus, error) {
	if c, ok := p.podCache.(pleg.ContextCache); ok {
		return c.GetNewerThanContext(ctx, uid, t)
	}
	// A cache without cancellation: the reading goroutine lives until the cache answers.
	type answer struct {
		status *container.PodStatus
		err    error
	}
	ch := make(chan answer, 1)
	go func() {
		status, err := p.podCache.GetNewerThan(uid, t)
		ch <- answer{status, err}
	}()
	select {
	case a := <-ch:
		return a.status, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *podWorkers) query(f func(*machine) bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return f(p.m)
}

func (p *podWorkers) IsPodKnownTerminated(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.isPodKnownTerminated(uid) })
}

func (p *podWorkers) CouldHaveRunningContainers(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.couldHaveRunningContainers(uid) })
}

func (p *podWorkers) ShouldPodBeFinished(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.shouldPodBeFinished(uid) })
}

func (p *podWorkers) IsPodTerminationRequested(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.isPodTerminationRequested(uid) })
}

func (p *podWorkers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.shouldPodContainersBeTerminating(uid) })
}

func (p *podWorkers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.shouldPodRuntimeBeRemoved(uid) })
}

func (p *podWorkers) ShouldPodContentBeRemoved(uid types.UID) bool {
	return p.query(func(m *machine) bool { return m.shouldPodContentBeRemoved(uid) })
}

func (p *podWorkers) IsPodForMirrorPodTerminatingByFullName(podFullName string) bool {
	return p.query(func(m *machine) bool { return m.isPodForMirrorPodTerminatingByFullName(podFullName) })
}
