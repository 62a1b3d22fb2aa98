package kuberuntime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// The limits on a termination message, as the kubelet's.
const (
	maxTerminationMessageLength    = 4 * 1024
	maxTerminationMessageLogLength = 2 * 1024
	maxTerminationMessageLogLines  = 80
)

// GetPodStatus reads the pod's status from the runtime alone: its sandboxes (the newest
// first; the pod's IPs are the newest sandbox's when it is ready) and every container
// labelled with its UID (the newest first), with the restart count and hash from their
// annotations and, for exited ones, the termination message.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	now := m.clock.Now()
	selector := map[string]string{podUIDLabel: string(uid)}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the sandboxes of pod %s/%s: %w", namespace, name, err)
	}
	sortSandboxes(sandboxes)
	status := &container.PodStatus{ID: uid, Name: name, Namespace: namespace, IPs: []string{}, TimeStamp: now}
	for i, s := range sandboxes {
		resp, err := m.runtime.PodSandboxStatus(ctx, s.Id, false)
		if crierrors.IsNotFound(err) {
			continue // removed since the list
		}
		if err != nil {
			return nil, fmt.Errorf("status of sandbox %s of pod %s/%s: %w", s.Id, namespace, name, err)
		}
		if resp.GetStatus() == nil {
			return nil, errors.New("pod sandbox status is nil")
		}
		status.SandboxStatuses = append(status.SandboxStatuses, resp.Status)
		if i == 0 && resp.Status.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			status.IPs = podSandboxIPs(ctx, resp.Status)
		}
	}

	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, fmt.Errorf("listing the containers of pod %s/%s: %w", namespace, name, err)
	}
	for _, c := range containers {
		resp, err := m.runtime.ContainerStatus(ctx, c.Id, false)
		if crierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("status of container %s of pod %s/%s: %w", c.Id, namespace, name, err)
		}
		if resp.GetStatus() == nil {
			return nil, errors.New("container status is nil")
		}
		status.ContainerStatuses = append(status.ContainerStatuses, m.toStatus(ctx, resp.Status))
	}
	sort.SliceStable(status.ContainerStatuses, func(i, j int) bool {
		a, b := status.ContainerStatuses[i], status.ContainerStatuses[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.ID.ID < b.ID.ID
	})
	return status, nil
}

// sortSandboxes sorts the newest first.
func sortSandboxes(s []*runtimeapi.PodSandbox) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].CreatedAt != s[j].CreatedAt {
			return s[i].CreatedAt > s[j].CreatedAt
		}
		return s[i].Id < s[j].Id
	})
}

// toStatus turns the CRI's status of a container into the node agent's.
func (m *Manager) toStatus(ctx context.Context, s *runtimeapi.ContainerStatus) *container.Status {
	l := containerInfoFromLabels(s.Labels)
	a := containerInfoFromAnnotations(s.Annotations)
	name := l.ContainerName
	if name == "" {
		name = s.GetMetadata().GetName()
	}
	imageID := s.ImageRef
	if s.ImageId != "" {
		imageID = s.ImageId
	}
	cs := &container.Status{
		ID:           container.ContainerID{Type: m.cfg.RuntimeName, ID: s.Id},
		Name:         name,
		State:        toState(s.State),
		CreatedAt:    time.Unix(0, s.CreatedAt),
		Image:        s.GetImage().GetImage(),
		ImageID:      imageID,
		ImageRef:     s.ImageRef,
		Hash:         a.Hash,
		RestartCount: a.RestartCount,
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		cs.StartedAt = time.Unix(0, s.StartedAt)
	}
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		cs.Reason = s.Reason
		cs.Message = s.Message
		cs.ExitCode = int(s.ExitCode)
		cs.FinishedAt = time.Unix(0, s.FinishedAt)
		if msg := TerminationMessage(ctx, s, a.TerminationMessagePath, a.TerminationMessagePolicy); msg != "" {
			if cs.Message != "" {
				cs.Message += ": "
			}
			cs.Message += msg
		}
	}
	return cs
}

func toState(s runtimeapi.ContainerState) container.State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return container.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return container.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return container.ContainerStateExited
	}
	return container.ContainerStateUnknown
}

// TerminationMessage is the termination message of an exited container: the last 4 KiB of
// the file the container wrote at its terminationMessagePath (the CRI status names the host
// file through its mounts) — or, for FallbackToLogsOnError when the container failed and
// that file is empty, the last 80 lines (at most 2 KiB) of its log.
func TerminationMessage(ctx context.Context, s *runtimeapi.ContainerStatus, path string, policy v1.TerminationMessagePolicy) string {
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && s.ExitCode != 0 && s.Reason != "ContainerCannotRun"
	if path != "" {
		for _, mount := range s.Mounts {
			if mount.ContainerPath != path {
				continue
			}
			data, err := readLastBytes(mount.HostPath, maxTerminationMessageLength)
			switch {
			case os.IsNotExist(err):
			case err != nil:
				return fmt.Sprintf("Error on reading termination log %s: %v", mount.HostPath, err)
			case len(data) > 0 || !fallback:
				return string(data)
			}
			break
		}
	}
	if !fallback || s.LogPath == "" {
		return ""
	}
	var buf tailBuffer
	buf.max = maxTerminationMessageLogLength
	tail := int64(maxTerminationMessageLogLines)
	if err := ReadLogs(ctx, s.LogPath, &LogOptions{TailLines: &tail}, nil, &buf, &buf); err != nil {
		return fmt.Sprintf("Error on reading termination message from logs: %v", err)
	}
	return buf.String()
}

// readLastBytes reads at most max bytes from the end of a file.
func readLastBytes(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if info.Size() > max {
		if _, err := f.Seek(-max, io.SeekEnd); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	buf bytes.Buffer
	max int
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf.Write(p)
	if over := t.buf.Len() - t.max; over > 0 {
		t.buf.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return t.buf.String() }

// GetPods lists the pods in the runtime from their sandboxes' and containers' labels, the
// newest pod first. Without all, only ready sandboxes and running containers count.
func (m *Manager) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	sandboxFilter, containerFilter := &runtimeapi.PodSandboxFilter{}, &runtimeapi.ContainerFilter{}
	if !all {
		sandboxFilter.State = &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
		containerFilter.State = &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}
	}
	sandboxes, err := m.runtime.ListPodSandbox(ctx, sandboxFilter)
	if err != nil {
		return nil, fmt.Errorf("listing sandboxes: %w", err)
	}
	sortSandboxes(sandboxes)
	pods := map[types.UID]*container.Pod{}
	var order []*container.Pod
	podFor := func(uid types.UID, name, namespace string) *container.Pod {
		p, ok := pods[uid]
		if !ok {
			p = &container.Pod{ID: uid, Name: name, Namespace: namespace}
			pods[uid] = p
			order = append(order, p)
		}
		return p
	}
	for _, s := range sandboxes {
		md := s.GetMetadata()
		if md == nil {
			continue
		}
		p := podFor(types.UID(md.Uid), md.Name, md.Namespace)
		state := container.ContainerStateExited
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = container.ContainerStateRunning
		}
		p.Sandboxes = append(p.Sandboxes, &container.Container{ID: container.ContainerID{Type: m.cfg.RuntimeName, ID: s.Id}, State: state})
		if uint64(s.CreatedAt) > p.CreatedAt {
			p.CreatedAt = uint64(s.CreatedAt)
		}
	}

	containers, err := m.runtime.ListContainers(ctx, containerFilter)
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	sort.SliceStable(containers, func(i, j int) bool {
		if containers[i].CreatedAt != containers[j].CreatedAt {
			return containers[i].CreatedAt > containers[j].CreatedAt
		}
		return containers[i].Id < containers[j].Id
	})
	for _, c := range containers {
		l := containerInfoFromLabels(c.Labels)
		if l.PodUID == "" {
			klog.FromContext(ctx).V(4).Info("Container has no pod UID label; not berth's", "containerID", c.Id)
			continue
		}
		p := podFor(l.PodUID, l.PodName, l.PodNamespace)
		p.Containers = append(p.Containers, &container.Container{
			ID:      container.ContainerID{Type: m.cfg.RuntimeName, ID: c.Id},
			Name:    l.ContainerName,
			Image:   c.GetImage().GetImage(),
			ImageID: c.ImageRef,
			Hash:    containerHash(c.Annotations),
			State:   toState(c.State),
		})
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].CreatedAt > order[j].CreatedAt })
	return order, nil
}

// runtimePodIPs are the IPs of the pod's ready sandbox, the newest.
func (m *Manager) runtimePodIPs(ctx context.Context, uid string) []string {
	sandboxes, err := m.runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podUIDLabel: uid},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil || len(sandboxes) == 0 {
		return nil
	}
	sortSandboxes(sandboxes)
	resp, err := m.runtime.PodSandboxStatus(ctx, sandboxes[0].Id, false)
	if err != nil {
		return nil
	}
	return podSandboxIPs(ctx, resp.GetStatus())
}

// DeleteContainer removes a container and its log file.
func (m *Manager) DeleteContainer(ctx context.Context, id container.ContainerID) error {
	return m.removeContainer(ctx, id.ID)
}

func (m *Manager) removeContainer(ctx context.Context, id string) error {
	resp, err := m.runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		if crierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("status of container %s: %w", id, err)
	}
	if path := resp.GetStatus().GetLogPath(); path != "" {
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("removing the log of container %s: %w", id, err)
		}
	}
	if err := m.runtime.RemoveContainer(ctx, id); err != nil && !crierrors.IsNotFound(err) {
		return fmt.Errorf("removing container %s: %w", id, err)
	}
	return nil
}
