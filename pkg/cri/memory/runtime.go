// Package memory is the container runtime below the CRI for `berth sim`: an in-memory
// implementation of the CRI RuntimeService and ImageManagerService (k8s.io/cri-api) that
// behaves towards the node agent as containerd's CRI plugin does, so that thousands of real
// node agents run their sync loop, PLEG and status manager in one process. The node agent
// sees it only as the CRI; in DESIGN.md's flow it is what runtime.SyncPod's sandbox and
// container steps and the PLEG's relist talk to.
//
// Nothing runs: a container is a record whose state changes when the node agent asks
// (start, stop, remove) or when its scripted run time, read from its pod's annotations (see
// Script), has passed. Those exits are evaluated lazily, on every call, from a min-heap of
// deadlines on the injected clock, and stamped with their scripted time, not with the time
// they were seen. While someone follows the container events (GetContainerEvents, as the
// node agent's PLEG does), one timer per runtime fires at the soonest exit so that its
// STOPPED event is sent on time: no goroutine and no timer per container.
//
// Sandbox and container lifecycles, as containerd's:
//
//	RunPodSandbox ─► READY ─StopPodSandbox─► NOTREADY ─RemovePodSandbox─► gone
//	                 (pod IP)                (IP released, containers killed)
//
//	CreateContainer ─► CREATED ─StartContainer─► RUNNING ─stop, kill, scripted exit─► EXITED ─RemoveContainer─► gone
//	                            └─start fails (script, sandbox not ready)─────────────► EXITED (128, StartError)
//
// Responses share the runtime's labels, annotations, metadata, mounts and image specs,
// which it never changes once created: callers must treat them as read-only, as they would
// an informer's cache. This keeps a relist at one allocation per sandbox or container.
package memory

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/cri/pause"
	"github.com/berth-cluster/berth/pkg/version"
)

// RuntimeName is the runtime's name in Version, and so in the node's containerRuntimeVersion
// ("berth-memory://v1.37.2+berth") and its containers' IDs ("berth-memory://<id>").
const RuntimeName = "berth-memory"

// criVersion is the "kubelet runtime API version" Version reports, as containerd does.
const criVersion = "0.1.0"

var (
	_ internalapi.RuntimeService      = (*Runtime)(nil)
	_ internalapi.ImageManagerService = (*Runtime)(nil)
)

// Options configure a Runtime. The zero value is a runtime on the real clock with the
// sandbox image present, pod IPs from DefaultPodCIDR and instant 5 MB pulls.
type Options struct {
	// Clock stamps every time and drives scripted exits and pull delays. Runtimes of one
	// simulation share one. nil: the real clock.
	Clock clock.WithDelayedExecution
	// PodCIDR is where pod IPs come from until UpdateRuntimeConfig sets the node's; "" is
	// DefaultPodCIDR. Comma-separated for dual stack.
	PodCIDR string
	// SandboxImage is present and pinned from the start, as containerd pins its sandbox
	// image; "" is pause.ImageName, the one the node agent asks for.
	SandboxImage string
	// Images are present from the start too (not pinned).
	Images []string
	// PullDelay and ImageSize shape DefaultRegistry's pulls; ImageSize 0 is
	// DefaultImageSize. Both are ignored when Registry is set.
	PullDelay time.Duration
	ImageSize uint64
	// Registry decides how each pull goes; nil is DefaultRegistry(PullDelay, ImageSize).
	Registry Registry
	// ImageFsMountpoint is the image filesystem ImageFsInfo names; the node agent's image GC
	// and stats statfs it, so it must exist. "" is "/".
	ImageFsMountpoint string
	// RuntimeHandlers are the handlers (RuntimeClasses) accepted besides "" and "runc";
	// containerd rejects a sandbox for a handler it has no runtime for.
	RuntimeHandlers []string
}

// Runtime is one node's in-memory CRI runtime. All its methods are safe for concurrent use;
// one mutex guards its state, since every call is short and does no I/O.
type Runtime struct {
	clock      clock.WithDelayedExecution
	registry   Registry
	mountpoint string
	handlers   []string

	mu         sync.Mutex
	sandboxes  map[string]*sandbox
	containers map[string]*container
	deadlines  deadlineHeap // running containers with a scripted exit, the soonest first
	ipam       ipam
	images     imageStore

	// subscribers are the GetContainerEvents callers; while there are any, exitTimer fires
	// at the soonest scripted exit (exitTimerAt, 0 when none is armed).
	subscribers   []chan *runtimeapi.ContainerEventResponse
	exitTimer     clock.Timer
	exitTimerAt   int64
	droppedEvents int
}

// New returns a runtime with the sandbox image and opts.Images present. It fails on a pod
// CIDR or an image name that does not parse.
func New(opts Options) (*Runtime, error) {
	r := &Runtime{
		clock:      opts.Clock,
		registry:   opts.Registry,
		mountpoint: opts.ImageFsMountpoint,
		handlers:   append([]string{"", "runc"}, opts.RuntimeHandlers...),
		sandboxes:  map[string]*sandbox{},
		containers: map[string]*container{},
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	size := opts.ImageSize
	if size == 0 {
		size = DefaultImageSize
	}
	if r.registry == nil {
		r.registry = DefaultRegistry(opts.PullDelay, size)
	}
	if r.mountpoint == "" {
		r.mountpoint = "/"
	}
	cidr := opts.PodCIDR
	if cidr == "" {
		cidr = DefaultPodCIDR
	}
	if err := r.ipam.setCIDRs(cidr); err != nil {
		return nil, err
	}
	sandboxImage := opts.SandboxImage
	if sandboxImage == "" {
		sandboxImage = pause.ImageName
	}
	for i, name := range append([]string{sandboxImage}, opts.Images...) {
		ref, err := parseRef(name)
		if err != nil {
			return nil, err
		}
		pull := r.registry(ref.full)
		r.images.add(ref, pull.Size, pull.UID, i == 0)
	}
	return r, nil
}

// advance ends every running container whose scripted exit is due and returns the time
// now. Every call that reads or changes state starts with it, under r.mu.
func (r *Runtime) advance() int64 {
	now := r.clock.Now().UnixNano()
	for len(r.deadlines) > 0 && r.deadlines[0].deadline <= now {
		c := r.deadlines.pop()
		code, reason := c.behaviour().exit()
		r.finish(c, c.deadline, code, reason, "")
	}
	r.armExitTimer()
	return now
}

// Counts are how many objects a runtime holds, for tests and benchmarks.
type Counts struct {
	Sandboxes, ReadySandboxes            int
	Containers, Created, Running, Exited int
	// PendingExits are running containers with a scripted exit still to come.
	PendingExits int
	// DroppedEvents are container events not sent because a subscriber's channel was full.
	DroppedEvents int
	Images        int
}

// Counts counts the runtime's sandboxes, containers and images as of now.
func (r *Runtime) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	n := Counts{Sandboxes: len(r.sandboxes), Containers: len(r.containers), PendingExits: len(r.deadlines), Images: len(r.images.byID), DroppedEvents: r.droppedEvents}
	for _, s := range r.sandboxes {
		if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
			n.ReadySandboxes++
		}
	}
	for _, c := range r.containers {
		switch c.state {
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			n.Created++
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			n.Running++
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			n.Exited++
		}
	}
	return n
}

// Version names the runtime and berth's build.
func (r *Runtime) Version(ctx context.Context, apiVersion string) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           criVersion,
		RuntimeName:       RuntimeName,
		RuntimeVersion:    version.GitVersion(),
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports the runtime and its network ready, always: there is nothing to fail.
func (r *Runtime) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	handlers := make([]*runtimeapi.RuntimeHandler, 0, len(r.handlers))
	for _, h := range r.handlers {
		handlers = append(handlers, &runtimeapi.RuntimeHandler{
			Name:     h,
			Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: true, UserNamespaces: true},
		})
	}
	return &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		}},
		RuntimeHandlers: handlers,
		Features:        &runtimeapi.RuntimeFeatures{SupplementalGroupsPolicy: true},
	}, nil
}

// UpdateRuntimeConfig takes the node's pod CIDR, as containerd rewrites its CNI config with
// it; sandboxes keep the IPs they have. An empty CIDR changes nothing.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, cfg *runtimeapi.RuntimeConfig) error {
	cidr := cfg.GetNetworkConfig().GetPodCidr()
	if cidr == "" {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ipam.setCIDRs(cidr); err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	return nil
}

// RuntimeConfig says the runtime uses the cgroupfs driver, as the node agent does by
// default.
func (r *Runtime) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{
		Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS},
	}, nil
}

// Close releases nothing: the runtime holds no connection or goroutine, and its one timer
// is stopped when the last event subscriber leaves. It stays usable, so that the node
// agent's runtime and image services may both close it.
func (r *Runtime) Close(ctx context.Context) error { return nil }

// knownHandler says whether a sandbox may ask for handler.
func (r *Runtime) knownHandler(handler string) bool {
	return slices.Contains(r.handlers, handler)
}

// unimplemented is the error of the CRI calls the simulation has no use for, the code the
// node agent takes as "not supported by this runtime".
func unimplemented(call string) error {
	return status.Errorf(codes.Unimplemented, "%s is not implemented by the %s runtime", call, RuntimeName)
}

// notFound is containerd's error for an unknown sandbox or container id.
func notFound(kind, id string) error {
	return status.Errorf(codes.NotFound, "an error occurred when try to find %s %q: not found", kind, id)
}

func invalid(format string, args ...any) error {
	return status.Error(codes.InvalidArgument, fmt.Sprintf(format, args...))
}
