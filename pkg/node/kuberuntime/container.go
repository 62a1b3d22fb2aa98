package kuberuntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// startSpec is a container to start: an app or init container, or an ephemeral one (which
// may target another container's PID namespace).
type startSpec struct {
	container *v1.Container
	ephemeral *v1.EphemeralContainer
}

func containerStartSpec(c *v1.Container) startSpec { return startSpec{container: c} }

func ephemeralStartSpec(ec *v1.EphemeralContainer) startSpec {
	return startSpec{container: (*v1.Container)(&ec.EphemeralContainerCommon), ephemeral: ec}
}

// startContainer is seed 001's startContainer: 1 pull the image, 2 create the container,
// 3 start it, 4 run its postStart hook (and kill it if the hook fails). It returns the
// reason (one of container's Err values) and a message when a step fails.
func (m *Manager) startContainer(ctx context.Context, sandboxID string, sandboxConfig *runtimeapi.PodSandboxConfig, spec startSpec, pod *v1.Pod, podStatus *container.PodStatus, pullSecrets []v1.Secret, podIPs []string) (string, error) {
	logger := klog.FromContext(ctx)
	c := spec.container

	// Step 1: pull the image.
	ref, err := containerRef(pod, c)
	if err != nil {
		logger.Error(err, "Cannot make a container reference", "pod", klog.KObj(pod), "container", c.Name)
	}
	// The sandbox already ran with this handler, so the lookup succeeded once.
	handler, _ := m.runtimeHandler(pod)
	imageRef, msg, err := m.puller.EnsureImageExists(ctx, ref, pod, c.Image, c.ImagePullPolicy, pullSecrets, sandboxConfig, handler)
	if err != nil {
		m.recordContainerEvent(ctx, pod, c, "", v1.EventTypeWarning, eventFailed, "Error: %v", grpcMessage(err))
		return msg, err
	}

	// Step 2: create the container. Its restart count continues the previous container's,
	// or the log files' when the runtime lost its containers (a reboot).
	restartCount := 0
	if cs := podStatus.FindContainerStatusByName(c.Name); cs != nil {
		restartCount = cs.RestartCount + 1
	} else {
		logDir := filepath.Join(m.podLogsDir(pod.Namespace, pod.Name, string(pod.UID)), c.Name)
		restartCount = restartCountFromLogDir(logDir)
	}
	var target *container.ContainerID
	if spec.ephemeral != nil && spec.ephemeral.TargetContainerName != "" {
		ts := podStatus.FindContainerStatusByName(spec.ephemeral.TargetContainerName)
		if ts == nil {
			msg := fmt.Sprintf("unable to find target container %v", spec.ephemeral.TargetContainerName)
			m.recordContainerEvent(ctx, pod, c, "", v1.EventTypeWarning, eventFailed, "Error: %v", msg)
			return msg, container.ErrCreateContainerConfig
		}
		target = &ts.ID
	}
	config, err := m.generateContainerConfig(ctx, c, pod, restartCount, podIPs, imageRef, target)
	if err != nil {
		m.recordContainerEvent(ctx, pod, c, "", v1.EventTypeWarning, eventFailed, "Error: %v", grpcMessage(err))
		return grpcMessage(err), container.ErrCreateContainerConfig
	}
	id, err := m.runtime.CreateContainer(ctx, sandboxID, config, sandboxConfig)
	if err != nil {
		m.recordContainerEvent(ctx, pod, c, id, v1.EventTypeWarning, eventFailed, "Error: %v", grpcMessage(err))
		return grpcMessage(err), container.ErrCreateContainer
	}
	m.recordContainerEvent(ctx, pod, c, id, v1.EventTypeNormal, eventCreated, "Container created")
	if spec.ephemeral == nil {
		m.recordActuated(ctx, pod, c.Name, c.Resources)
	}

	// Step 3: start the container.
	if err := m.runtime.StartContainer(ctx, id); err != nil {
		m.recordContainerEvent(ctx, pod, c, id, v1.EventTypeWarning, eventFailed, "Error: %v", grpcMessage(err))
		return grpcMessage(err), container.ErrRunContainer
	}
	m.recordContainerEvent(ctx, pod, c, id, v1.EventTypeNormal, eventStarted, "Container started")

	// Step 4: run the postStart hook.
	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		cid := container.ContainerID{Type: m.cfg.RuntimeName, ID: id}
		hookCtx, cancel := context.WithTimeout(ctx, m.cfg.HookTimeout)
		msg, err := m.runHandler(hookCtx, cid, pod, c, c.Lifecycle.PostStart, podIPs)
		cancel()
		if err != nil {
			logger.Error(err, "Failed to execute PostStartHook", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name, "containerID", cid.String())
			// The hook's output may hold secrets: the event does not carry it.
			m.recordContainerEvent(ctx, pod, c, id, v1.EventTypeWarning, eventFailedPostStartHook, "PostStartHook failed")
			if err := m.killContainer(ctx, pod, cid, c.Name, "FailedPostStartHook", reasonFailedPostStartHook, nil, nil); err != nil {
				logger.Error(err, "Failed to kill container", "pod", klog.KObj(pod), "podUID", pod.UID, "containerName", c.Name, "containerID", cid.String())
			}
			return msg, container.ErrPostStartHook
		}
	}
	return "", nil
}

// grpcMessage is an error's message without the gRPC "rpc error: code = ... desc =" wrapper.
func grpcMessage(err error) string {
	if s, ok := status.FromError(err); ok {
		return s.Message()
	}
	return err.Error()
}

var restartLogRE = regexp.MustCompile(`^(\d+)\.log(\..*)?$`)

// restartCountFromLogDir is one more than the highest <n>.log in a container's log
// directory, 0 when there is none.
func restartCountFromLogDir(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	count := 0
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if match := restartLogRE.FindStringSubmatch(e.Name()); match != nil {
			if n, err := strconv.Atoi(match[1]); err == nil && n+1 > count {
				count = n + 1
			}
		}
	}
	return count
}

// generateContainerConfig is the container the runtime creates: metadata (name and restart
// count as the attempt), image, command and args with $(VAR) expanded, environment, working
// directory, mounts, log path <name>/<restartCount>.log, stdin/tty, labels and annotations
// that let GetPodStatus rebuild it, and the Linux resources and security context.
func (m *Manager) generateContainerConfig(ctx context.Context, c *v1.Container, pod *v1.Pod, restartCount int, podIPs []string, imageRef string, target *container.ContainerID) (*runtimeapi.ContainerConfig, error) {
	env, err := m.makeEnvironmentVariables(ctx, pod, c, podIPs)
	if err != nil {
		return nil, err
	}
	envMap := make(map[string]string, len(env))
	for _, e := range env {
		envMap[e.Name] = e.Value
	}
	if err := m.verifyRunAsNonRoot(ctx, pod, c, imageRef); err != nil {
		return nil, err
	}
	mounts, err := m.makeMounts(ctx, pod, c, podIPs, envMap)
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(m.podLogsDir(pod.Namespace, pod.Name, string(pod.UID)), c.Name)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, fmt.Errorf("create container log directory for container %s failed: %v", c.Name, err)
	}
	lookup := container.LookupIn(envMap)
	var command, args []string
	for _, s := range c.Command {
		command = append(command, container.Expand(s, lookup))
	}
	for _, s := range c.Args {
		args = append(args, container.Expand(s, lookup))
	}
	config := &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(restartCount)},
		Image:       &runtimeapi.ImageSpec{Image: imageRef, UserSpecifiedImage: c.Image},
		Command:     command,
		Args:        args,
		WorkingDir:  c.WorkingDir,
		Labels:      newContainerLabels(c, pod),
		Annotations: newContainerAnnotations(c, pod, restartCount),
		Mounts:      mounts,
		LogPath:     filepath.Join(c.Name, strconv.Itoa(restartCount)+".log"),
		Stdin:       c.Stdin,
		StdinOnce:   c.StdinOnce,
		Tty:         c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       m.containerResources(pod, c),
			SecurityContext: m.containerSecurityContext(pod, c),
		},
	}
	if target != nil && config.Linux.SecurityContext.NamespaceOptions.Pid == runtimeapi.NamespaceMode_CONTAINER {
		config.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_TARGET
		config.Linux.SecurityContext.NamespaceOptions.TargetId = target.ID
	}
	for _, e := range env {
		config.Envs = append(config.Envs, &runtimeapi.KeyValue{Key: e.Name, Value: []byte(e.Value)})
	}
	return config, nil
}
