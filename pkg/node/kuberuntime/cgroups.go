package kuberuntime

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/berth-cluster/berth/pkg/qos"
)

// cgroupMount is one mounted cgroup hierarchy: a v1 hierarchy of some controllers, or the
// v2 unified one.
type cgroupMount struct {
	dir         string
	controllers []string
	v2          bool
}

type cgroupMounts []cgroupMount

// v1Controllers are the cgroup v1 controllers (a hierarchy's other options are not).
var v1Controllers = map[string]bool{
	"blkio": true, "cpu": true, "cpuacct": true, "cpuset": true, "devices": true, "freezer": true,
	"hugetlb": true, "memory": true, "misc": true, "net_cls": true, "net_prio": true,
	"perf_event": true, "pids": true, "rdma": true,
}

// findCgroupMounts reads the cgroup hierarchies from a mountinfo file. On a hybrid system
// (v1 controllers and a unified mount beside them) only the v1 hierarchies count, as they do
// for runc.
func findCgroupMounts(mountinfo string) (cgroupMounts, error) {
	f, err := os.Open(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("finding cgroup mounts: %w", err)
	}
	defer f.Close()
	var v1mounts, v2mounts cgroupMounts
	seen := map[string]bool{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		// id parent major:minor root mountpoint options [optional...] - fstype source superoptions
		before, after, ok := strings.Cut(s.Text(), " - ")
		if !ok {
			continue
		}
		fields, tail := strings.Fields(before), strings.Fields(after)
		if len(fields) < 5 || len(tail) < 3 {
			continue
		}
		dir := fields[4]
		switch tail[0] {
		case "cgroup":
			var controllers []string
			for _, opt := range strings.Split(tail[2], ",") {
				if v1Controllers[opt] || strings.HasPrefix(opt, "name=") {
					controllers = append(controllers, opt)
				}
			}
			key := strings.Join(controllers, ",")
			if len(controllers) == 0 || seen[key] {
				continue // a bind mount of a hierarchy already found
			}
			seen[key] = true
			v1mounts = append(v1mounts, cgroupMount{dir: dir, controllers: controllers})
		case "cgroup2":
			v2mounts = append(v2mounts, cgroupMount{dir: dir, v2: true})
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", mountinfo, err)
	}
	if len(v1mounts) > 0 {
		return v1mounts, nil
	}
	return v2mounts, nil
}

func (ms cgroupMounts) has(controller string) (cgroupMount, bool) {
	for _, m := range ms {
		for _, c := range m.controllers {
			if c == controller {
				return m, true
			}
		}
	}
	return cgroupMount{}, false
}

// swapAccounting reports a v1 memory hierarchy that limits swap (memory.memsw.*).
func (ms cgroupMounts) swapAccounting() bool {
	m, ok := ms.has("memory")
	if !ok {
		return false
	}
	_, err := os.Stat(filepath.Join(m.dir, "memory.memsw.limit_in_bytes"))
	return err == nil
}

// ensure creates the cgroup at path (an absolute cgroupfs path such as
// /kubepods/burstable/pod<uid>) and its parents in every hierarchy, so that the runtime finds
// the parents it places containers under. In the cpuset hierarchy a new cgroup inherits
// its parent's cpus and mems (it could hold no task otherwise).
func (ms cgroupMounts) ensure(cgroupPath string) error {
	if len(ms) == 0 {
		return errors.New("no cgroup hierarchy is mounted")
	}
	for _, m := range ms {
		dir := m.dir
		for _, part := range strings.Split(strings.Trim(path.Clean(cgroupPath), "/"), "/") {
			if part == "" {
				continue
			}
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil {
				if os.IsExist(err) {
					continue
				}
				return fmt.Errorf("cannot create cgroup %s in the %s hierarchy at %s: %w", cgroupPath, m.name(), m.dir, err)
			}
			if m.hasController("cpuset") {
				for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
					if err := inheritCgroupFile(parent, dir, file); err != nil {
						return fmt.Errorf("cannot set up cgroup %s in the cpuset hierarchy: %w", cgroupPath, err)
					}
				}
			}
		}
	}
	return nil
}

// remove removes the cgroup at path from every hierarchy; a cgroup still holding a task
// stays (and is reported).
func (ms cgroupMounts) remove(cgroupPath string) error {
	var errs []error
	for _, m := range ms {
		dir := filepath.Join(m.dir, cgroupPath)
		if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
			errs = append(errs, fmt.Errorf("removing cgroup %s from the %s hierarchy: %w", cgroupPath, m.name(), err))
		}
	}
	return errors.Join(errs...)
}

func (m cgroupMount) hasController(c string) bool {
	for _, have := range m.controllers {
		if have == c {
			return true
		}
	}
	return false
}

func (m cgroupMount) name() string {
	if m.v2 {
		return "unified"
	}
	return strings.Join(m.controllers, ",")
}

// inheritCgroupFile copies a cgroup file from parent to child when the child's is empty.
func inheritCgroupFile(parent, child, file string) error {
	cur, err := os.ReadFile(filepath.Join(child, file))
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	val, err := os.ReadFile(filepath.Join(parent, file))
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(child, file), val, 0o644)
}

// podCgroupParent is the cgroupfs path of the pod's cgroup, by QoS class as the kubelet
// lays them out: <root>/kubepods/pod<uid> for Guaranteed pods,
// <root>/kubepods/burstable/pod<uid> and <root>/kubepods/besteffort/pod<uid>.
func podCgroupParent(root string, pod *v1.Pod) string {
	base := path.Join(root, "kubepods")
	switch qos.PodQOSClass(pod) {
	case v1.PodQOSBurstable:
		base = path.Join(base, "burstable")
	case v1.PodQOSBestEffort:
		base = path.Join(base, "besteffort")
	}
	return path.Join(base, "pod"+string(pod.UID))
}

// podCgroupParent is the pod's cgroup, or "" without pod cgroups.
func (m *Manager) podCgroupParent(pod *v1.Pod) string {
	if m.cfg.NoPodCgroups {
		return ""
	}
	return podCgroupParent(m.cfg.CgroupRoot, pod)
}

// setUpPodCgroup creates the pod's cgroup under its QoS class's and sets the pod's limits
// on it (and the minimum weight on the besteffort class).
func (m *Manager) setUpPodCgroup(pod *v1.Pod, cgroupPath string) error {
	if cgroupPath == "" {
		return nil
	}
	if err := m.cgroups.ensure(cgroupPath); err != nil {
		return err
	}
	if qos.PodQOSClass(pod) == v1.PodQOSBestEffort {
		// The BestEffort class shares what the others leave: the minimum weight.
		if err := m.cgroups.set(path.Dir(cgroupPath), cgroupResources{cpuShares: minShares}); err != nil {
			return err
		}
	}
	return m.cgroups.set(cgroupPath, m.podCgroupResources(pod))
}

// RemovePodCgroup removes the pod's cgroup once nothing of it runs (the lead's cleanup of a
// terminated pod calls it, as the kubelet's pod container manager does).
func (m *Manager) RemovePodCgroup(pod *v1.Pod) error {
	if m.cfg.NoPodCgroups {
		return nil
	}
	return m.cgroups.remove(podCgroupParent(m.cfg.CgroupRoot, pod))
}

// cgroupResources are a pod cgroup's limits; zero leaves a file as it is.
type cgroupResources struct {
	cpuShares, cpuQuota, cpuPeriod, memoryLimit int64
}

// podCgroupResources are the limits of the pod's cgroup, as the kubelet's pod container
// manager sets them (ResourceConfigForPod): cpu.shares from the pod's cpu requests (the
// minimum for BestEffort); a CFS quota only when every container has a cpu limit, a memory
// limit only when every container has a memory limit. The pod's requests and limits count
// init containers and sidecars as the scheduler does.
func (m *Manager) podCgroupResources(pod *v1.Pod) cgroupResources {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	if qos.PodQOSClass(pod) == v1.PodQOSBestEffort {
		return cgroupResources{cpuShares: minShares}
	}
	r := cgroupResources{cpuShares: milliCPUToShares(requests.Cpu().MilliValue())}
	cpuLimited, memoryLimited := true, true
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if _, ok := c.Resources.Limits[v1.ResourceCPU]; !ok {
			cpuLimited = false
		}
		if _, ok := c.Resources.Limits[v1.ResourceMemory]; !ok {
			memoryLimited = false
		}
	}
	if cpuLimited && !m.cfg.DisableCPUCFSQuota {
		r.cpuPeriod = quotaPeriod
		r.cpuQuota = milliCPUToQuota(limits.Cpu().MilliValue(), quotaPeriod)
	}
	if memoryLimited {
		r.memoryLimit = limits.Memory().Value()
	}
	return r
}

// set writes the limits into the cgroup at path in the hierarchies that hold each controller
// (cpu.shares, cpu.cfs_*, memory.limit_in_bytes on v1; cpu.weight, cpu.max, memory.max on v2).
func (ms cgroupMounts) set(cgroupPath string, r cgroupResources) error {
	write := func(dir, file string, v string) error {
		if err := os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644); err != nil {
			return fmt.Errorf("setting %s of cgroup %s: %w", file, cgroupPath, err)
		}
		return nil
	}
	var errs []error
	for _, m := range ms {
		dir := filepath.Join(m.dir, cgroupPath)
		switch {
		case m.v2:
			if r.cpuShares > 0 {
				errs = append(errs, write(dir, "cpu.weight", fmt.Sprint(1+((r.cpuShares-2)*9999)/262142)))
			}
			if r.cpuQuota > 0 {
				errs = append(errs, write(dir, "cpu.max", fmt.Sprintf("%d %d", r.cpuQuota, r.cpuPeriod)))
			}
			if r.memoryLimit > 0 {
				errs = append(errs, write(dir, "memory.max", fmt.Sprint(r.memoryLimit)))
			}
		case m.hasController("cpu"):
			if r.cpuShares > 0 {
				errs = append(errs, write(dir, "cpu.shares", fmt.Sprint(r.cpuShares)))
			}
			if r.cpuQuota > 0 {
				errs = append(errs, write(dir, "cpu.cfs_period_us", fmt.Sprint(r.cpuPeriod)), write(dir, "cpu.cfs_quota_us", fmt.Sprint(r.cpuQuota)))
			}
		case m.hasController("memory"):
			if r.memoryLimit > 0 {
				errs = append(errs, write(dir, "memory.limit_in_bytes", fmt.Sprint(r.memoryLimit)))
			}
		}
	}
	return errors.Join(errs...)
}

// get reads the limits of the cgroup at path: cpu.shares, the CFS quota and period (quota -1:
// none) and the memory limit (an unlimited v1 limit reads as a huge number, v2's "max" as
// math.MaxInt64), from the hierarchies that hold each controller.
func (ms cgroupMounts) get(cgroupPath string) (cgroupResources, error) {
	var r cgroupResources
	read := func(dir, file string) (string, error) {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return "", fmt.Errorf("reading %s of cgroup %s: %w", file, cgroupPath, err)
		}
		return strings.TrimSpace(string(data)), nil
	}
	readInt := func(dir, file string) (int64, error) {
		s, err := read(dir, file)
		if err != nil {
			return 0, err
		}
		if s == "max" {
			return math.MaxInt64, nil
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %s of cgroup %s: %w", file, cgroupPath, err)
		}
		return v, nil
	}
	for _, m := range ms {
		dir := filepath.Join(m.dir, cgroupPath)
		var err error
		switch {
		case m.v2:
			var weight int64
			if weight, err = readInt(dir, "cpu.weight"); err != nil {
				return r, err
			}
			// The inverse of set's conversion.
			r.cpuShares = 2 + ((weight-1)*262142)/9999
			var max string
			if max, err = read(dir, "cpu.max"); err != nil {
				return r, err
			}
			quota, period, _ := strings.Cut(max, " ")
			r.cpuQuota = -1
			if quota != "max" {
				r.cpuQuota, _ = strconv.ParseInt(quota, 10, 64)
			}
			r.cpuPeriod, _ = strconv.ParseInt(period, 10, 64)
			if r.memoryLimit, err = readInt(dir, "memory.max"); err != nil {
				return r, err
			}
		case m.hasController("cpu"):
			if r.cpuShares, err = readInt(dir, "cpu.shares"); err != nil {
				return r, err
			}
			if r.cpuQuota, err = readInt(dir, "cpu.cfs_quota_us"); err != nil {
				return r, err
			}
			if r.cpuPeriod, err = readInt(dir, "cpu.cfs_period_us"); err != nil {
				return r, err
			}
		case m.hasController("memory"):
			if r.memoryLimit, err = readInt(dir, "memory.limit_in_bytes"); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

// memoryUsage is the memory the cgroup at path uses now.
func (ms cgroupMounts) memoryUsage(cgroupPath string) (int64, error) {
	for _, m := range ms {
		file := ""
		switch {
		case m.v2:
			file = "memory.current"
		case m.hasController("memory"):
			file = "memory.usage_in_bytes"
		default:
			continue
		}
		data, err := os.ReadFile(filepath.Join(m.dir, cgroupPath, file))
		if err != nil {
			return 0, fmt.Errorf("reading the memory usage of cgroup %s: %w", cgroupPath, err)
		}
		return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	}
	return 0, errors.New("no memory cgroup hierarchy is mounted")
}
