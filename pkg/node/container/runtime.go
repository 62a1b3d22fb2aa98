// Package container is the node agent's view of a container runtime, above the CRI: the
// runtime's pods, containers and their states (what PLEG compares and syncPod reads), and the
// Runtime that SyncPod, KillPod and GetPodStatus belong to (seed 003's containerRuntime).
package container

import (
	"context"
	"io"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// StreamingRuntime gives the URLs of the runtime's streaming server for exec, attach and
// port-forward (the CRI's Exec, Attach and PortForward); the node API proxies to them.
type StreamingRuntime interface {
	GetExec(ctx context.Context, id ContainerID, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error)
	GetAttach(ctx context.Context, id ContainerID, stdin, stdout, stderr, tty bool) (*url.URL, error)
	GetPortForward(ctx context.Context, podName, podNamespace string, podUID types.UID, ports []int32) (*url.URL, error)
}

// GCPolicy is the container garbage collection policy (the kubelet's
// kubecontainer.GCPolicy).
type GCPolicy struct {
	// MinAge is how long a container must have been dead before it can go.
	MinAge time.Duration
	// MaxPerPodContainer is how many dead containers each container of a pod keeps (for
	// `kubectl logs --previous` and the restart count); below 0, no limit.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all; below 0, no limit.
	MaxContainers int
}

// PodStateProvider says which pods' leftovers can go (the pod workers know).
type PodStateProvider interface {
	// ShouldPodContentBeRemoved: the pod was evicted, or deleted and stopped.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved: the pod's containers have stopped for good.
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
}

// ContainerID is a runtime's container id with the runtime's name: "containerd://abc".
type ContainerID struct {
	Type string
	ID   string
}

func (c ContainerID) String() string {
	if c.ID == "" {
		return ""
	}
	return c.Type + "://" + c.ID
}

// IsEmpty reports an unset id.
func (c ContainerID) IsEmpty() bool { return c.ID == "" }

// ParseContainerID reads "type://id", as a ContainerStatus's containerID holds it; anything
// else is an empty ContainerID.
func ParseContainerID(s string) ContainerID {
	typ, id, ok := strings.Cut(s, "://")
	if !ok {
		return ContainerID{}
	}
	return ContainerID{Type: typ, ID: id}
}

// State is a container's state.
type State string

const (
	ContainerStateCreated State = "created"
	ContainerStateRunning State = "running"
	ContainerStateExited  State = "exited"
	ContainerStateUnknown State = "unknown"
)

// Status is a container's status as the runtime reports it.
type Status struct {
	ID           ContainerID
	Name         string
	State        State
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageID      string
	ImageRef     string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
}

// PodStatus is a pod's state in the runtime: its sandboxes and every container of it, the
// newest first for each name.
type PodStatus struct {
	ID        types.UID
	Name      string
	Namespace string
	IPs       []string
	// ContainerStatuses are all containers, including exited ones kept for restarts.
	ContainerStatuses []*Status
	// SandboxStatuses are the pod's sandboxes, the newest first.
	SandboxStatuses []*runtimeapi.PodSandboxStatus
	// TimeStamp is when the status was read (the PLEG cache keeps the newest).
	TimeStamp time.Time
}

// FindContainerStatusByName returns the newest status of the named container.
func (s *PodStatus) FindContainerStatusByName(name string) *Status {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// GetRunningContainerStatuses returns the running containers.
func (s *PodStatus) GetRunningContainerStatuses() []*Status {
	var out []*Status
	for _, c := range s.ContainerStatuses {
		if c.State == ContainerStateRunning {
			out = append(out, c)
		}
	}
	return out
}

// Container is a container of a running pod, as listed by the runtime.
type Container struct {
	ID      ContainerID
	Name    string
	Image   string
	ImageID string
	Hash    uint64
	State   State
}

// Pod is a pod as the runtime lists it: what runs, whatever the API says.
type Pod struct {
	ID        types.UID
	Name      string
	Namespace string
	// CreatedAt is the newest sandbox's creation time, in nanoseconds.
	CreatedAt  uint64
	Containers []*Container
	Sandboxes  []*Container
}

// IsEmpty reports a pod with nothing in the runtime.
func (p *Pod) IsEmpty() bool { return len(p.Containers) == 0 && len(p.Sandboxes) == 0 }

// RuntimeCondition is one of the runtime's health conditions (RuntimeReady, NetworkReady).
type RuntimeCondition struct {
	Type    string
	Status  bool
	Reason  string
	Message string
}

// RuntimeStatus is the runtime's answer to Status: the conditions updateRuntimeUp turns into
// the node's Ready condition.
type RuntimeStatus struct {
	Conditions []RuntimeCondition
}

// GetRuntimeCondition returns the condition of type t, or nil.
func (s *RuntimeStatus) GetRuntimeCondition(t string) *RuntimeCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// The runtime conditions the node agent requires.
const (
	RuntimeReady = runtimeapi.RuntimeReady
	NetworkReady = runtimeapi.NetworkReady
)

// Image is an image the runtime holds.
type Image struct {
	ID          string
	RepoTags    []string
	RepoDigests []string
	Size        int64
	Pinned      bool
}

// ImageSpec names an image to pull or look up.
type ImageSpec struct {
	Image string
	// RuntimeHandler selects a runtime class; empty is the default.
	RuntimeHandler string
}

// ImageService is the runtime's image half.
type ImageService interface {
	PullImage(ctx context.Context, image ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error)
	GetImageRef(ctx context.Context, image ImageSpec) (string, error)
	ListImages(ctx context.Context) ([]Image, error)
	RemoveImage(ctx context.Context, image ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// Runtime is what the node agent asks of the container runtime.
type Runtime interface {
	ImageService
	StreamingRuntime
	// Type names the runtime ("containerd"); Version is its version.
	Type() string
	Version(ctx context.Context) (string, error)
	// Status is the runtime's health.
	Status(ctx context.Context) (*RuntimeStatus, error)
	// GetPods lists the pods in the runtime; all includes exited containers and sandboxes.
	GetPods(ctx context.Context, all bool) ([]*Pod, error)
	// GetPodStatus reads one pod's full status.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*PodStatus, error)
	// SyncPod makes the runtime run pod as its spec says, in seed 003's seven steps.
	SyncPod(ctx context.Context, pod *v1.Pod, podStatus *PodStatus, pullSecrets []v1.Secret, backOff *flowcontrol.Backoff) PodSyncResult
	// KillPod stops a pod's containers (preStop hooks, the grace period) and its sandbox.
	// pod may be nil for a pod the API no longer knows; gracePeriodOverride wins when set.
	KillPod(ctx context.Context, pod *v1.Pod, runningPod Pod, gracePeriodOverride *int64) error
	// DeleteContainer removes an exited container.
	DeleteContainer(ctx context.Context, id ContainerID) error
	// GarbageCollect removes dead containers and sandboxes as policy says, and the pod log
	// directories of pods that are gone; pods says which pods are gone, and allSourcesReady
	// whether the node agent knows every pod yet (until then only surplus containers go).
	GarbageCollect(ctx context.Context, policy GCPolicy, pods PodStateProvider, allSourcesReady bool) error
	// GetContainerLogs writes a container's log to stdout/stderr as the options say.
	GetContainerLogs(ctx context.Context, pod *v1.Pod, id ContainerID, opts *v1.PodLogOptions, stdout, stderr io.Writer) error
}
