// Package kuberuntime is the node agent's container runtime: container.Runtime over the CRI.
// It is the second half of seed 003 ("containerRuntime子模块的SyncPod函数真正完成pod内容器的
// 创建") and all of seed 001: SyncPod in eight marked steps — 1 computePodActions (a pure
// planner), 2 kill the sandbox if needed, 3 kill the containers that must not run, 4 create
// the sandbox (RunPodSandbox: namespaces, cgroup parent, DNS, hostname, port mappings; the
// runtime wires the network through CNI) and read its IP, 5 resize running containers in
// place, 6 ephemeral, 7 init and 8 app containers — where startContainer pulls the image (pkg/node/images), creates and
// starts the container and runs its postStart hook. killContainer runs the preStop hook
// within the grace period and stops the container. GetPodStatus and GetPods rebuild
// everything from the runtime's labels and annotations, so a node agent restart loses
// nothing; GetContainerLogs reads the CRI log files.
package kuberuntime

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/images"
)

// Defaults of Config.
const (
	DefaultRuntimeName = "containerd"
	DefaultPodLogsDir  = "/var/log/pods"
	DefaultRootDir     = "/var/lib/berth/node"
	DefaultResolvConf  = "/etc/resolv.conf"
	DefaultHookTimeout = 2 * time.Minute
)

// Config says how the Manager runs pods. The zero value works on a node with containerd,
// the cgroupfs driver and no cluster DNS.
type Config struct {
	// RuntimeName is the runtime's name in container ids ("containerd://…").
	RuntimeName string
	// RuntimeHandlers says which CRI handler a pod's runtimeClassName stands for
	// (pkg/node/runtimeclass); nil takes the name as the handler (a node without an API
	// server, tests).
	RuntimeHandlers interface {
		LookupRuntimeHandler(name *string) (string, error)
	}
	// PodLogsDir holds the pods' log directories, PodLogsDir/<ns>_<name>_<uid>/<container>/
	// <restartCount>.log; default /var/log/pods. Two node agents on one machine need two.
	PodLogsDir string
	// RootDir holds the pods' directories, RootDir/pods/<uid>: volumes
	// (volumes/kubernetes.io~empty-dir/<name>), the managed /etc/hosts (etc-hosts) and the
	// termination message files (containers/<name>/<id>). Default /var/lib/berth/node.
	RootDir string

	// NodeName and NodeIPs answer spec.nodeName and status.hostIP(s) for the downward API.
	NodeName string
	NodeIPs  []net.IP

	// ClusterDNS are the cluster DNS servers given to ClusterFirst pods, with ClusterDomain
	// ("cluster.local") in their search path. With no ClusterDNS, ClusterFirst falls back
	// to Default (the node's resolver), with a MissingClusterDNS event, as the kubelet does.
	ClusterDNS    []net.IP
	ClusterDomain string
	// ResolvConf is the node's resolver file that Default pods copy; default
	// /etc/resolv.conf; "-" means none (pods then resolve through 127.0.0.1).
	ResolvConf string

	// CgroupDriver must be "cgroupfs" (the default): pods go under
	// CgroupRoot/kubepods[/burstable|/besteffort]/pod<uid>.
	CgroupDriver string
	// CgroupRoot is the cgroup under which "kubepods" lives; default "/".
	CgroupRoot string
	// NoPodCgroups leaves pods in the runtime's default cgroup (the kubelet's
	// cgroupsPerQOS: false): berth sim's runtime runs nothing on this machine.
	NoPodCgroups bool
	// SeccompDefault gives containers the runtime's default seccomp profile when their
	// security context names none (otherwise they run unconfined), as the kubelet's
	// seccompDefault.
	SeccompDefault bool
	// MemorySwapBehavior is "" or "NoSwap": containers with a memory limit get no swap (on a
	// node whose memory cgroup accounts for swap). Nothing else is supported.
	MemorySwapBehavior string
	// DisableCPUCFSQuota stops cpu limits from becoming CFS quotas.
	DisableCPUCFSQuota bool

	// Images says how images are pulled: serialized or how many at a time, and the
	// per-image pull back-off.
	Images images.Config

	// HookTimeout bounds a postStart hook (the kubelet's is unbounded; berth's pod worker
	// must not hang on one); a preStop hook is bounded by the grace period. Default 2 min.
	HookTimeout time.Duration

	// MachineMemoryCapacity is the node's memory for the Burstable oom_score_adj formula;
	// 0 reads /proc/meminfo.
	MachineMemoryCapacity int64
	// NodeAllocatable answers the downward API's limits of a container that sets none; nil
	// means the machine's cpus and memory.
	NodeAllocatable v1.ResourceList

	// Objects gives env and envFrom their ConfigMaps and Secrets; nil makes a container
	// that refers to one fail with CreateContainerConfigError.
	Objects ObjectGetter
	// ServiceEnv returns the service environment variables of the pod's containers (the
	// kubelet's {SVC}_SERVICE_HOST, KUBERNETES_SERVICE_HOST...: envvars.Services.EnvFor); an
	// error holds the container back with CreateContainerConfigError; nil injects none.
	ServiceEnv func(ctx context.Context, pod *v1.Pod) (map[string]string, error)
	// Volumes gives the host path of volume types other than emptyDir and hostPath (which
	// the Manager handles itself); nil makes a container that mounts one fail with
	// CreateContainerConfigError.
	Volumes VolumeHost
	// Probes are the prober's verdicts (liveness and startup kill containers); nil passes
	// every probe.
	Probes ProbeResults
	// Actuated records the resources each container was created or last updated with, so
	// that a running container is resized in place when its pod's allocation changes; nil
	// resizes nothing.
	Actuated ActuatedResources
	// Clock is for tests; nil is the real clock.
	Clock clock.Clock
}

// ObjectGetter reads the API objects a container's environment refers to.
type ObjectGetter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// VolumeHost sets up the volumes the Manager does not handle itself (configMap, secret,
// downwardAPI, projected: the volume manager's).
type VolumeHost interface {
	// SetUpVolume makes the volume ready and returns its host path and whether containers
	// must mount it read-only; ok is false for a volume type it does not know.
	SetUpVolume(ctx context.Context, pod *v1.Pod, volume *v1.Volume) (path string, readOnly, ok bool, err error)
}

// Allocatable is what the downward API reports for a limit a container does not set.
func (m *Manager) Allocatable() v1.ResourceList { return m.allocatable }

// Manager implements container.Runtime over a CRI runtime service and image service.
type Manager struct {
	cfg      Config
	runtime  internalapi.RuntimeService
	images   internalapi.ImageManagerService
	recorder record.EventRecorder
	puller   *images.Puller
	clock    clock.Clock

	memoryCapacity int64
	allocatable    v1.ResourceList
	swapAccounting bool
	cgroups        cgroupMounts
	hookClient     *http.Client
	// etcHosts is the node's hosts file, copied into host-network pods.
	etcHosts string
}

var _ container.Runtime = &Manager{}

// NewManager returns a Manager for the runtime and image services of one CRI endpoint,
// recording pod events with recorder.
func NewManager(cfg Config, rt internalapi.RuntimeService, img internalapi.ImageManagerService, recorder record.EventRecorder) (*Manager, error) {
	if cfg.RuntimeName == "" {
		cfg.RuntimeName = DefaultRuntimeName
	}
	if cfg.PodLogsDir == "" {
		cfg.PodLogsDir = DefaultPodLogsDir
	}
	if cfg.RootDir == "" {
		cfg.RootDir = DefaultRootDir
	}
	if cfg.ResolvConf == "" {
		cfg.ResolvConf = DefaultResolvConf
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = "/"
	}
	if cfg.HookTimeout == 0 {
		cfg.HookTimeout = DefaultHookTimeout
	}
	if cfg.CgroupDriver != "" && cfg.CgroupDriver != "cgroupfs" {
		return nil, fmt.Errorf("cgroup driver %q is not supported: berth's node agent drives cgroupfs", cfg.CgroupDriver)
	}
	if cfg.MemorySwapBehavior != "" && cfg.MemorySwapBehavior != "NoSwap" {
		return nil, fmt.Errorf("memory swap behavior %q is not supported: only NoSwap", cfg.MemorySwapBehavior)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	for _, dir := range []string{cfg.PodLogsDir, filepath.Join(cfg.RootDir, "pods")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("creating %s: %w", dir, err)
		}
	}
	m := &Manager{
		cfg:      cfg,
		runtime:  rt,
		images:   img,
		recorder: recorder,
		clock:    cfg.Clock,
		etcHosts: "/etc/hosts",
		hookClient: &http.Client{
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true},
			// Hooks do not follow redirects off the pod: the first answer counts.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	m.puller = images.NewPuller(cfg.Images, m, recorder)

	var err error
	m.memoryCapacity = cfg.MachineMemoryCapacity
	if m.memoryCapacity == 0 {
		if m.memoryCapacity, err = readMemTotal("/proc/meminfo"); err != nil {
			return nil, err
		}
	}
	m.allocatable = cfg.NodeAllocatable
	if m.allocatable == nil {
		m.allocatable = v1.ResourceList{
			v1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
			v1.ResourceMemory: *resource.NewQuantity(m.memoryCapacity, resource.BinarySI),
		}
	}
	if !cfg.NoPodCgroups {
		if m.cgroups, err = findCgroupMounts("/proc/self/mountinfo"); err != nil {
			return nil, err
		}
		m.swapAccounting = m.cgroups.swapAccounting()
	}
	return m, nil
}

// readMemTotal reads MemTotal from a meminfo file, in bytes.
func readMemTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("reading the machine's memory: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parsing MemTotal in %s: %w", path, err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in %s", path)
}

// Type is the runtime's name.
func (m *Manager) Type() string { return m.cfg.RuntimeName }

// Version is the runtime's version ("1.6.20").
func (m *Manager) Version(ctx context.Context) (string, error) {
	resp, err := m.runtime.Version(ctx, "")
	if err != nil {
		return "", fmt.Errorf("runtime version: %w", err)
	}
	return resp.RuntimeVersion, nil
}

// Status is the runtime's health: its RuntimeReady and NetworkReady conditions.
func (m *Manager) Status(ctx context.Context) (*container.RuntimeStatus, error) {
	resp, err := m.runtime.Status(ctx, false)
	if err != nil {
		return nil, fmt.Errorf("runtime status: %w", err)
	}
	if resp.GetStatus() == nil {
		return nil, errors.New("runtime status is nil")
	}
	out := &container.RuntimeStatus{}
	for _, c := range resp.Status.Conditions {
		out.Conditions = append(out.Conditions, container.RuntimeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, Message: c.Message})
	}
	return out, nil
}

// PullImage pulls an image with the given credentials (nil for none).
func (m *Manager) PullImage(ctx context.Context, image container.ImageSpec, auth *runtimeapi.AuthConfig, podSandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	return m.images.PullImage(ctx, &runtimeapi.ImageSpec{Image: image.Image, RuntimeHandler: image.RuntimeHandler}, auth, podSandboxConfig)
}

// GetImageRef returns the image's id, "" when the runtime does not have it.
func (m *Manager) GetImageRef(ctx context.Context, image container.ImageSpec) (string, error) {
	resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image.Image, RuntimeHandler: image.RuntimeHandler}, false)
	if err != nil {
		return "", err
	}
	return resp.GetImage().GetId(), nil
}

// GetImageSize returns the image's size, 0 when the runtime does not have it.
func (m *Manager) GetImageSize(ctx context.Context, image container.ImageSpec) (uint64, error) {
	resp, err := m.images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: image.Image, RuntimeHandler: image.RuntimeHandler}, false)
	if err != nil {
		return 0, err
	}
	return resp.GetImage().GetSize(), nil
}

// ListImages lists the runtime's images.
func (m *Manager) ListImages(ctx context.Context) ([]container.Image, error) {
	list, err := m.images.ListImages(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing images: %w", err)
	}
	out := make([]container.Image, 0, len(list))
	for _, img := range list {
		out = append(out, container.Image{ID: img.Id, RepoTags: img.RepoTags, RepoDigests: img.RepoDigests, Size: int64(img.Size), Pinned: img.Pinned})
	}
	return out, nil
}

// RemoveImage removes an image.
func (m *Manager) RemoveImage(ctx context.Context, image container.ImageSpec) error {
	return m.images.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: image.Image, RuntimeHandler: image.RuntimeHandler})
}

// ImageFsInfo reports the image filesystem's usage.
func (m *Manager) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return m.images.ImageFsInfo(ctx)
}

// podDir is the pod's directory under RootDir.
func (m *Manager) podDir(uid string) string {
	return filepath.Join(m.cfg.RootDir, "pods", uid)
}

// PodDir returns the pod's directory, RootDir/pods/<uid>: the lead's cleanup removes it.
func (m *Manager) PodDir(uid string) string { return m.podDir(uid) }

// podLogsDir is the pod's log directory: PodLogsDir/<ns>_<name>_<uid>.
func (m *Manager) podLogsDir(namespace, name, uid string) string {
	return container.PodLogsDir(m.cfg.PodLogsDir, namespace, name, uid)
}
