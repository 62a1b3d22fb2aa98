package kuberuntime

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// In-place resize (KEP 1287), SyncPod's step 5: the pod SyncPod gets carries the resources
// the node allocated it; a running container whose actuated resources (what the runtime was
// last told to apply) differ has them updated through the CRI's UpdateContainerResources, or is
// restarted when its resize policy says RestartContainer, and the pod's cgroup follows.

// ActuatedResources records what the runtime was told to apply to each container: at its
// creation, and at each in-place update. A nil one turns resizing off.
type ActuatedResources interface {
	Container(uid types.UID, name string) (v1.ResourceRequirements, bool)
	SetContainer(uid types.UID, name string, r v1.ResourceRequirements) error
}

// ActuatedLookup is the actuated resources of a pod's containers, by name.
type ActuatedLookup func(name string) (v1.ResourceRequirements, bool)

// resourceValues are the four values a resize changes, in millicores and bytes; 0 is unset.
type resourceValues struct {
	memoryLimit, memoryRequest, cpuLimit, cpuRequest int64
}

func valuesOf(r *v1.ResourceRequirements) resourceValues {
	return resourceValues{
		memoryLimit:   r.Limits.Memory().Value(),
		memoryRequest: r.Requests.Memory().Value(),
		cpuLimit:      r.Limits.Cpu().MilliValue(),
		cpuRequest:    r.Requests.Cpu().MilliValue(),
	}
}

// containerToUpdate is a running container whose resources change in place.
type containerToUpdate struct {
	spec    *v1.Container
	id      container.ContainerID
	desired resourceValues
}

func (c containerToUpdate) String() string { return c.spec.Name }

// planResize compares a running container's resources with its actuated ones. A change that
// its resize policy lets happen in place is queued in changes.ContainersToUpdate, per
// resource, decreases before increases (so that the pod's sum never overshoots); one whose
// policy is RestartContainer makes it return true: the caller restarts the container.
func planResize(c *v1.Container, cs *container.Status, actuated ActuatedLookup, changes *podActions) (restart bool) {
	if actuated == nil || cs.State != container.ContainerStateRunning {
		return false
	}
	// A container with no record (created before records were kept) counts as unset: the
	// update is idempotent.
	current, _ := actuated(c.Name)
	have, want := valuesOf(&current), valuesOf(&c.Resources)
	if have == want {
		return false
	}
	policy := func(name v1.ResourceName) v1.ResourceResizeRestartPolicy {
		for _, p := range c.ResizePolicy {
			if p.ResourceName == name {
				return p.RestartPolicy
			}
		}
		return v1.NotRequired // the API's default
	}
	memChanged := have.memoryLimit != want.memoryLimit || have.memoryRequest != want.memoryRequest
	cpuChanged := have.cpuLimit != want.cpuLimit || have.cpuRequest != want.cpuRequest
	if (memChanged && policy(v1.ResourceMemory) == v1.RestartContainer) || (cpuChanged && policy(v1.ResourceCPU) == v1.RestartContainer) {
		changes.UpdatePodResources = true
		return true
	}
	queue := func(name v1.ResourceName, desired, current int64) {
		u := containerToUpdate{spec: c, id: cs.ID, desired: want}
		if changes.ContainersToUpdate == nil {
			changes.ContainersToUpdate = map[v1.ResourceName][]containerToUpdate{}
		}
		list := changes.ContainersToUpdate[name]
		if desired < current {
			list = append([]containerToUpdate{u}, list...)
		} else {
			list = append(list, u)
		}
		changes.ContainersToUpdate[name] = list
	}
	switch {
	case have.memoryLimit != want.memoryLimit:
		queue(v1.ResourceMemory, want.memoryLimit, have.memoryLimit)
	case have.memoryRequest != want.memoryRequest:
		queue(v1.ResourceMemory, want.memoryRequest, have.memoryRequest)
	}
	switch {
	case have.cpuLimit != want.cpuLimit:
		queue(v1.ResourceCPU, want.cpuLimit, have.cpuLimit)
	case have.cpuRequest != want.cpuRequest:
		queue(v1.ResourceCPU, want.cpuRequest, have.cpuRequest)
	}
	return false
}

// startsResized reports a container about to start with other resources than it last ran
// with: the pod's cgroup must be resized before it starts.
func startsResized(containers []v1.Container, toStart []int, actuated ActuatedLookup) bool {
	if actuated == nil {
		return false
	}
	for _, i := range toStart {
		c := &containers[i]
		current, ok := actuated(c.Name)
		if ok && valuesOf(&current) != valuesOf(&c.Resources) {
			return true
		}
	}
	return false
}

// actuatedLookup is the Manager's record for one pod, nil without a record keeper.
func (m *Manager) actuatedLookup(uid types.UID) ActuatedLookup {
	if m.cfg.Actuated == nil {
		return nil
	}
	return func(name string) (v1.ResourceRequirements, bool) { return m.cfg.Actuated.Container(uid, name) }
}

// recordActuated records the resources a container was created or updated with.
func (m *Manager) recordActuated(ctx context.Context, pod *v1.Pod, name string, r v1.ResourceRequirements) {
	if m.cfg.Actuated == nil {
		return
	}
	if err := m.cfg.Actuated.SetContainer(pod.UID, name, r); err != nil {
		klog.FromContext(ctx).Error(err, "Failed to record the actuated resources of a container", "pod", klog.KObj(pod), "container", name)
	}
}

// doPodResizeAction actuates the pod's allocated resources: memory first, then cpu, each
// with the pod cgroup raised before the containers grow and lowered after they shrink; a
// memory limit is not set below what the pod or the container uses. The first failure ends
// the step (the next sync retries): its message is the resize's error.
func (m *Manager) doPodResizeAction(ctx context.Context, pod *v1.Pod, changes podActions) *container.SyncResult {
	logger := klog.FromContext(ctx)
	result := container.NewSyncResult(container.ResizePodInPlace, podDesc(pod))
	fail := func(msg string) *container.SyncResult {
		logger.Error(nil, "Pod resize failed", "pod", klog.KObj(pod), "err", msg)
		result.Fail(container.ErrResizePodInPlace, msg)
		return result
	}
	podPath := m.podCgroupParent(pod)
	desiredPod := m.podCgroupResources(pod)
	var currentPod cgroupResources
	if podPath != "" {
		var err error
		if currentPod, err = m.cgroups.get(podPath); err != nil {
			logger.Error(err, "Unable to get pod cgroup config", "pod", klog.KObj(pod))
			return fail(fmt.Sprintf("unable to get pod cgroup config for pod %q", podDesc(pod)))
		}
	}
	if err := m.validateMemoryResize(pod, podPath, desiredPod, currentPod, changes); err != nil {
		return fail(err.Error())
	}

	setPod := func(r cgroupResources) error {
		if podPath == "" {
			return nil
		}
		if err := m.cgroups.set(podPath, r); err != nil {
			return fmt.Errorf("failed to set the pod cgroup: %w", err)
		}
		return nil
	}
	// step resizes one resource: the pod's limit (or shares) up first, the containers, the
	// pod's down after.
	step := func(name v1.ResourceName, curLimit, newLimit, curShares, newShares int64, limit, shares cgroupResources) error {
		if newLimit > curLimit {
			if err := setPod(limit); err != nil {
				return err
			}
		}
		if newShares > curShares {
			if err := setPod(shares); err != nil {
				return err
			}
		}
		for _, u := range changes.ContainersToUpdate[name] {
			if err := m.updateContainerResources(ctx, pod, u, name); err != nil {
				return err
			}
		}
		if newShares < curShares {
			if err := setPod(shares); err != nil {
				return err
			}
		}
		if newLimit < curLimit {
			if err := setPod(limit); err != nil {
				return err
			}
		}
		return nil
	}

	if len(changes.ContainersToUpdate[v1.ResourceMemory]) > 0 || changes.UpdatePodResources {
		// A pod without a memory limit keeps the one it has (none).
		newLimit := desiredPod.memoryLimit
		if newLimit == 0 {
			newLimit = currentPod.memoryLimit
		}
		if err := step(v1.ResourceMemory, currentPod.memoryLimit, newLimit, 0, 0,
			cgroupResources{memoryLimit: desiredPod.memoryLimit}, cgroupResources{}); err != nil {
			return fail(err.Error())
		}
	}
	if len(changes.ContainersToUpdate[v1.ResourceCPU]) > 0 || changes.UpdatePodResources {
		newQuota := desiredPod.cpuQuota
		if newQuota == 0 {
			newQuota = currentPod.cpuQuota
		}
		if err := step(v1.ResourceCPU, currentPod.cpuQuota, newQuota, currentPod.cpuShares, desiredPod.cpuShares,
			cgroupResources{cpuQuota: desiredPod.cpuQuota, cpuPeriod: desiredPod.cpuPeriod}, cgroupResources{cpuShares: desiredPod.cpuShares}); err != nil {
			return fail(err.Error())
		}
	}
	return result
}

// updateContainerResources tells the runtime one resource's new values for a container (the
// others as last actuated), then records them.
func (m *Manager) updateContainerResources(ctx context.Context, pod *v1.Pod, u containerToUpdate, name v1.ResourceName) error {
	actuated, _ := m.cfg.Actuated.Container(pod.UID, u.spec.Name)
	next := withResource(actuated, u.spec.Resources, name)
	c := u.spec.DeepCopy()
	c.Resources = next
	resources := m.containerResources(pod, c)
	// The runtime keeps the score it started the container with.
	resources.OomScoreAdj = 0
	if err := m.runtime.UpdateContainerResources(ctx, u.id.ID, &runtimeapi.ContainerResources{Linux: resources}); err != nil {
		klog.FromContext(ctx).Error(err, "updateContainerResources failed", "container", c.Name, "cID", u.id, "pod", klog.KObj(pod), "resourceName", name)
		return fmt.Errorf("container %q: %w", c.Name, err)
	}
	m.recordActuated(ctx, pod, c.Name, next)
	return nil
}

// withResource is r with name's request and limit as in from (absent when from has none).
func withResource(r, from v1.ResourceRequirements, name v1.ResourceName) v1.ResourceRequirements {
	out := *r.DeepCopy()
	set := func(dst *v1.ResourceList, src v1.ResourceList) {
		q, ok := src[name]
		switch {
		case ok:
			if *dst == nil {
				*dst = v1.ResourceList{}
			}
			(*dst)[name] = q.DeepCopy()
		case *dst != nil:
			delete(*dst, name)
			if len(*dst) == 0 {
				*dst = nil
			}
		}
	}
	set(&out.Requests, from.Requests)
	set(&out.Limits, from.Limits)
	return out
}

// validateMemoryResize refuses to set a memory limit, the pod's or a container's, at or
// below what it uses now: the kernel would reclaim or kill to get there.
func (m *Manager) validateMemoryResize(pod *v1.Pod, podPath string, desiredPod, currentPod cgroupResources, changes podActions) error {
	if podPath == "" || (len(changes.ContainersToUpdate[v1.ResourceMemory]) == 0 && !changes.UpdatePodResources) {
		return nil
	}
	var errs []error
	if desiredPod.memoryLimit > 0 && desiredPod.memoryLimit < currentPod.memoryLimit {
		usage, err := m.cgroups.memoryUsage(podPath)
		switch {
		case err != nil:
			return fmt.Errorf("unable to read memory usage for pod %q", podDesc(pod))
		case usage >= desiredPod.memoryLimit:
			errs = append(errs, fmt.Errorf("attempting to set pod memory limit (%d) below current usage (%d)", desiredPod.memoryLimit, usage))
		}
	}
	for _, u := range changes.ContainersToUpdate[v1.ResourceMemory] {
		current, _ := m.cfg.Actuated.Container(pod.UID, u.spec.Name)
		have := current.Limits.Memory().Value()
		if u.desired.memoryLimit == 0 || (have != 0 && u.desired.memoryLimit >= have) {
			continue
		}
		usage, err := m.cgroups.memoryUsage(podPath + "/" + u.id.ID)
		switch {
		case err != nil:
			return fmt.Errorf("unable to read memory usage for pod %q", podDesc(pod))
		case usage >= u.desired.memoryLimit:
			errs = append(errs, fmt.Errorf("attempting to set container %q memory limit (%d) below current usage (%d)", u.spec.Name, u.desired.memoryLimit, usage))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("cannot decrease memory limits: %w", utilerrors.NewAggregate(errs))
	}
	return nil
}
