package memory

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// sandbox is a pod sandbox: what PodSandboxStatus reports, and its containers. Its fields
// never change after RunPodSandbox except state, ips, containers and view.
type sandbox struct {
	id             string
	metadata       *runtimeapi.PodSandboxMetadata
	labels         map[string]string
	annotations    map[string]string // also the scripts of its containers
	namespaces     *runtimeapi.NamespaceOption
	logDirectory   string
	runtimeHandler string
	createdAt      int64
	state          runtimeapi.PodSandboxState
	ips            []netip.Addr // the pod IPs, primary first; none for host network or once stopped
	containers     []*container
	view           *runtimeapi.PodSandbox // what ListPodSandbox returns until the state changes
}

// RunPodSandbox creates a READY sandbox with a pod IP from the pod CIDR (none on the host
// network). As containerd does, it refuses a second sandbox with the same name (pod name,
// namespace, UID and attempt) while the first exists.
func (r *Runtime) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	md := config.GetMetadata()
	if md == nil || md.Name == "" {
		return "", invalid("sandbox config must include metadata with a name")
	}
	if !r.knownHandler(runtimeHandler) {
		return "", status.Errorf(codes.InvalidArgument, "failed to get sandbox runtime: no runtime for %q is configured", runtimeHandler)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	for _, s := range r.sandboxes {
		if o := s.metadata; o.Name == md.Name && o.Namespace == md.Namespace && o.Uid == md.Uid && o.Attempt == md.Attempt {
			return "", status.Errorf(codes.AlreadyExists, "failed to reserve sandbox name %q: name is reserved for %q", sandboxName(md), s.id)
		}
	}
	ns := config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	s := &sandbox{
		id:             r.newID(),
		metadata:       &runtimeapi.PodSandboxMetadata{Name: md.Name, Uid: md.Uid, Namespace: md.Namespace, Attempt: md.Attempt},
		labels:         maps.Clone(config.Labels),
		annotations:    maps.Clone(config.Annotations),
		logDirectory:   config.LogDirectory,
		runtimeHandler: runtimeHandler,
		createdAt:      now,
		state:          runtimeapi.PodSandboxState_SANDBOX_READY,
	}
	if ns != nil {
		s.namespaces = &runtimeapi.NamespaceOption{Network: ns.Network, Pid: ns.Pid, Ipc: ns.Ipc, TargetId: ns.TargetId, UsernsOptions: ns.UsernsOptions}
	}
	if ns.GetNetwork() != runtimeapi.NamespaceMode_NODE {
		ips, err := r.ipam.allocate()
		if err != nil {
			return "", status.Errorf(codes.Unknown, "failed to setup network for sandbox %q: plugin type=\"host-local\" failed (add): %v", s.id, err)
		}
		s.ips = ips
	}
	r.sandboxes[s.id] = s
	r.emit(s.id, s, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, now)
	r.emit(s.id, s, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, now)
	return s.id, nil
}

// sandboxName is containerd's name for a sandbox, unique among the existing ones.
func sandboxName(md *runtimeapi.PodSandboxMetadata) string {
	return fmt.Sprintf("%s_%s_%s_%d", md.Name, md.Namespace, md.Uid, md.Attempt)
}

// StopPodSandbox kills the sandbox's running containers (no grace period: the node agent
// has stopped them already), releases its IP and makes it NOTREADY. Stopping it again is a
// no-op; an unknown id is NotFound, as containerd says.
func (r *Runtime) StopPodSandbox(ctx context.Context, podSandboxID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	s, ok := r.sandboxes[podSandboxID]
	if !ok {
		return notFound("sandbox", podSandboxID)
	}
	r.stopSandbox(s, now)
	return nil
}

func (r *Runtime) stopSandbox(s *sandbox, now int64) {
	for _, c := range s.containers {
		r.kill(c, now, 0)
	}
	r.ipam.release(s.ips)
	s.ips = nil
	if s.state == runtimeapi.PodSandboxState_SANDBOX_READY {
		s.state, s.view = runtimeapi.PodSandboxState_SANDBOX_NOTREADY, nil
		r.emit(s.id, s, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, now)
	}
}

// RemovePodSandbox stops the sandbox, then removes it and its containers. An unknown id is
// not an error: removing is idempotent.
func (r *Runtime) RemovePodSandbox(ctx context.Context, podSandboxID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	s, ok := r.sandboxes[podSandboxID]
	if !ok {
		return nil
	}
	r.stopSandbox(s, now)
	for _, c := range s.containers {
		delete(r.containers, c.id)
		r.emit(c.id, s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, now)
	}
	s.containers = nil
	delete(r.sandboxes, s.id)
	r.emit(s.id, s, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, now)
	return nil
}

// PodSandboxStatus reports the sandbox; an unknown id is NotFound, which the node agent
// takes as "removed since the list".
func (r *Runtime) PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.advance()
	s, ok := r.sandboxes[podSandboxID]
	if !ok {
		return nil, notFound("sandbox", podSandboxID)
	}
	network := &runtimeapi.PodSandboxNetworkStatus{}
	for i, ip := range s.ips {
		if i == 0 {
			network.Ip = ip.String()
		} else {
			network.AdditionalIps = append(network.AdditionalIps, &runtimeapi.PodIP{Ip: ip.String()})
		}
	}
	return &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{
			Id:        s.id,
			Metadata:  s.metadata,
			State:     s.state,
			CreatedAt: s.createdAt,
			Network:   network,
			// The node agent compares the network mode with the pod's to decide whether
			// the sandbox must be recreated.
			Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: s.namespaces}},
			Labels:         s.labels,
			Annotations:    s.annotations,
			RuntimeHandler: s.runtimeHandler,
		},
		Timestamp: now,
	}, nil
}

// ListPodSandbox lists the sandboxes that match every field of filter.
func (r *Runtime) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	if id := filter.GetId(); id != "" {
		s, ok := r.sandboxes[id]
		if !ok || !s.matches(filter) {
			return nil, nil
		}
		return []*runtimeapi.PodSandbox{s.toCRI()}, nil
	}
	out := make([]*runtimeapi.PodSandbox, 0, len(r.sandboxes))
	for _, s := range r.sandboxes {
		if s.matches(filter) {
			out = append(out, s.toCRI())
		}
	}
	return out, nil
}

func (s *sandbox) matches(f *runtimeapi.PodSandboxFilter) bool {
	if f == nil {
		return true
	}
	if f.State != nil && f.State.State != s.state {
		return false
	}
	return matchLabels(s.labels, f.LabelSelector)
}

func (s *sandbox) toCRI() *runtimeapi.PodSandbox {
	if s.view != nil {
		return s.view
	}
	s.view = &runtimeapi.PodSandbox{
		Id:             s.id,
		Metadata:       s.metadata,
		State:          s.state,
		CreatedAt:      s.createdAt,
		Labels:         s.labels,
		Annotations:    s.annotations,
		RuntimeHandler: s.runtimeHandler,
	}
	return s.view
}

// matchLabels says whether labels hold every pair of selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// PortForward has nothing to forward to: the sandbox has no network namespace.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	if _, ok := r.sandboxes[req.GetPodSandboxId()]; !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	return nil, status.Errorf(codes.Unimplemented, "port forwarding: the %s runtime runs no processes", RuntimeName)
}

// UpdatePodSandboxResources accepts and ignores the pod's resources: there are no cgroups.
func (r *Runtime) UpdatePodSandboxResources(ctx context.Context, req *runtimeapi.UpdatePodSandboxResourcesRequest) (*runtimeapi.UpdatePodSandboxResourcesResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advance()
	if _, ok := r.sandboxes[req.GetPodSandboxId()]; !ok {
		return nil, notFound("sandbox", req.GetPodSandboxId())
	}
	return &runtimeapi.UpdatePodSandboxResourcesResponse{}, nil
}

func (r *Runtime) CheckpointPod(ctx context.Context, options *runtimeapi.CheckpointPodRequest) error {
	return unimplemented("CheckpointPod")
}

func (r *Runtime) RestorePod(ctx context.Context, options *runtimeapi.RestorePodRequest) (*runtimeapi.RestorePodResponse, error) {
	return nil, unimplemented("RestorePod")
}
