package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// SyncPod makes the runtime run pod as its spec says, in seed 003's seven steps:
//
//  1. compute the sandbox and container changes (computePodActions);
//  2. kill the pod (its containers and sandbox) if its sandbox must change;
//  3. kill the containers that must not run;
//  4. create the sandbox if needed, and read its IPs;
//  5. resize the pod and its running containers in place (resize.go);
//  6. start the ephemeral containers;
//  7. start the next init container(s);
//  8. start the app containers.
//
// backOff holds the crash-loop back-off of exited containers (10 s doubling to 5 min):
// a container in back-off is not restarted and its result is ErrCrashLoopBackOff.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus, pullSecrets []v1.Secret, backOff *flowcontrol.Backoff) (result container.PodSyncResult) {
	logger := klog.FromContext(ctx).WithValues("pod", klog.KObj(pod), "podUID", pod.UID)
	ctx = klog.NewContext(ctx, logger)
	if podStatus == nil {
		podStatus = &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}

	// Step 1: compute the sandbox and container changes.
	changes := computePodActions(pod, podStatus, m.cfg.Probes, m.actuatedLookup(pod.UID))
	logger.V(3).Info("computePodActions got for pod", "podActions", changes)
	if changes.CreateSandbox && changes.SandboxID != "" {
		m.recordPodEvent(ctx, pod, v1.EventTypeNormal, eventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
	}

	if changes.KillPod {
		// Step 2: kill the pod when its sandbox changes (or nothing is left to run).
		killResult := m.killPodWithSyncResult(ctx, pod, runningPodOf(m.cfg.RuntimeName, podStatus), nil)
		result.AddPodSyncResult(killResult)
		if err := killResult.Error(); err != nil {
			logger.Error(err, "killPodWithSyncResult failed")
			return result
		}
		if changes.CreateSandbox {
			m.purgeInitContainers(ctx, pod, podStatus)
		}
	} else {
		// Step 3: kill the running containers that must not run.
		for id, k := range changes.ContainersToKill {
			logger.V(3).Info("Killing unwanted container for pod", "containerName", k.name, "containerID", id)
			r := container.NewSyncResult(container.KillContainer, k.name)
			result.AddSyncResult(r)
			if err := m.killContainer(ctx, pod, id, k.name, k.message, k.reason, nil, nil); err != nil {
				r.Fail(container.ErrKillContainer, err.Error())
				logger.Error(err, "killContainer for pod failed", "containerName", k.name, "containerID", id)
				return result
			}
		}
	}
	// Completed init containers are kept, one per name, for their status.
	m.pruneInitContainersBeforeStart(ctx, pod, podStatus)

	// Step 4: create the sandbox, and learn its IPs.
	podIPs := podStatus.IPs
	sandboxID := changes.SandboxID
	var sandboxConfig *runtimeapi.PodSandboxConfig
	if changes.CreateSandbox {
		r := container.NewSyncResult(container.CreatePodSandbox, podDesc(pod))
		result.AddSyncResult(r)
		id, config, msg, err := m.createPodSandbox(ctx, pod, changes.Attempt)
		if err != nil {
			if pod.DeletionTimestamp != nil {
				logger.V(4).Info("Pod was deleted and sandbox failed to be created")
				return result
			}
			r.Fail(container.ErrCreatePodSandbox, msg)
			logger.Error(err, "CreatePodSandbox for pod failed")
			m.recordPodEvent(ctx, pod, v1.EventTypeWarning, eventFailedCreateSandbox, "Failed to create pod sandbox: %v", err)
			return result
		}
		sandboxID, sandboxConfig = id, config
		resp, err := m.runtime.PodSandboxStatus(ctx, id, false)
		if err != nil {
			m.recordPodEvent(ctx, pod, v1.EventTypeWarning, eventFailedSandboxStatus, "Unable to get pod sandbox status: %v", err)
			logger.Error(err, "Failed to get pod sandbox status; Skipping pod")
			result.Fail(err)
			return result
		}
		if resp.GetStatus() == nil {
			result.Fail(errors.New("pod sandbox status is nil"))
			return result
		}
		if !pod.Spec.HostNetwork {
			podIPs = podSandboxIPs(ctx, resp.Status)
		}
		logger.V(4).Info("Created PodSandbox for pod", "podSandboxID", id, "podIPs", podIPs)
	}

	// Step 5: resize the pod and its running containers to the pod's allocated resources.
	if len(changes.ContainersToUpdate) > 0 || changes.UpdatePodResources {
		result.AddSyncResult(m.doPodResizeAction(ctx, pod, changes))
	}

	if len(changes.EphemeralContainersToStart)+len(changes.InitContainersToStart)+len(changes.ContainersToStart) == 0 {
		return result
	}
	if pod.Spec.HostNetwork && len(podIPs) == 0 {
		// A host-network pod's IPs are the node's (the API status says so too).
		for _, ip := range m.cfg.NodeIPs {
			podIPs = append(podIPs, ip.String())
		}
	}
	if sandboxConfig == nil {
		// Containers are created with the config of the sandbox they join.
		cfg, err := m.generatePodSandboxConfig(ctx, pod, changes.Attempt)
		if err != nil {
			logger.Error(err, "GeneratePodSandboxConfig for pod failed")
			result.Fail(fmt.Errorf("GeneratePodSandboxConfig for pod %q failed: %w", podDesc(pod), err))
			return result
		}
		sandboxConfig = cfg
	}
	start := func(kind string, spec startSpec) error {
		c := spec.container
		r := container.NewSyncResult(container.StartContainer, c.Name)
		result.AddSyncResult(r)
		if inBackOff, msg, err := m.doBackOff(ctx, pod, c, podStatus, backOff); inBackOff {
			r.Fail(err, msg)
			logger.V(4).Info("Backing Off restarting container in pod", "containerType", kind, "container", c.Name)
			return err
		}
		logger.V(4).Info("Creating container in pod", "containerType", kind, "container", c.Name)
		if msg, err := m.startContainer(ctx, sandboxID, sandboxConfig, spec, pod, podStatus, pullSecrets, podIPs); err != nil {
			r.Fail(err, msg)
			if err == container.ErrImagePullBackOff {
				logger.V(3).Info("Container start failed in pod", "containerType", kind, "container", c.Name, "containerMessage", msg, "err", err)
			} else {
				logger.Error(err, "Container start failed in pod", "containerType", kind, "container", c.Name, "containerMessage", msg)
			}
			return err
		}
		return nil
	}

	// Step 6: start the ephemeral containers (before the init containers, so that one can
	// debug a pod whose initialization fails).
	for _, i := range changes.EphemeralContainersToStart {
		_ = start("ephemeral container", ephemeralStartSpec(&pod.Spec.EphemeralContainers[i]))
	}

	// Step 7: start the init containers: the next regular one, and the sidecars.
	for _, i := range changes.InitContainersToStart {
		c := &pod.Spec.InitContainers[i]
		if err := start("init container", containerStartSpec(c)); err != nil {
			if isSidecar(c) {
				continue
			}
			logger.V(4).Info("Failed to initialize the pod, as the init container failed to start, aborting", "initContainerName", c.Name)
			return result
		}
		logger.V(4).Info("Completed init container for pod", "containerName", c.Name)
	}

	// Step 8: start the app containers.
	for _, i := range changes.ContainersToStart {
		_ = start("container", containerStartSpec(&pod.Spec.Containers[i]))
	}
	return result
}

// doBackOff checks the crash-loop back-off of a container about to restart: it is keyed by
// pod and container and starts when the container's last instance finished. In back-off,
// it records the BackOff event and returns ErrCrashLoopBackOff with the kubelet's message.
func (m *Manager) doBackOff(ctx context.Context, pod *v1.Pod, c *v1.Container, podStatus *container.PodStatus, backOff *flowcontrol.Backoff) (bool, string, error) {
	if backOff == nil {
		return false, "", nil
	}
	var last *container.Status
	for _, cs := range podStatus.ContainerStatuses {
		if cs.Name == c.Name && cs.State == container.ContainerStateExited {
			last = cs
			break
		}
	}
	if last == nil {
		return false, "", nil
	}
	key := BackoffKey(pod, c)
	if backOff.IsInBackOffSince(key, last.FinishedAt) {
		m.recordContainerEvent(ctx, pod, c, "", v1.EventTypeWarning, eventBackOff, "Back-off restarting failed container %s in pod %s", c.Name, podDesc(pod))
		msg := fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", backOff.Get(key), c.Name, podDesc(pod))
		klog.FromContext(ctx).V(3).Info("Back-off restarting failed container", "err", msg)
		return true, msg, container.ErrCrashLoopBackOff
	}
	backOff.Next(key, last.FinishedAt)
	return false, "", nil
}

// BackoffKey is the crash-loop back-off key of a container of a pod; a new image or new
// resources start the back-off over.
func BackoffKey(pod *v1.Pod, c *v1.Container) string {
	h := fnv.New64a()
	h.Write([]byte(strings.Join([]string{pod.Name, pod.Namespace, string(pod.UID), c.Name, c.Image, c.Resources.String()}, "/")))
	return strconv.FormatUint(h.Sum64(), 16)
}

// runningPodOf is the runtime's view of the pod in status: what KillPod must stop.
func runningPodOf(runtimeName string, s *container.PodStatus) container.Pod {
	p := container.Pod{ID: s.ID, Name: s.Name, Namespace: s.Namespace}
	for _, cs := range s.ContainerStatuses {
		if cs.State != container.ContainerStateRunning {
			continue
		}
		p.Containers = append(p.Containers, &container.Container{ID: cs.ID, Name: cs.Name, Image: cs.Image, ImageID: cs.ImageID, Hash: cs.Hash, State: cs.State})
	}
	// Every sandbox is stopped, ready or not: stopping twice is harmless, and a sandbox
	// that is not ready may still hold a network namespace.
	for _, ss := range s.SandboxStatuses {
		state := container.ContainerStateExited
		if ss.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = container.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &container.Container{ID: container.ContainerID{Type: runtimeName, ID: ss.Id}, State: state})
	}
	return p
}

// pruneInitContainersBeforeStart removes exited init containers but the newest of each name
// (its status says the init container completed).
func (m *Manager) pruneInitContainersBeforeStart(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) {
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		kept := false
		for _, cs := range podStatus.ContainerStatuses {
			if cs.Name != name || (cs.State != container.ContainerStateExited && cs.State != container.ContainerStateUnknown) {
				continue
			}
			if !kept {
				kept = true
				continue
			}
			if err := m.removeContainer(ctx, cs.ID.ID); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to remove pod init container", "containerName", name)
			}
		}
	}
}

// purgeInitContainers removes every init container: a new sandbox starts initialization
// over. They were all stopped before.
func (m *Manager) purgeInitContainers(ctx context.Context, pod *v1.Pod, podStatus *container.PodStatus) {
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		for _, cs := range podStatus.ContainerStatuses {
			if cs.Name != name {
				continue
			}
			if err := m.removeContainer(ctx, cs.ID.ID); err != nil {
				klog.FromContext(ctx).Error(err, "Failed to remove pod init container", "containerName", name)
			}
		}
	}
}
