package kuberuntime

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// minimumGracePeriod is the least time a container gets to stop before SIGKILL.
const minimumGracePeriod = 2

// KillPod stops the pod's running containers in parallel, each with its grace period (the
// preStop hook first, sidecars after the app containers, in reverse order), then stops its
// sandboxes. pod may be nil (a pod the API forgot across a node agent restart): the
// containers' annotations then say how to stop them.
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) error {
	result := m.killPodWithSyncResult(ctx, pod, runningPod, gracePeriodOverride)
	return result.Error()
}

func (m *Manager) killPodWithSyncResult(ctx context.Context, pod *v1.Pod, runningPod container.Pod, gracePeriodOverride *int64) (result container.PodSyncResult) {
	logger := klog.FromContext(ctx)
	var ordering *terminationOrdering
	if pod != nil && hasSidecars(pod) {
		running := make([]string, 0, len(runningPod.Containers))
		for _, c := range runningPod.Containers {
			running = append(running, c.Name)
		}
		ordering = newTerminationOrdering(pod, running)
	}
	results := make([]*container.SyncResult, len(runningPod.Containers))
	var wg sync.WaitGroup
	for i, c := range runningPod.Containers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := container.NewSyncResult(container.KillContainer, c.Name)
			if err := m.killContainer(ctx, pod, c.ID, c.Name, "", reasonUnknown, gracePeriodOverride, ordering); err != nil {
				r.Fail(container.ErrKillContainer, err.Error())
				logger.Error(err, "Kill container failed", "pod", klog.KRef(runningPod.Namespace, runningPod.Name), "podUID", runningPod.ID, "containerName", c.Name, "containerID", c.ID)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	result.AddSyncResult(results...)

	// The sandboxes stop; the garbage collector removes them later.
	sandboxResult := container.NewSyncResult(container.KillPodSandbox, runningPod.ID)
	result.AddSyncResult(sandboxResult)
	for _, s := range runningPod.Sandboxes {
		if err := m.runtime.StopPodSandbox(ctx, s.ID.ID); err != nil && !crierrors.IsNotFound(err) {
			sandboxResult.Fail(container.ErrKillPodSandbox, err.Error())
			logger.Error(err, "Failed to stop sandbox", "podSandboxID", s.ID)
		}
	}
	return result
}

// killContainer stops one container: it records the Killing event with message (default
// "Stopping container <name>"), runs the preStop hook within the grace period, waits for
// its turn (sidecars stop last) and stops the container with what remains of the grace
// period, at least minimumGracePeriod seconds.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, id container.ContainerID, name, message string, reason killReason, gracePeriodOverride *int64, ordering *terminationOrdering) error {
	logger := klog.FromContext(ctx)
	var spec *v1.Container
	if pod != nil {
		spec = containerSpec(pod, name)
	}
	if spec == nil {
		// No spec (the pod is gone, or no longer has this container): the container's
		// annotations hold what stopping it needs.
		restoredPod, restored, err := m.restoreSpecsFromContainer(ctx, id)
		if err != nil {
			return err
		}
		if pod == nil {
			pod = restoredPod
		}
		spec = restored
	}

	gracePeriod := terminationGracePeriod(pod, spec, reason)
	if message == "" {
		message = fmt.Sprintf("Stopping container %s", spec.Name)
	}
	m.recordContainerEvent(ctx, pod, spec, id.ID, v1.EventTypeNormal, eventKilling, "%v", message)
	if gracePeriodOverride != nil {
		gracePeriod = *gracePeriodOverride
		logger.V(3).Info("Killing container with a grace period override", "pod", klog.KObj(pod), "containerName", name, "containerID", id.String(), "gracePeriod", gracePeriod)
	}

	if spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && gracePeriod > 0 {
		gracePeriod -= m.executePreStopHook(ctx, pod, id, spec, gracePeriod)
	}
	if ordering != nil && gracePeriod > 0 {
		gracePeriod -= int64(ordering.waitForTurn(name, gracePeriod))
	}
	gracePeriod = max(gracePeriod, minimumGracePeriod)

	logger.V(2).Info("Killing container with a grace period", "pod", klog.KObj(pod), "containerName", name, "containerID", id.String(), "gracePeriod", gracePeriod)
	if err := m.runtime.StopContainer(ctx, id.ID, gracePeriod); err != nil && !crierrors.IsNotFound(err) {
		logger.Error(err, "Container termination failed with gracePeriod", "pod", klog.KObj(pod), "containerName", name, "containerID", id.String(), "gracePeriod", gracePeriod)
		return err
	}
	if ordering != nil {
		ordering.containerTerminated(name)
	}
	return nil
}

// terminationGracePeriod is how long the container gets: the pod's deletion grace period
// when it is being deleted, else a failed probe's own terminationGracePeriodSeconds, else
// the pod's terminationGracePeriodSeconds.
func terminationGracePeriod(pod *v1.Pod, c *v1.Container, reason killReason) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		if reason == reasonStartupProbe && c.StartupProbe != nil && c.StartupProbe.TerminationGracePeriodSeconds != nil {
			return *c.StartupProbe.TerminationGracePeriodSeconds
		}
		if reason == reasonLivenessProbe && c.LivenessProbe != nil && c.LivenessProbe.TerminationGracePeriodSeconds != nil {
			return *c.LivenessProbe.TerminationGracePeriodSeconds
		}
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return minimumGracePeriod
}

// executePreStopHook runs the preStop hook for at most gracePeriod seconds and returns how
// many seconds it took. A failed hook is an event, not an error: the container stops anyway.
func (m *Manager) executePreStopHook(ctx context.Context, pod *v1.Pod, id container.ContainerID, c *v1.Container, gracePeriod int64) int64 {
	logger := klog.FromContext(ctx)
	start := m.clock.Now()
	hookCtx, cancel := context.WithTimeout(ctx, time.Duration(gracePeriod)*time.Second)
	defer cancel()
	ips := podIPsOf(pod)
	if len(ips) == 0 && c.Lifecycle.PreStop.HTTPGet != nil {
		ips = m.runtimePodIPs(hookCtx, string(pod.UID))
	}
	if _, err := m.runHandler(hookCtx, id, pod, c, c.Lifecycle.PreStop, ips); err != nil {
		logger.Error(err, "PreStop hook failed", "pod", klog.KObj(pod), "containerName", c.Name, "containerID", id.String())
		m.recordContainerEvent(ctx, pod, c, id.ID, v1.EventTypeWarning, eventFailedPreStopHook, "PreStopHook failed")
	}
	return int64(m.clock.Since(start).Seconds())
}

// podIPsOf are the pod's IPs as its API status says (a preStop HTTP hook's target).
func podIPsOf(pod *v1.Pod) []string {
	var ips []string
	for _, ip := range pod.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	if len(ips) == 0 && pod.Status.PodIP != "" {
		ips = []string{pod.Status.PodIP}
	}
	return ips
}

// restoreSpecsFromContainer rebuilds, from the container's labels and annotations, the
// part of the pod and container that stopping it needs: names, grace periods, the preStop
// hook and the ports.
func (m *Manager) restoreSpecsFromContainer(ctx context.Context, id container.ContainerID) (*v1.Pod, *v1.Container, error) {
	resp, err := m.runtime.ContainerStatus(ctx, id.ID, false)
	if err != nil {
		return nil, nil, err
	}
	s := resp.GetStatus()
	if s == nil {
		return nil, nil, fmt.Errorf("container %s has no status", id)
	}
	l := containerInfoFromLabels(s.Labels)
	a := containerInfoFromAnnotations(s.Annotations)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: l.PodUID, Name: l.PodName, Namespace: l.PodNamespace, DeletionGracePeriodSeconds: a.PodDeletionGracePeriod},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: a.PodTerminationGracePeriod},
	}
	c := &v1.Container{Name: l.ContainerName, Ports: a.Ports, TerminationMessagePath: a.TerminationMessagePath}
	if a.PreStop != nil {
		c.Lifecycle = &v1.Lifecycle{PreStop: a.PreStop}
	}
	return pod, c, nil
}

func hasSidecars(pod *v1.Pod) bool {
	for i := range pod.Spec.InitContainers {
		if isSidecar(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// terminationOrdering makes sidecars stop after the app containers, and each sidecar after
// the sidecars declared after it. Each running container has a channel closed when it has
// stopped; a sidecar waits on the channels of what must stop before it.
type terminationOrdering struct {
	mu         sync.Mutex
	terminated map[string]chan struct{}
	prereqs    map[string][]chan struct{}
}

func newTerminationOrdering(pod *v1.Pod, running []string) *terminationOrdering {
	o := &terminationOrdering{terminated: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, name := range running {
		isRunning[name] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch) // nothing to wait for
		}
		o.terminated[name] = ch
		return ch
	}
	var apps []chan struct{}
	for i := range pod.Spec.Containers {
		apps = append(apps, channel(pod.Spec.Containers[i].Name))
	}
	var later chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		ic := &pod.Spec.InitContainers[i]
		ch := channel(ic.Name)
		if !isSidecar(ic) {
			continue
		}
		o.prereqs[ic.Name] = append(o.prereqs[ic.Name], apps...)
		if later != nil {
			o.prereqs[ic.Name] = append(o.prereqs[ic.Name], later)
		}
		later = ch
	}
	return o
}

// waitForTurn waits, at most gracePeriod seconds, until what must stop before name has
// stopped; it returns the seconds it waited.
func (o *terminationOrdering) waitForTurn(name string, gracePeriod int64) float64 {
	if gracePeriod <= 0 {
		return 0
	}
	start := time.Now()
	timer := time.NewTimer(time.Duration(gracePeriod) * time.Second)
	defer timer.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-timer.C:
			return time.Since(start).Seconds()
		}
	}
	return time.Since(start).Seconds()
}

func (o *terminationOrdering) containerTerminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.terminated[name]; ok {
		close(ch)
		delete(o.terminated, name)
	}
}
