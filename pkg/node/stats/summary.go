// Package stats builds the node API's /stats/summary (the kubelet's Summary API, which
// metrics-server and `kubectl top` read): the node's CPU, memory and filesystems from the
// machine, the image filesystem and the containers' usage from the runtime through the CRI.
package stats

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// Provider answers the Summary API.
type Provider struct {
	nodeName string
	rootDir  string // the node agent's root: its filesystem is nodefs
	logsDir  string // the pods' log directories (containerLogManager's root)
	start    time.Time
	runtime  internalapi.RuntimeService
	images   internalapi.ImageManagerService
	pods     func() []*v1.Pod

	mu sync.Mutex
	// last CPU samples (cumulative nanoseconds and when), to turn them into nano cores.
	last map[string]cpuSample
}

type cpuSample struct {
	total uint64
	at    time.Time
}

// NewProvider returns the Summary API over the runtime; pods are the node agent's pods, whose
// containers log under podLogsDir.
func NewProvider(nodeName, rootDir, podLogsDir string, runtime internalapi.RuntimeService, images internalapi.ImageManagerService, pods func() []*v1.Pod) *Provider {
	return &Provider{nodeName: nodeName, rootDir: rootDir, logsDir: podLogsDir, start: time.Now(), runtime: runtime, images: images, pods: pods, last: map[string]cpuSample{}}
}

// Summary is the node's and its pods' usage now.
func (p *Provider) Summary(ctx context.Context) (*statsapi.Summary, error) {
	now := metav1.Now()
	node := statsapi.NodeStats{NodeName: p.nodeName, StartTime: metav1.NewTime(p.start)}
	if total, err := machineCPU(); err == nil {
		node.CPU = p.cpuStats("node", total, now.Time)
	}
	if mem, err := machineMemory(now); err == nil {
		node.Memory = mem
	}
	node.Fs = fsStats(p.rootDir, now)
	imageFs, err := p.imageFs(ctx, now)
	if err != nil {
		return nil, err
	}
	node.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs}
	node.Rlimit = processLimits(now)

	stats, err := p.runtime.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("listing container stats: %w", err)
	}
	containers, err := p.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	running := map[string]*runtimeapi.Container{}
	for _, c := range containers {
		running[c.Id] = c
	}
	byPod := map[string]*statsapi.PodStats{}
	logDirs := map[string]string{}
	for _, pod := range p.pods() {
		logDirs[string(pod.UID)] = container.PodLogsDir(p.logsDir, pod.Namespace, pod.Name, string(pod.UID))
		byPod[string(pod.UID)] = &statsapi.PodStats{
			PodRef:    statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)},
			StartTime: podStart(pod),
		}
	}
	for _, s := range stats {
		c, ok := running[s.GetAttributes().GetId()]
		if !ok {
			continue
		}
		uid := c.Labels["io.kubernetes.pod.uid"]
		ps, ok := byPod[uid]
		if !ok {
			continue
		}
		cs := statsapi.ContainerStats{
			Name:      s.GetAttributes().GetMetadata().GetName(),
			StartTime: metav1.NewTime(time.Unix(0, c.CreatedAt)),
		}
		if cpu := s.GetCpu(); cpu != nil && cpu.UsageCoreNanoSeconds != nil {
			cs.CPU = p.cpuStats(c.Id, cpu.UsageCoreNanoSeconds.Value, now.Time)
		}
		if mem := s.GetMemory(); mem != nil {
			cs.Memory = &statsapi.MemoryStats{Time: now}
			if mem.WorkingSetBytes != nil {
				cs.Memory.WorkingSetBytes = ptr(mem.WorkingSetBytes.Value)
			}
			if mem.UsageBytes != nil {
				cs.Memory.UsageBytes = ptr(mem.UsageBytes.Value)
			}
			if mem.RssBytes != nil {
				cs.Memory.RSSBytes = ptr(mem.RssBytes.Value)
			}
		}
		if fs := s.GetWritableLayer(); fs != nil && fs.UsedBytes != nil {
			cs.Rootfs = &statsapi.FsStats{Time: now, UsedBytes: ptr(fs.UsedBytes.Value)}
		}
		if used, err := DiskUsage(filepath.Join(logDirs[uid], cs.Name)); err == nil {
			cs.Logs = &statsapi.FsStats{Time: now, UsedBytes: ptr(uint64(used))}
		}
		ps.Containers = append(ps.Containers, cs)
		addPod(ps, &cs, now)
	}
	summary := &statsapi.Summary{Node: node}
	for _, ps := range byPod {
		summary.Pods = append(summary.Pods, *ps)
	}
	p.forget(running)
	return summary, nil
}

// cpuStats turns a cumulative sample into usage, with the rate since the last sample.
func (p *Provider) cpuStats(key string, total uint64, now time.Time) *statsapi.CPUStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := &statsapi.CPUStats{Time: metav1.NewTime(now), UsageCoreNanoSeconds: ptr(total)}
	if prev, ok := p.last[key]; ok && now.After(prev.at) && total >= prev.total {
		s.UsageNanoCores = ptr(uint64(float64(total-prev.total) / now.Sub(prev.at).Seconds()))
	}
	p.last[key] = cpuSample{total: total, at: now}
	return s
}

// forget drops the CPU samples of containers that no longer run.
func (p *Provider) forget(running map[string]*runtimeapi.Container) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.last {
		if _, ok := running[k]; !ok && k != "node" {
			delete(p.last, k)
		}
	}
}

// addPod adds a container's usage to its pod's.
func addPod(ps *statsapi.PodStats, cs *statsapi.ContainerStats, now metav1.Time) {
	if cs.CPU != nil {
		if ps.CPU == nil {
			ps.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: ptr(uint64(0)), UsageNanoCores: ptr(uint64(0))}
		}
		*ps.CPU.UsageCoreNanoSeconds += *cs.CPU.UsageCoreNanoSeconds
		if cs.CPU.UsageNanoCores != nil {
			*ps.CPU.UsageNanoCores += *cs.CPU.UsageNanoCores
		}
	}
	if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
		if ps.Memory == nil {
			ps.Memory = &statsapi.MemoryStats{Time: now, WorkingSetBytes: ptr(uint64(0))}
		}
		*ps.Memory.WorkingSetBytes += *cs.Memory.WorkingSetBytes
	}
}

func podStart(pod *v1.Pod) metav1.Time {
	if pod.Status.StartTime != nil {
		return *pod.Status.StartTime
	}
	return pod.CreationTimestamp
}

// imageFs is the runtime's image filesystem: its usage from the CRI, its size from statfs.
func (p *Provider) imageFs(ctx context.Context, now metav1.Time) (*statsapi.FsStats, error) {
	resp, err := p.images.ImageFsInfo(ctx)
	if err != nil {
		return nil, fmt.Errorf("image filesystem info: %w", err)
	}
	fs := resp.GetImageFilesystems()
	if len(fs) == 0 {
		return nil, fmt.Errorf("the runtime reports no image filesystem")
	}
	s := fsStats(fs[0].GetFsId().GetMountpoint(), now)
	if fs[0].UsedBytes != nil {
		s.UsedBytes = ptr(fs[0].UsedBytes.Value)
	}
	if fs[0].InodesUsed != nil {
		s.InodesUsed = ptr(fs[0].InodesUsed.Value)
	}
	return s, nil
}

// fsStats is the filesystem holding path.
func fsStats(path string, now metav1.Time) *statsapi.FsStats {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return &statsapi.FsStats{Time: now}
	}
	bs := uint64(st.Bsize)
	return &statsapi.FsStats{
		Time:           now,
		CapacityBytes:  ptr(st.Blocks * bs),
		AvailableBytes: ptr(st.Bavail * bs),
		UsedBytes:      ptr((st.Blocks - st.Bfree) * bs),
		Inodes:         ptr(st.Files),
		InodesFree:     ptr(st.Ffree),
		InodesUsed:     ptr(st.Files - st.Ffree),
	}
}

// machineCPU is the CPU time all cores have spent busy, in nanoseconds (/proc/stat).
func machineCPU() (uint64, error) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 8 || fields[0] != "cpu" {
			continue
		}
		var busy uint64
		for i, v := range fields[1:] {
			if i == 3 || i == 4 { // idle, iowait
				continue
			}
			n, _ := strconv.ParseUint(v, 10, 64)
			busy += n
		}
		// USER_HZ is 100 on Linux.
		return busy * uint64(time.Second/100), nil
	}
	return 0, fmt.Errorf("no cpu line in /proc/stat")
}

// machineMemory is the node's memory from /proc/meminfo: the working set is what is used
// minus the inactive file cache, as the kubelet counts it.
func machineMemory(now metav1.Time) (*statsapi.MemoryStats, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	kb := map[string]uint64{}
	for _, line := range strings.Split(string(data), "\n") {
		name, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) > 0 {
			n, _ := strconv.ParseUint(f[0], 10, 64)
			kb[name] = n * 1024
		}
	}
	total, free := kb["MemTotal"], kb["MemFree"]
	usage := total - free
	workingSet := usage
	if inactive := kb["Inactive(file)"]; inactive < workingSet {
		workingSet -= inactive
	}
	return &statsapi.MemoryStats{
		Time:            now,
		AvailableBytes:  ptr(total - workingSet),
		UsageBytes:      ptr(usage),
		WorkingSetBytes: ptr(workingSet),
	}, nil
}

func ptr(v uint64) *uint64 { return &v }

// processLimits is the node's process ID limit and how many processes run (the Summary's
// rlimit, which pid.available is judged on): the lower of kernel.pid_max and
// kernel.threads-max, and sysinfo's process count.
func processLimits(now metav1.Time) *statsapi.RlimitStats {
	r := &statsapi.RlimitStats{Time: now}
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && (r.MaxPID == nil || n < *r.MaxPID) {
			r.MaxPID = &n
		}
	}
	var info syscall.Sysinfo_t
	if err := syscall.Sysinfo(&info); err == nil {
		procs := int64(info.Procs)
		r.NumOfRunningProcesses = &procs
	}
	return r
}

// DiskUsage is the space the files under dir take on disk, as du counts it.
func DiskUsage(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		}
		return nil
	})
	return total, err
}
