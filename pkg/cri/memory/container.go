package memory

import (
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilexec "k8s.io/utils/exec"
)

// container is one container: only what its status needs, since a simulation holds
// hundreds of thousands. The fields above view never change after CreateContainer
// (resources aside, by UpdateContainerResources).
type container struct {
	id          string
	sandbox     *sandbox
	metadata    *runtimeapi.ContainerMetadata
	imageSpec   *runtimeapi.ImageSpec // as the node agent gave it: the image id and the pod's image name
	image       *image                // what imageSpec named at creation; it may since be removed
	labels      map[string]string
	annotations map[string]string
	mounts      []mount
	logPath     string // relative to the sandbox's log directory
	resources   *runtimeapi.LinuxContainerResources
	script      *Script // nil: defaultScript, which most containers have

	// view is what ListContainers returns for it until its state changes: a relist then
	// costs no allocation per container. It is replaced, never changed, as callers hold it.
	view       *runtimeapi.Container
	reason     string
	message    string
	createdAt  int64
	startedAt  int64
	finishedAt int64
	deadline   int64 // when the scripted exit is due, while in Runtime.deadlines
	heapIndex  int32 // position in Runtime.deadlines; -1 when not there
	exitCode   int32
	state      runtimeapi.ContainerState
}

func (c *container) behaviour() *Script {
	if c.script == nil {
		return &defaultScript
	}
	return c.script
}

// CreateContainer creates a CREATED container in a READY sandbox from a present image; its
// script comes from the sandbox's annotations (see Script).
func (r *Runtime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	md := config.GetMetadata()
	if md == nil || md.Name == "" {
		return "", invalid("container config must include metadata with a name")
	}
	spec := config.GetImage()
	if spec.GetImage() == "" {
		return "", invalid("container config must include an image")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	s, ok := r.sandboxes[podSandboxID]
	if !ok {
		return "", notFound("sandbox", podSandboxID)
	}
	if s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return "", status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", podSandboxID)
	}
	for _, o := range s.containers {
		if o.metadata.Name == md.Name && o.metadata.Attempt == md.Attempt {
			name := fmt.Sprintf("%s_%s_%d", md.Name, sandboxName(s.metadata), md.Attempt)
			return "", status.Errorf(codes.AlreadyExists, "failed to reserve container name %q: name is reserved for %q", name, o.id)
		}
	}
	img, err := r.images.resolve(spec.Image)
	if err != nil {
		return "", err
	}
	if img == nil {
		return "", status.Errorf(codes.NotFound, "failed to resolve image %q: not found", spec.Image)
	}
	script, err := ParseScript(s.annotations, md.Name)
	if err != nil {
		return "", invalid("container %q: %v", md.Name, err)
	}
	c := &container{
		id:          r.newID(),
		sandbox:     s,
		metadata:    &runtimeapi.ContainerMetadata{Name: md.Name, Attempt: md.Attempt},
		imageSpec:   &runtimeapi.ImageSpec{Image: spec.Image, UserSpecifiedImage: spec.UserSpecifiedImage, RuntimeHandler: spec.RuntimeHandler, Annotations: spec.Annotations},
		image:       img,
		labels:      maps.Clone(config.Labels),
		annotations: maps.Clone(config.Annotations),
		mounts:      compactMounts(config.Mounts),
		logPath:     config.LogPath,
		resources:   config.GetLinux().GetResources(),
		createdAt:   now,
		heapIndex:   -1,
		state:       runtimeapi.ContainerState_CONTAINER_CREATED,
	}
	if script != defaultScript {
		c.script = &script
	}
	r.containers[c.id] = c
	s.containers = append(s.containers, c)
	r.emit(c.id, s, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, now)
	return c.id, nil
}

// StartContainer runs a CREATED container. A start that fails (the script's fail-start, or
// a sandbox that is not ready) leaves it EXITED with 128 and reason StartError, as a runc
// failure does in containerd, and returns the error.
func (r *Runtime) StartContainer(ctx context.Context, containerID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return notFound("container", containerID)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_CREATED {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", c.id, stateName(c.state))
	}
	script := c.behaviour()
	fail := script.FailStart
	if c.sandbox.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		fail = fmt.Sprintf("sandbox container %q is not running", c.sandbox.id)
	}
	if fail != "" {
		r.finish(c, now, exitCodeStartError, reasonStartError, fail)
		return status.Error(codes.Unknown, fail)
	}
	c.state, c.view = runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	c.startedAt = now
	r.emit(c.id, c.sandbox, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, now)
	if script.Exits {
		c.deadline = now + int64(script.RunFor)
		if script.RunFor == 0 {
			code, reason := script.exit()
			r.finish(c, now, code, reason, "")
		} else {
			r.deadlines.push(c)
			r.armExitTimer()
		}
	}
	return nil
}

// StopContainer stops a running container: the simulated process obeys SIGTERM at once, so
// with a grace period it exits with the script's stop code (143 unless scripted), without
// one it is killed (137). A created or exited container is left as it is, as containerd
// does.
func (r *Runtime) StopContainer(ctx context.Context, containerID string, timeout int64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return notFound("container", containerID)
	}
	r.kill(c, now, timeout)
	return nil
}

// kill stops c if it runs; timeout is the grace period in seconds.
func (r *Runtime) kill(c *container, now, timeout int64) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	code := int32(exitCodeSIGKILL)
	if timeout > 0 {
		code = c.behaviour().StopExitCode
	}
	r.finish(c, now, code, exitReason(code), "")
}

// finish makes c EXITED at the time at.
func (r *Runtime) finish(c *container, at int64, code int32, reason, message string) {
	if c.heapIndex >= 0 {
		r.deadlines.remove(c)
	}
	c.state, c.view = runtimeapi.ContainerState_CONTAINER_EXITED, nil
	c.finishedAt = at
	c.exitCode = code
	c.reason = reason
	c.message = message
	r.emit(c.id, c.sandbox, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, at)
}

// RemoveContainer kills the container if it runs and removes it. An unknown id is not an
// error: removing is idempotent.
func (r *Runtime) RemoveContainer(ctx context.Context, containerID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return nil
	}
	r.kill(c, now, 0)
	delete(r.containers, c.id)
	s := c.sandbox
	if i := slices.Index(s.containers, c); i >= 0 {
		s.containers = slices.Delete(s.containers, i, i+1)
	}
	r.emit(c.id, s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, now)
	return nil
}

// ListContainers lists the containers that match every field of filter.
func (r *Runtime) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	out := make([]*runtimeapi.Container, 0, r.countHint(filter.GetId(), filter.GetPodSandboxId()))
	r.eachContainer(filter.GetId(), filter.GetPodSandboxId(), func(c *container) {
		if f := filter.GetState(); f != nil && f.State != c.state {
			return
		}
		if matchLabels(c.labels, filter.GetLabelSelector()) {
			out = append(out, c.toCRI())
		}
	})
	return out, nil
}

// eachContainer calls f with the container id names, or else those of the sandbox
// sandboxID names, or else all; both filters apply when both are set.
func (r *Runtime) eachContainer(id, sandboxID string, f func(*container)) {
	switch {
	case id != "":
		if c, ok := r.containers[id]; ok && (sandboxID == "" || c.sandbox.id == sandboxID) {
			f(c)
		}
	case sandboxID != "":
		if s, ok := r.sandboxes[sandboxID]; ok {
			for _, c := range s.containers {
				f(c)
			}
		}
	default:
		for _, c := range r.containers {
			f(c)
		}
	}
}

// countHint is how many containers eachContainer may call back with, to size a result.
func (r *Runtime) countHint(id, sandboxID string) int {
	switch {
	case id != "":
		return 1
	case sandboxID != "":
		if s, ok := r.sandboxes[sandboxID]; ok {
			return len(s.containers)
		}
		return 0
	}
	return len(r.containers)
}

func (c *container) toCRI() *runtimeapi.Container {
	if c.view != nil {
		return c.view
	}
	c.view = &runtimeapi.Container{
		Id:           c.id,
		PodSandboxId: c.sandbox.id,
		Metadata:     c.metadata,
		Image:        c.imageSpec,
		ImageRef:     c.image.id,
		State:        c.state,
		CreatedAt:    c.createdAt,
		Labels:       c.labels,
		Annotations:  c.annotations,
		ImageId:      c.image.id,
	}
	return c.view
}

// ContainerStatus reports the container; an unknown id is NotFound. As containerd does, it
// names the image by its tag and its ref by its repo digest while the image is present.
func (r *Runtime) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return nil, notFound("container", containerID)
	}
	spec, ref := c.imageSpec, c.image.id
	if r.images.byID[c.image.id] == c.image {
		if c.image.tagSpec != nil {
			spec = c.image.tagSpec
		}
		if len(c.image.repoDigests) > 0 {
			ref = c.image.repoDigests[0]
		}
	}
	st := &runtimeapi.ContainerStatus{
		Id:          c.id,
		Metadata:    c.metadata,
		State:       c.state,
		CreatedAt:   c.createdAt,
		StartedAt:   c.startedAt,
		FinishedAt:  c.finishedAt,
		ExitCode:    c.exitCode,
		Image:       spec,
		ImageRef:    ref,
		Reason:      c.reason,
		Message:     c.message,
		Labels:      c.labels,
		Annotations: c.annotations,
		Mounts:      crimounts(c.mounts),
		ImageId:     c.image.id,
	}
	if c.logPath != "" && c.sandbox.logDirectory != "" {
		st.LogPath = filepath.Join(c.sandbox.logDirectory, c.logPath)
	}
	if c.resources != nil {
		st.Resources = &runtimeapi.ContainerResources{Linux: c.resources}
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

// mount is a container's mount as ContainerStatus reports it: the node agent's Mount
// message is a third of a container's memory, and it rarely uses more than these fields.
type mount struct {
	containerPath, hostPath string
	full                    *runtimeapi.Mount // the node agent's own when it uses more (ID mappings, an image)
	propagation             runtimeapi.MountPropagation
	readonly                bool
	selinuxRelabel          bool
	recursiveReadOnly       bool
}

func compactMounts(in []*runtimeapi.Mount) []mount {
	if len(in) == 0 {
		return nil
	}
	out := make([]mount, len(in))
	for i, m := range in {
		if len(m.UidMappings) > 0 || len(m.GidMappings) > 0 || m.Image != nil || m.ImageSubPath != "" {
			out[i] = mount{full: m}
			continue
		}
		out[i] = mount{
			containerPath:     m.ContainerPath,
			hostPath:          m.HostPath,
			propagation:       m.Propagation,
			readonly:          m.Readonly,
			selinuxRelabel:    m.SelinuxRelabel,
			recursiveReadOnly: m.RecursiveReadOnly,
		}
	}
	return out
}

func crimounts(in []mount) []*runtimeapi.Mount {
	if len(in) == 0 {
		return nil
	}
	out := make([]*runtimeapi.Mount, len(in))
	for i, m := range in {
		if m.full != nil {
			out[i] = m.full
			continue
		}
		out[i] = &runtimeapi.Mount{
			ContainerPath:     m.containerPath,
			HostPath:          m.hostPath,
			Propagation:       m.propagation,
			Readonly:          m.readonly,
			SelinuxRelabel:    m.selinuxRelabel,
			RecursiveReadOnly: m.recursiveReadOnly,
		}
	}
	return out
}

// UpdateContainerResources records the resources, which ContainerStatus then reports; a
// created or running container only, as containerd.
func (r *Runtime) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	c, ok := r.containers[containerID]
	if !ok {
		return notFound("container", containerID)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_EXITED {
		return status.Errorf(codes.FailedPrecondition, "container %q is in %s state", c.id, stateName(c.state))
	}
	if resources.GetLinux() != nil {
		c.resources = resources.GetLinux()
	}
	return nil
}

// ExecSync runs nothing: it answers with the script's exec exit code (0 unless scripted)
// and no output, so exec probes and hooks succeed by default. A non-zero code is the error
// k8s.io/cri-client returns for it, which the node agent's prober expects.
func (r *Runtime) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) ([]byte, []byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	c, err := r.running(containerID)
	if err != nil {
		return nil, nil, err
	}
	if code := c.behaviour().ExecExitCode; code != 0 {
		return nil, nil, utilexec.CodeExitError{
			Err:  fmt.Errorf("command '%s' exited with %d: ", strings.Join(cmd, " "), code),
			Code: int(code),
		}
	}
	return nil, nil, nil
}

// running is the running container id names: NotFound if none, FailedPrecondition if it
// does not run.
func (r *Runtime) running(id string) (*container, error) {
	c, ok := r.containers[id]
	if !ok {
		return nil, notFound("container", id)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container is in %s state", stateName(c.state))
	}
	return c, nil
}

// Exec has no process to run a command in.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	if _, err := r.running(req.GetContainerId()); err != nil {
		return nil, err
	}
	return nil, status.Errorf(codes.Unimplemented, "exec: the %s runtime runs no processes", RuntimeName)
}

// Attach has no process to attach to.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	if _, err := r.running(req.GetContainerId()); err != nil {
		return nil, err
	}
	return nil, status.Errorf(codes.Unimplemented, "attach: the %s runtime runs no processes", RuntimeName)
}

// ReopenContainerLog succeeds for a running container: there is no log file to reopen (the
// runtime writes none).
func (r *Runtime) ReopenContainerLog(ctx context.Context, containerID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	_, err := r.running(containerID)
	return err
}

func (r *Runtime) CheckpointContainer(ctx context.Context, options *runtimeapi.CheckpointContainerRequest) error {
	return unimplemented("CheckpointContainer")
}

// stateName is containerd's word for a container state in its errors.
func stateName(s runtimeapi.ContainerState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "CONTAINER_"))
}

// newID is a fresh 64-hex-digit id, unique among the runtime's sandboxes and containers
// (containerd's share one namespace).
func (r *Runtime) newID() string {
	for {
		var b [32]byte
		for i := 0; i < len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], rand.Uint64())
		}
		id := hex.EncodeToString(b[:])
		_, s := r.sandboxes[id]
		_, c := r.containers[id]
		if !s && !c {
			return id
		}
	}
}

// deadlineHeap is a min-heap of running containers by the time of their scripted exit.
type deadlineHeap []*container

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].deadline < h[j].deadline }
func (h deadlineHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIndex, h[j].heapIndex = int32(i), int32(j)
}
func (h *deadlineHeap) Push(x any) {
	c := x.(*container)
	c.heapIndex = int32(len(*h))
	*h = append(*h, c)
}
func (h *deadlineHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.heapIndex = -1
	return c
}

func (h *deadlineHeap) push(c *container)   { heap.Push(h, c) }
func (h *deadlineHeap) pop() *container     { return heap.Pop(h).(*container) }
func (h *deadlineHeap) remove(c *container) { heap.Remove(h, int(c.heapIndex)) }
