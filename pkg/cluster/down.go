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
	"github.com/berth-cluster/berth/pkg/util/mount"
)

// NodeDir is where the node agent of a data dir keeps its state (its containerd in
// NodeDir/containerd).
func NodeDir(dataDir string) string { return filepath.Join(dataDir, "node") }

// PIDFilePath is the file in which `berth up` (or `berth apiserver`) records its process
// while it runs.
func PIDFilePath(dataDir string) string { return filepath.Join(dataDir, "berth.pid") }

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

// running reads the pid file of dataDir; ok is false when it is missing or names a process
// that has ended.
func running(dataDir string) (r pidRecord, ok bool, err error) {
	data, err := os.ReadFile(PIDFilePath(dataDir))
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

// WritePIDFile records this process as the `berth up` of dataDir, and returns the function
// that removes the record at exit. Another `berth up` that still runs on dataDir is an
// error; a record of one that ended is replaced.
func WritePIDFile(dataDir string) (remove func(), err error) {
	if r, ok, err := running(dataDir); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	} else if ok && r.pid != os.Getpid() {
		return nil, fmt.Errorf("berth (pid %d) already runs on data dir %s: stop it with `berth down --data-dir %s`", r.pid, dataDir, dataDir)
	}
	me := pidRecord{pid: os.Getpid(), start: processStart(os.Getpid())}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	path := PIDFilePath(dataDir)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(me.String()), 0o644); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, fmt.Errorf("pid file: %w", err)
	}
	return func() {
		// Only our own record: a second `berth up` may have replaced it after we hung.
		if data, err := os.ReadFile(path); err == nil && string(data) == me.String() {
			_ = os.Remove(path)
		}
	}, nil
}

// ErrNotRunning is Stop's answer when no `berth up` runs on the data dir.
var ErrNotRunning = errors.New("berth is not running")

// Stop ends the `berth up` of dataDir as Ctrl-C would: SIGTERM, then it waits up to timeout
// for the process to exit, and returns its pid. With no `berth up` running it returns
// ErrNotRunning (and removes a stale pid file).
func Stop(ctx context.Context, dataDir string, timeout time.Duration) (int, error) {
	r, ok, err := running(dataDir)
	if err != nil {
		return 0, fmt.Errorf("pid file: %w", err)
	}
	if !ok {
		if r.pid != 0 {
			_ = os.Remove(PIDFilePath(dataDir))
		}
		return 0, fmt.Errorf("%w on data dir %s", ErrNotRunning, dataDir)
	}
	if err := syscall.Kill(r.pid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return r.pid, nil
		}
		return r.pid, fmt.Errorf("signalling berth (pid %d): %w", r.pid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for processStart(r.pid) == r.start {
		select {
		case <-ctx.Done():
			return r.pid, fmt.Errorf("berth (pid %d) did not exit within %v of SIGTERM (signal it again, or kill -9 %d, to end it at once)", r.pid, timeout, r.pid)
		case <-tick.C:
		}
	}
	return r.pid, nil
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
	return done, err
}
