// Package logs is the container log manager (the kubelet's ContainerLogManager): every
// MonitorInterval it rotates the log of each running container that has grown past
// containerLogMaxSize, keeps at most containerLogMaxFiles files per container (the live one
// included), and gzips the rotated ones but the newest. The runtime writes the logs; after a
// rotation it is asked, through the CRI, to reopen the file.
package logs

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"
)

// MonitorInterval is how often the logs are checked.
const MonitorInterval = 10 * time.Second

// timestampFormat names rotated files: 0.log.20260102-150405.
const timestampFormat = "20060102-150405"

const compressSuffix = ".gz"

// Manager rotates the logs of running containers.
type Manager struct {
	runtime  internalapi.RuntimeService
	maxSize  int64
	maxFiles int
	now      func() time.Time
}

// NewManager returns a Manager; maxFiles must be at least 2 (the live file and one rotated).
func NewManager(runtime internalapi.RuntimeService, maxSize int64, maxFiles int) (*Manager, error) {
	if maxFiles < 2 {
		return nil, fmt.Errorf("invalid MaxFiles %d, must be > 1", maxFiles)
	}
	if maxSize <= 0 {
		return nil, fmt.Errorf("invalid MaxSize %d, must be > 0", maxSize)
	}
	return &Manager{runtime: runtime, maxSize: maxSize, maxFiles: maxFiles, now: time.Now}, nil
}

// Run rotates every MonitorInterval until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(MonitorInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := m.rotateLogs(ctx); err != nil {
			klog.FromContext(ctx).Error(err, "Failed to rotate container logs")
		}
	}
}

// rotateLogs looks at every running container's log.
func (m *Manager) rotateLogs(ctx context.Context) error {
	containers, err := m.runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return fmt.Errorf("listing containers: %w", err)
	}
	logger := klog.FromContext(ctx)
	for _, c := range containers {
		resp, err := m.runtime.ContainerStatus(ctx, c.Id, false)
		if err != nil {
			logger.V(4).Info("Container status for log rotation", "containerID", c.Id, "err", err)
			continue
		}
		path := resp.GetStatus().GetLogPath()
		if path == "" {
			continue
		}
		info, err := os.Stat(path)
		if err != nil {
			// The file may be gone (removed by hand): ask the runtime for a new one.
			if os.IsNotExist(err) {
				if err := m.runtime.ReopenContainerLog(ctx, c.Id); err != nil {
					logger.V(2).Info("Reopening a missing container log", "containerID", c.Id, "path", path, "err", err)
				}
			}
			continue
		}
		if info.Size() < m.maxSize {
			continue
		}
		if err := m.rotateLog(ctx, c.Id, path); err != nil {
			logger.Error(err, "Failed to rotate a container log", "containerID", c.Id, "path", path)
		}
	}
	return nil
}

// rotateLog makes room (old rotated files go, older ones are compressed), renames the live
// file to a timestamped one, and has the runtime reopen it; if it cannot, the rename is undone.
func (m *Manager) rotateLog(ctx context.Context, id, path string) error {
	rotated, err := rotatedFiles(path)
	if err != nil {
		return err
	}
	// Keep maxFiles-2 old ones: with the one about to be rotated and the live file, maxFiles.
	for len(rotated) > m.maxFiles-2 {
		if err := os.Remove(rotated[0]); err != nil && !os.IsNotExist(err) {
			return err
		}
		rotated = rotated[1:]
	}
	for _, f := range rotated {
		if !strings.HasSuffix(f, compressSuffix) {
			if err := compress(f); err != nil {
				return fmt.Errorf("compressing %s: %w", f, err)
			}
		}
	}
	target := path + "." + m.now().Format(timestampFormat)
	if _, err := os.Stat(target); err == nil {
		return nil // rotated this second already
	}
	if err := os.Rename(path, target); err != nil {
		return err
	}
	if err := m.runtime.ReopenContainerLog(ctx, id); err != nil {
		if rerr := os.Rename(target, path); rerr != nil {
			klog.FromContext(ctx).Error(rerr, "Failed to undo a log rotation", "path", path)
		}
		return fmt.Errorf("reopening the container log: %w", err)
	}
	return nil
}

// rotatedFiles are path's rotated files, oldest first.
func rotatedFiles(path string) ([]string, error) {
	matches, err := filepath.Glob(path + ".*")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range matches {
		if !strings.HasSuffix(f, ".tmp") {
			out = append(out, f)
		}
	}
	sort.Strings(out) // the timestamp sorts by time
	return out, nil
}

// compress replaces f by f.gz.
func compress(f string) error {
	in, err := os.Open(f)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := f + compressSuffix + ".tmp"
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w := gzip.NewWriter(out)
	if _, err := io.Copy(w, in); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := w.Close(); err != nil {
		out.Close()
		os.Remove(tmp)
		return err
	}
	if err := out.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, f+compressSuffix); err != nil {
		return err
	}
	return os.Remove(f)
}
