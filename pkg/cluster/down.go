package cluster

// `berth down`: the process record `berth up` keeps in its data dir, stopping that process,
// and the clean-up after its node for good.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/berth-cluster/berth/pkg/cri/containerd"
	"github.com/berth-cluster/berth/pkg/proxy"
	"github.com/berth-cluster/berth/pkg/util/mount"
)

// NodeDir is where the node agent of a data dir keeps its state (its containerd in
// NodeDir/containerd).
func NodeDir(dataDir string) string { return filepath.Join(dataDir, "node") }

// PIDFilePath is the file in which `berth up` (or `berth apiserver`) records its process
// while it runs.
func PIDFilePath(dataDir string) string { return filepath.Join(dataDir, "berth.pid") }

// NodePIDFilePath is the file in which `berth node` records its process while it runs.
func NodePIDFilePath(dataDir string) string { return filepath.Join(NodeDir(dataDir), "berth.pid") }

// pidRecord is the content of the pid file: the process ID and its start time (in clock
// ticks since boot, /proc/PID/stat's 22nd field), so that a process that got the ID of a
// `berth up` long gone is not taken for it.
type pidRecord struct {
	pid   int
	start string
}

func (r pidRecord) String() string { return strconv.Itoa(r.pid) + " " + r.start + "\n" }

// processStart is a running process's start time, or "" if it does not run (a zombie has
// ended).
func processStart(pid int) string {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	// The command name (2nd field) is in parentheses and may hold spaces.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:]) // fields[0] is the 3rd field, the state
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return ""
	}
	return fields[19]
}

// running reads a pid file; ok is false when it is missing or names a process that has
// ended.
func running(path string) (r pidRecord, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 {
		return r, false, nil // not ours to read: treated as stale
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return r, false, nil
	}
	r = pidRecord{pid: pid, start: f[1]}
	return r, processStart(pid) == r.start, nil
}

// WritePIDFile records this process in path (PIDFilePath or NodePIDFilePath of its data
// dir), and returns the function that removes the record at exit. Another process that still
// runs with that record is an error; a record of one that ended is replaced.
func WritePIDFile(path string) (remove func(), err error) {
	if r, ok, err := running(path); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	} else if ok && r.pid != os.Getpid() {
		return nil, fmt.Errorf("berth (pid %d) already runs with the pid file %s: stop it with `berth down`", r.pid, path)
	}
	me := pidRecord{pid: os.Getpid(), start: processStart(os.Getpid())}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(me.String()), 0o644); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return func() {
		// Only our own record: a second berth may have replaced it after we hung.
		if data, err := os.ReadFile(path); err == nil && string(data) == me.String() {
			_ = os.Remove(path)
		}
	}, nil
}

// ErrNotRunning is Stop's answer when no berth runs on the data dir.
var ErrNotRunning = errors.New("berth is not running")

// Stop ends the berth processes of dataDir as Ctrl-C would: `berth node` and `berth up` (or
// `berth apiserver`), found by their pid files. It sends each SIGTERM, waits up to timeout
// for them to exit, and returns their pids. With none running it returns ErrNotRunning (and
// removes stale pid files).
func Stop(ctx context.Context, dataDir string, timeout time.Duration) ([]int, error) {
	var procs []pidRecord
	// The node first: it goes before the API server it reports to.
	for _, path := range []string{NodePIDFilePath(dataDir), PIDFilePath(dataDir)} {
		r, ok, err := running(path)
		if err != nil {
			return nil, fmt.Errorf("pid file: %w", err)
		}
		if !ok {
			if r.pid != 0 {
				_ = os.Remove(path)
			}
			continue
		}
		if err := syscall.Kill(r.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
			return nil, fmt.Errorf("signalling berth (pid %d): %w", r.pid, err)
		}
		procs = append(procs, r)
	}
	if len(procs) == 0 {
		return nil, fmt.Errorf("%w on data dir %s", ErrNotRunning, dataDir)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var pids []int
	for _, r := range procs {
		pids = append(pids, r.pid)
		for processStart(r.pid) == r.start {
			select {
			case <-ctx.Done():
				return pids, fmt.Errorf("berth (pid %d) did not exit within %v of SIGTERM (signal it again, or kill -9 %d, to end it at once)", r.pid, timeout, r.pid)
			case <-tick.C:
			}
		}
	}
	return pids, nil
}

// Cleanup leaves the machine as it was before the node agent of dataDir ran on berth's own
// containerd (containerd.Cleanup: its pods, containerd and its shims, the bridge, the
// masquerade rule, the CNI cache and IPAM entries), and undoes every mount left under
// dataDir (memory emptyDirs, /dev/shm, overlay root filesystems). Nothing of dataDir must
// run. The data dir itself, its certificates, etcd data and images, stays.
func Cleanup(ctx context.Context, dataDir string) (containerd.Cleaned, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return containerd.Cleaned{}, err
	}
	done, err := containerd.Cleanup(ctx, filepath.Join(NodeDir(dir), "containerd"))
	if uerr := mount.UnmountUnder(dir); uerr != nil {
		err = errors.Join(err, uerr)
	}
	if done.Bridge != "" {
		// The service proxy's rules outlive the node agent, as kube-proxy's do: traffic keeps
		// flowing across a restart. They go with the pod network.
		if perr := proxy.Cleanup(ctx, ServiceProxyTable(done.Bridge)); perr != nil {
			err = errors.Join(err, perr)
		}
	}
	return done, err
}
