package prober

import (
	"context"
	"math/rand/v2"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// Component names the probe workers in berth_recovered_panics_total.
const Component = "prober"

// worker runs one probe of one container every periodSeconds, for as long as the pod lives,
// and keeps its verdict in the results Manager of its kind. It follows the container across
// restarts by its ID in the pod's status.
type worker struct {
	m         *Manager
	probeType probeType
	pod       *v1.Pod
	container v1.Container
	spec      *v1.Probe
	results   results.Manager
	initial   results.Result

	stop chan struct{}
	// manualTrigger probes at once (a container that just started).
	manualTrigger chan struct{}

	containerID container.ContainerID
	lastResult  results.Result
	resultRun   int
	// onHold: a liveness or startup probe failed, and the container is being restarted;
	// wait for a new container before probing again.
	onHold bool
}

func newWorker(m *Manager, t probeType, pod *v1.Pod, c v1.Container) *worker {
	w := &worker{
		m: m, probeType: t, pod: pod, container: c,
		stop: make(chan struct{}, 1), manualTrigger: make(chan struct{}, 1),
		lastResult: results.Unknown,
	}
	switch t {
	case readiness:
		w.spec, w.results, w.initial = c.ReadinessProbe, m.readiness, results.Failure
	case liveness:
		w.spec, w.results, w.initial = c.LivenessProbe, m.liveness, results.Success
	case startup:
		w.spec, w.results, w.initial = c.StartupProbe, m.startup, results.Unknown
	}
	return w
}

func (w *worker) period() time.Duration {
	if w.spec.PeriodSeconds <= 0 {
		return 10 * time.Second
	}
	return time.Duration(w.spec.PeriodSeconds) * time.Second
}

// run probes until the pod is gone or ctx ends, then forgets its verdict.
func (w *worker) run(ctx context.Context) {
	period := w.period()
	// A node agent that just started would probe every container at once; spread the
	// first probes over a period.
	if time.Since(w.m.start) < period {
		select {
		case <-time.After(time.Duration(rand.Float64() * float64(period))):
		case <-w.stop:
			w.finish()
			return
		case <-ctx.Done():
			w.finish()
			return
		}
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	defer w.finish()
	for w.probeOnce(ctx) {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-ticker.C:
		case <-w.manualTrigger:
		}
	}
}

func (w *worker) finish() {
	if !w.containerID.IsEmpty() {
		w.results.Remove(w.containerID)
	}
	w.m.removeWorker(w.pod.UID, w.container.Name, w.probeType)
}

// stopNow ends the worker; it never blocks.
func (w *worker) stopNow() {
	select {
	case w.stop <- struct{}{}:
	default:
	}
}

// probeOnce is doProbe with a panic contained: the probe errored, its result is thrown away
// (as the kubelet throws away a prober error's), the pod gets the Unhealthy event, and the
// worker probes again at its period.
func (w *worker) probeOnce(ctx context.Context) (keepGoing bool) {
	keepGoing = true
	err := panics.Call(ctx, Component, func() error { keepGoing = w.doProbe(ctx); return nil })
	if err != nil {
		w.m.prober.recorder.Eventf(containerRef(w.pod, w.container.Name), v1.EventTypeWarning, "Unhealthy", "%s probe errored: %v", w.probeType, err)
		return true
	}
	return keepGoing
}

// doProbe probes once if the container runs, and reports whether to keep going.
func (w *worker) doProbe(ctx context.Context) bool {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(w.pod), "containerName", w.container.Name, "probeType", w.probeType)
	status, ok := w.m.status.GetPodStatus(w.pod.UID)
	if !ok {
		logger.V(3).Info("No status for pod yet")
		return true
	}
	if status.Phase == v1.PodFailed || status.Phase == v1.PodSucceeded {
		logger.V(3).Info("Pod is terminated, exiting probe worker", "phase", status.Phase)
		return false
	}
	cs := findStatus(status, w.container.Name)
	if cs == nil || cs.ContainerID == "" {
		logger.V(3).Info("Probe target container not found")
		return true
	}
	if id := container.ParseContainerID(cs.ContainerID); id != w.containerID {
		if !w.containerID.IsEmpty() {
			w.results.Remove(w.containerID)
		}
		w.containerID = id
		w.results.Set(w.containerID, w.initial, w.pod)
		w.onHold, w.resultRun, w.lastResult = false, 0, results.Unknown
	}
	if w.onHold {
		return true
	}
	if cs.State.Running == nil {
		if !w.containerID.IsEmpty() {
			w.results.Set(w.containerID, results.Failure, w.pod)
		}
		// A container that ended and will not run again needs no more probing; a sidecar
		// always runs again, whatever the pod's restartPolicy, and a container's own
		// restartPolicy and rules decide before the pod's.
		return cs.State.Terminated == nil || podstatus.ContainerShouldRestart(&w.container, &w.pod.Spec, cs.State.Terminated.ExitCode)
	}
	// A pod being deleted is not ready; its liveness no longer matters.
	if w.pod.DeletionTimestamp != nil || w.m.deleting(w.pod.UID) {
		if w.probeType == readiness {
			w.results.Set(w.containerID, results.Failure, w.pod)
		} else {
			w.results.Set(w.containerID, results.Success, w.pod)
		}
		return true
	}
	if time.Since(cs.State.Running.StartedAt.Time) < time.Duration(w.spec.InitialDelaySeconds)*time.Second {
		return true
	}
	started := cs.Started != nil && *cs.Started
	if w.probeType == startup && started {
		return true // a startup probe's work ends with its first success
	}
	if w.probeType != startup && !started && w.container.StartupProbe != nil {
		return true // the startup probe holds the others back
	}

	result := w.m.prober.probe(ctx, w.probeType, w.pod, status, &w.container, w.containerID)
	if result == results.Unknown {
		return true // the probe errored: its result is thrown away
	}
	if w.lastResult == result {
		w.resultRun++
	} else {
		w.lastResult, w.resultRun = result, 1
	}
	failureThreshold, successThreshold := int(w.spec.FailureThreshold), int(w.spec.SuccessThreshold)
	if failureThreshold <= 0 {
		failureThreshold = 3
	}
	if successThreshold <= 0 {
		successThreshold = 1
	}
	if (result == results.Failure && w.resultRun < failureThreshold) || (result == results.Success && w.resultRun < successThreshold) {
		return true
	}
	w.results.Set(w.containerID, result, w.pod)
	if (w.probeType == liveness || w.probeType == startup) && result == results.Failure {
		// The container will be restarted: stop probing it until the new one shows up.
		w.onHold, w.resultRun = true, 0
	}
	return true
}

func findStatus(s v1.PodStatus, name string) *v1.ContainerStatus {
	for i := range s.ContainerStatuses {
		if s.ContainerStatuses[i].Name == name {
			return &s.ContainerStatuses[i]
		}
	}
	for i := range s.InitContainerStatuses {
		if s.InitContainerStatuses[i].Name == name {
			return &s.InitContainerStatuses[i]
		}
	}
	return nil
}
