package kuberuntime

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/volume"
	"github.com/berth-cluster/berth/pkg/node/volume/subpath"
)

const etcHostsPath = "/etc/hosts"

// makeMounts are the container's mounts: its volume mounts (with subPath), the pod's managed
// /etc/hosts (unless the container mounts its own) and its termination message file.
func (m *Manager) makeMounts(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string, env map[string]string) ([]*runtimeapi.Mount, error) {
	var mounts []*runtimeapi.Mount
	mountHosts := len(podIPs) > 0 || pod.Spec.HostNetwork
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == etcHostsPath {
			mountHosts = false
		}
		hostPath, readOnly, err := m.volumeHostPath(ctx, pod, vm.Name)
		if err != nil {
			return nil, fmt.Errorf("cannot find volume %q to mount into container %q: %w", vm.Name, c.Name, err)
		}
		subPath := vm.SubPath
		if vm.SubPathExpr != "" {
			if subPath, err = expandSubPath(vm.SubPathExpr, env); err != nil {
				return nil, err
			}
		}
		if subPath != "" {
			if hostPath, err = subpath.Prepare(hostPath, subPath); err != nil {
				return nil, err
			}
		}
		mount := &runtimeapi.Mount{
			ContainerPath: vm.MountPath,
			HostPath:      hostPath,
			Readonly:      vm.ReadOnly || readOnly,
			Propagation:   runtimeapi.MountPropagation_PROPAGATION_PRIVATE,
		}
		if vm.MountPropagation != nil {
			switch *vm.MountPropagation {
			case v1.MountPropagationHostToContainer:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		mounts = append(mounts, mount)
	}
	if mountHosts {
		path, err := m.ensureHostsFile(ctx, pod, podIPs)
		if err != nil {
			return nil, err
		}
		mounts = append(mounts, &runtimeapi.Mount{ContainerPath: etcHostsPath, HostPath: path})
	}
	if c.TerminationMessagePath != "" {
		// A new file per container instance, so that a restart starts with an empty message.
		dir := filepath.Join(m.podDir(string(pod.UID)), "containers", c.Name)
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("creating the termination message directory: %w", err)
		}
		var id [4]byte
		_, _ = rand.Read(id[:])
		file := filepath.Join(dir, hex.EncodeToString(id[:]))
		if err := os.WriteFile(file, nil, 0o666); err != nil {
			klog.FromContext(ctx).Error(err, "Error on creating termination-log file", "path", file)
		} else if err := os.Chmod(file, 0o666); err == nil {
			mounts = append(mounts, &runtimeapi.Mount{ContainerPath: c.TerminationMessagePath, HostPath: file})
		}
	}
	return mounts, nil
}

// volumeHostPath is where the pod's volume lives on the host. emptyDir volumes are
// directories of the pod (mode 0777, or a tmpfs for medium Memory); hostPath volumes are
// the host's paths, checked or created as their type says; other volumes come from
// Config.Volumes.
func (m *Manager) volumeHostPath(ctx context.Context, pod *v1.Pod, name string) (string, bool, error) {
	var vol *v1.Volume
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			vol = &pod.Spec.Volumes[i]
		}
	}
	if vol == nil {
		return "", false, errors.New("no such volume in the pod")
	}
	switch {
	case vol.EmptyDir != nil:
		path, err := m.ensureEmptyDir(pod, vol)
		return path, false, err
	case vol.HostPath != nil:
		return vol.HostPath.Path, false, checkHostPath(vol.HostPath)
	}
	if m.cfg.Volumes != nil {
		path, readOnly, ok, err := m.cfg.Volumes.SetUpVolume(ctx, pod, vol)
		if ok {
			return path, readOnly, err
		}
	}
	return "", false, errors.New("this volume type is not supported by berth's node agent yet")
}

// emptyDirPath is RootDir/pods/<uid>/volumes/kubernetes.io~empty-dir/<name>.
func (m *Manager) emptyDirPath(uid, name string) string {
	return volume.Dir(m.podDir(uid), volume.EmptyDirPlugin, name)
}

func (m *Manager) ensureEmptyDir(pod *v1.Pod, vol *v1.Volume) (string, error) {
	dir := m.emptyDirPath(string(pod.UID), vol.Name)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if vol.EmptyDir.Medium == v1.StorageMediumMemory {
		// The tmpfs root is the kernel's 1777 (sticky, as /tmp), as the kubelet's is: a subPath
		// created in it inherits that mode. Chmod-ing it would drop the sticky bit.
		if err := m.mountTmpfs(dir, m.emptyDirMemorySize(pod, vol.EmptyDir)); err != nil {
			return "", err
		}
	} else if err := os.Chmod(dir, 0o777); err != nil {
		// Any user of any container may write it; chmod because of the umask.
		return "", err
	}
	return dir, volume.SetOwnership(dir, pod, false)
}

// emptyDirMemorySize is the size of a memory-backed emptyDir's tmpfs, as the kubelet computes
// it (calculateEmptyDirMemorySize): the node's allocatable memory, lowered to the pod's memory
// limit when every container has one (the pod cgroup's limit), and to the volume's sizeLimit
// when that is set and smaller still. A sizeLimit is optional: nil means no limit of its own.
func (m *Manager) emptyDirMemorySize(pod *v1.Pod, ed *v1.EmptyDirVolumeSource) int64 {
	size := m.allocatable.Memory().Value()
	if limit := m.podCgroupResources(pod).memoryLimit; limit > 0 && (size <= 0 || limit < size) {
		size = limit
	}
	if ed.SizeLimit != nil && ed.SizeLimit.Sign() > 0 && (size <= 0 || ed.SizeLimit.Value() < size) {
		size = ed.SizeLimit.Value()
	}
	return size
}

// mountTmpfs mounts a tmpfs at dir unless one is there, of size bytes (0: the kernel's
// default, half the machine's memory).
func (m *Manager) mountTmpfs(dir string, size int64) error {
	var st, parent syscall.Statfs_t
	if syscall.Statfs(dir, &st) == nil && syscall.Statfs(filepath.Dir(dir), &parent) == nil && st.Type == 0x01021994 && st.Fsid != parent.Fsid {
		return nil // TMPFS_MAGIC, and not the parent's filesystem: already mounted
	}
	opts := ""
	if size > 0 {
		opts = fmt.Sprintf("size=%d", size)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs at %s: %w", dir, err)
	}
	return nil
}

// checkHostPath checks (or creates) a hostPath volume's path as its type asks.
func checkHostPath(hp *v1.HostPathVolumeSource) error {
	t := v1.HostPathUnset
	if hp.Type != nil {
		t = *hp.Type
	}
	info, err := os.Stat(hp.Path)
	switch t {
	case v1.HostPathUnset:
		return nil
	case v1.HostPathDirectoryOrCreate:
		if os.IsNotExist(err) {
			return os.MkdirAll(hp.Path, 0o755)
		}
	case v1.HostPathFileOrCreate:
		if os.IsNotExist(err) {
			if err := os.MkdirAll(filepath.Dir(hp.Path), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(hp.Path, os.O_CREATE|os.O_RDONLY, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("hostPath type check failed: %s is not a %s: %w", hp.Path, t, err)
	}
	mode := info.Mode()
	ok := map[v1.HostPathType]bool{
		v1.HostPathDirectoryOrCreate: mode.IsDir(),
		v1.HostPathDirectory:         mode.IsDir(),
		v1.HostPathFileOrCreate:      mode.IsRegular(),
		v1.HostPathFile:              mode.IsRegular(),
		v1.HostPathSocket:            mode&os.ModeSocket != 0,
		v1.HostPathCharDev:           mode&os.ModeCharDevice != 0,
		v1.HostPathBlockDev:          mode&os.ModeDevice != 0 && mode&os.ModeCharDevice == 0,
	}[t]
	if !ok {
		return fmt.Errorf("hostPath type check failed: %s is not a %s", hp.Path, t)
	}
	return nil
}

// expandSubPath expands a subPathExpr with the container's environment; every variable it
// names must be set.
func expandSubPath(expr string, env map[string]string) (string, error) {
	var missing []string
	out := container.Expand(expr, func(name string) (string, bool) {
		v, ok := env[name]
		if !ok || v == "" {
			missing = append(missing, name)
		}
		return v, true
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("missing value for %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// ensureHostsFile writes the pod's managed /etc/hosts: localhost, the pod's own name at its
// IPs and the pod's hostAliases; a host-network pod gets the node's file plus its aliases.
func (m *Manager) ensureHostsFile(ctx context.Context, pod *v1.Pod, podIPs []string) (string, error) {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		node, err := os.ReadFile(m.etcHosts)
		if err != nil {
			return "", err
		}
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(node)
	} else {
		hostname, domain, err := m.podHostnameAndDomain(ctx, pod)
		if err != nil {
			return "", err
		}
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		for _, ip := range podIPs {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	dir := m.podDir(string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o644)
}

// RemovePodDir removes the pod's directory (volumes, /etc/hosts, termination messages),
// unmounting its memory-backed emptyDirs first. The lead's cleanup of a terminated pod
// calls it once no container of the pod runs.
func (m *Manager) RemovePodDir(uid string) error {
	// emptyDir tmpfs, secret and projected volumes are mounts: undo them first.
	volumes := filepath.Join(m.podDir(uid), "volumes")
	plugins, _ := os.ReadDir(volumes)
	for _, p := range plugins {
		entries, _ := os.ReadDir(filepath.Join(volumes, p.Name()))
		for _, e := range entries {
			dir := filepath.Join(volumes, p.Name(), e.Name())
			var st, parent syscall.Statfs_t
			if syscall.Statfs(dir, &st) == nil && syscall.Statfs(volumes, &parent) == nil && (st.Fsid != parent.Fsid || st.Type != parent.Type) {
				if err := syscall.Unmount(dir, 0); err != nil {
					return fmt.Errorf("unmounting %s: %w", dir, err)
				}
			}
		}
	}
	return os.RemoveAll(m.podDir(uid))
}
