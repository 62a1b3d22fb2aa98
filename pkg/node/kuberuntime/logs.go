package kuberuntime

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// A CRI log file holds one record per line:
//
//	2016-10-06T00:17:09.669794202Z stdout F the line's text
//
// a RFC 3339 timestamp, the stream, a tag (F: the record ends a line; P: a partial line the
// runtime split, continued by the next record) and the text.

const (
	timestampOut = "2006-01-02T15:04:05.000000000Z07:00" // fixed width, as the kubelet writes
	// followRecheck is how often a followed log is re-read even without a file event.
	followRecheck = time.Second
)

// LogOptions select what ReadLogs writes.
type LogOptions struct {
	// TailLines, when set, starts at that many records before the end.
	TailLines *int64
	// LimitBytes, when set, stops after that many bytes.
	LimitBytes *int64
	// Since skips records older than it.
	Since time.Time
	// Follow keeps reading as the container writes, until it stops or ctx ends.
	Follow bool
	// Timestamps prefixes each line with its timestamp.
	Timestamps bool
}

// NewLogOptions turns the API's options into ReadLogs'; now anchors sinceSeconds.
func NewLogOptions(o *v1.PodLogOptions, now time.Time) *LogOptions {
	opts := &LogOptions{}
	if o == nil {
		return opts
	}
	opts.TailLines, opts.LimitBytes = o.TailLines, o.LimitBytes
	opts.Follow, opts.Timestamps = o.Follow, o.Timestamps
	switch {
	case o.SinceSeconds != nil:
		opts.Since = now.Add(-time.Duration(*o.SinceSeconds) * time.Second)
	case o.SinceTime != nil:
		opts.Since = o.SinceTime.Time
	}
	return opts
}

// logRecord is one parsed record.
type logRecord struct {
	timestamp time.Time
	stream    runtimeapi.LogStreamType
	partial   bool
	text      []byte
}

// parseCRILog parses one record (its trailing newline included).
func parseCRILog(line []byte, r *logRecord) error {
	ts, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok {
		return errors.New("timestamp is not found")
	}
	t, err := time.Parse(time.RFC3339Nano, string(ts))
	if err != nil {
		return fmt.Errorf("unexpected timestamp format %q: %w", ts, err)
	}
	stream, rest, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return errors.New("stream type is not found")
	}
	r.stream = runtimeapi.LogStreamType(stream)
	if r.stream != runtimeapi.Stdout && r.stream != runtimeapi.Stderr {
		return fmt.Errorf("unexpected stream type %q", stream)
	}
	tags, text, ok := bytes.Cut(rest, []byte{' '})
	if !ok {
		return errors.New("log tag is not found")
	}
	first, _, _ := bytes.Cut(tags, []byte(runtimeapi.LogTagDelimiter))
	r.partial = runtimeapi.LogTag(first) == runtimeapi.LogTagPartial
	if r.partial {
		// The newline ends the record, not the text.
		text = bytes.TrimSuffix(text, []byte{'\n'})
	}
	r.timestamp, r.text = t, text
	return nil
}

// errLimitReached ends reading at LimitBytes.
var errLimitReached = errors.New("log limit reached")

// logWriter writes records to the streams, within the options.
type logWriter struct {
	stdout, stderr io.Writer
	opts           *LogOptions
	remain         int64
	// lineStart is true when the next record starts a line (its timestamp is printed).
	lineStart bool
}

func (w *logWriter) write(r *logRecord) error {
	startsLine := w.lineStart
	w.lineStart = !r.partial
	if r.timestamp.Before(w.opts.Since) {
		return nil
	}
	out := w.stdout
	if r.stream == runtimeapi.Stderr {
		out = w.stderr
	}
	if out == nil {
		return nil // the stream was not asked for
	}
	text := r.text
	if w.opts.Timestamps && startsLine {
		text = append([]byte(r.timestamp.Format(timestampOut)+" "), text...)
	}
	if int64(len(text)) > w.remain {
		text = text[:w.remain]
	}
	n, err := out.Write(text)
	w.remain -= int64(n)
	if err != nil {
		return err
	}
	if w.remain <= 0 {
		return errLimitReached
	}
	return nil
}

// ReadLogs writes the CRI log file at path to stdout and stderr as opts say. To follow, it
// needs running, which says whether the container still runs: it returns once the
// container has stopped and its log is read, or when ctx ends.
func ReadLogs(ctx context.Context, path string, opts *LogOptions, running func(context.Context) (bool, error), stdout, stderr io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("failed to open log file %q: %w", path, err)
	}
	defer func() { f.Close() }()
	if opts.TailLines != nil {
		start, err := tailStart(f, *opts.TailLines)
		if err != nil {
			return fmt.Errorf("failed to tail %d lines of log file %q: %w", *opts.TailLines, path, err)
		}
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return err
		}
	}
	w := &logWriter{stdout: stdout, stderr: stderr, opts: opts, remain: 1<<63 - 1, lineStart: true}
	if opts.LimitBytes != nil {
		w.remain = *opts.LimitBytes
	}
	follow := opts.Follow && running != nil
	var watcher *fsnotify.Watcher
	defer func() {
		if watcher != nil {
			watcher.Close()
		}
	}()
	reader := bufio.NewReader(f)
	var rec logRecord
	for {
		line, err := reader.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return fmt.Errorf("failed to read log file %q: %w", path, err)
		}
		if err == io.EOF {
			if !follow {
				if len(line) == 0 {
					return nil
				}
				// A last record without its newline: write what there is.
			} else {
				// Re-read an incomplete record once it is complete.
				if _, err := f.Seek(-int64(len(line)), io.SeekCurrent); err != nil {
					return err
				}
				reader.Reset(f)
				if watcher == nil {
					if watcher, err = fsnotify.NewWatcher(); err != nil {
						return fmt.Errorf("failed to create fsnotify watcher: %w", err)
					}
					if err := watcher.Add(filepath.Dir(path)); err != nil {
						return fmt.Errorf("failed to watch directory %q: %w", filepath.Dir(path), err)
					}
					continue // a write may have come before the watch
				}
				more, reopened, err := waitForLog(ctx, watcher, filepath.Base(path), running)
				if err != nil || !more {
					if err == nil {
						// Stopped: drain what it wrote last, then end.
						follow = false
					} else {
						return err
					}
				}
				if reopened {
					nf, err := os.Open(path)
					if err == nil {
						f.Close()
						f = nf
						reader.Reset(f)
					}
				}
				continue
			}
		}
		if err := parseCRILog(line, &rec); err != nil {
			klog.FromContext(ctx).Error(err, "Failed when parsing line in log file", "path", path, "line", string(line))
			continue
		}
		if err := w.write(&rec); err != nil {
			if err == errLimitReached {
				return nil
			}
			return err
		}
	}
}

// waitForLog waits for the log to grow. more is false once the container no longer runs;
// reopened is true when the file was replaced (rotation).
func waitForLog(ctx context.Context, w *fsnotify.Watcher, name string, running func(context.Context) (bool, error)) (more, reopened bool, err error) {
	if ok, err := running(ctx); !ok || err != nil {
		return false, false, err
	}
	timer := time.NewTimer(followRecheck)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, false, ctx.Err()
		case e := <-w.Events:
			if filepath.Base(e.Name) != name {
				continue
			}
			return true, e.Op&fsnotify.Create != 0, nil
		case err := <-w.Errors:
			return false, false, fmt.Errorf("watching the log: %w", err)
		case <-timer.C:
			return true, false, nil
		}
	}
}

// tailStart is the offset of the n-th record before the end (the start of the file when
// there are fewer). A last record without its newline does not count.
func tailStart(f io.ReadSeeker, n int64) (int64, error) {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, err
	}
	const block = 4096
	buf := make([]byte, block)
	newlines := int64(0)
	for end := size; end > 0; {
		start := max(end-block, 0)
		chunk := buf[:end-start]
		if _, err := f.Seek(start, io.SeekStart); err != nil {
			return 0, err
		}
		if _, err := io.ReadFull(f, chunk); err != nil {
			return 0, err
		}
		for i := len(chunk) - 1; i >= 0; i-- {
			if chunk[i] != '\n' {
				continue
			}
			newlines++
			// The (n+1)-th newline from the end ends the record before the n-th last.
			if newlines == n+1 {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}

// GetContainerLogs writes the log of container id as opts say. With opts.Previous it is
// the log of the container's previous restart (<restartCount-1>.log beside its own), the
// one kubectl logs --previous shows.
func (m *Manager) GetContainerLogs(ctx context.Context, pod *v1.Pod, id container.ContainerID, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	resp, err := m.runtime.ContainerStatus(ctx, id.ID, false)
	if err != nil {
		return fmt.Errorf("failed to get container status %q: %w", id, err)
	}
	s := resp.GetStatus()
	if s == nil {
		return fmt.Errorf("container %q has no status", id)
	}
	// id is the instance to read: for --previous, the caller already picked the last
	// terminated one (the pod status's lastState).
	path := s.GetLogPath()
	o := NewLogOptions(opts, m.clock.Now())
	if opts != nil && opts.Previous {
		o.Follow = false // the previous container has stopped
	}
	running := func(ctx context.Context) (bool, error) {
		resp, err := m.runtime.ContainerStatus(ctx, id.ID, false)
		if err != nil {
			if status.Code(err) == codes.Unavailable {
				return true, nil // the runtime restarts; the container runs on
			}
			if crierrors.IsNotFound(err) {
				return false, nil
			}
			return false, err
		}
		return resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING, nil
	}
	return ReadLogs(ctx, path, o, running, stdout, stderr)
}
