package kuberuntime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"

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

// RemovePodCgroup removes the pod's cgroup once nothing of it runs (the lead's cleanup of a
// terminated pod calls it, as the kubelet's pod container manager does).
func (m *Manager) RemovePodCgroup(pod *v1.Pod) error {
	return m.cgroups.remove(podCgroupParent(m.cfg.CgroupRoot, pod))
}
