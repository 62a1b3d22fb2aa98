package config

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/node/types"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

const (
	// watchRetryPeriod and watchMaxRetryPeriod bound the back-off between attempts to
	// (re)establish the file watch.
	watchRetryPeriod    = time.Second
	watchMaxRetryPeriod = 20 * time.Second
	fileEventBuffer     = 10
)

// NewSourceFile sends the static pods of path to updates until ctx ends: path is a directory
// of manifests (one pod per file, YAML or JSON; files and directories whose names start
// with a dot are ignored, and so are subdirectories) or a single manifest file. Every update
// is a SET of all the pods. The source reads path at once, again every period, and whenever
// inotify reports a change of a manifest. A manifest that does not parse or validate is
// skipped with an error that names it; while path does not exist the source has no pods.
func NewSourceFile(ctx context.Context, path string, nodeName string, period time.Duration, updates chan<- interface{}) {
	s := newSourceFile(path, nodeName, updates)
	klog.FromContext(ctx).V(1).Info("Watching path", "path", s.path)
	events := make(chan fileEvent, fileEventBuffer)
	go s.watch(ctx, events)
	go s.run(ctx, period, events)
}

type fileEventKind int

const (
	fileChanged fileEventKind = iota // created, written or chmod-ed: read it again
	fileGone                         // removed or renamed away
	relistAll                        // the watch (re)started or lost its directory
)

type fileEvent struct {
	name string
	kind fileEventKind
}

// sourceFile is the file source. Its state, the last good pod of each manifest, belongs to
// the run goroutine.
type sourceFile struct {
	path     string
	nodeName string
	updates  chan<- interface{}
	// pods is the last good pod read from each manifest, by file path.
	pods map[string]*v1.Pod
}

func newSourceFile(path, nodeName string, updates chan<- interface{}) *sourceFile {
	if p := strings.TrimRight(path, string(os.PathSeparator)); p != "" {
		path = p
	}
	return &sourceFile{path: path, nodeName: nodeName, updates: updates, pods: map[string]*v1.Pod{}}
}

func (s *sourceFile) run(ctx context.Context, period time.Duration, events <-chan fileEvent) {
	logger := klog.FromContext(ctx).WithValues("source", types.FileSource)
	s.relist(logger)
	if !s.send(ctx) {
		return
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			s.relist(logger)
		case e := <-events:
			if e.kind == relistAll {
				s.relist(logger)
			} else {
				s.apply(logger, e)
			}
		}
		if !s.send(ctx) {
			return
		}
	}
}

// send sends a SET of every pod, in the order of their files' paths.
func (s *sourceFile) send(ctx context.Context) bool {
	names := make([]string, 0, len(s.pods))
	for name := range s.pods {
		names = append(names, name)
	}
	sort.Strings(names)
	pods := make([]*v1.Pod, 0, len(names))
	for _, name := range names {
		pods = append(pods, s.pods[name].DeepCopy())
	}
	select {
	case s.updates <- types.PodUpdate{Op: types.SET, Pods: pods, Source: types.FileSource}:
		return true
	case <-ctx.Done():
		return false
	}
}

// relist reads path again from scratch. A directory's manifests replace all pods, the bad
// ones left out; a single manifest that is bad leaves its last good pod in place.
func (s *sourceFile) relist(logger klog.Logger) {
	info, err := os.Stat(s.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		logger.V(2).Info("Static pod path does not exist, ignoring", "path", s.path)
		s.pods = map[string]*v1.Pod{}
	case err != nil:
		logger.Error(err, "Unable to read static pod path", "path", s.path)
	case info.IsDir():
		s.pods = s.readDir(logger)
	case info.Mode().IsRegular():
		pod, err := s.readFile(logger, s.path)
		if err != nil {
			logger.Error(err, "Could not process manifest file", "path", s.path)
			return
		}
		s.pods = map[string]*v1.Pod{s.path: pod}
	default:
		logger.Error(nil, "Static pod path is not a directory or file", "path", s.path, "mode", info.Mode())
	}
}

func (s *sourceFile) readDir(logger klog.Logger) map[string]*v1.Pod {
	pods := map[string]*v1.Pod{}
	entries, err := os.ReadDir(s.path)
	if err != nil {
		logger.Error(err, "Unable to read static pod directory", "path", s.path)
		return pods
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		path := filepath.Join(s.path, e.Name())
		info, err := os.Stat(path) // follows symlinks, as a manifest may be one
		switch {
		case err != nil:
			if !errors.Is(err, os.ErrNotExist) {
				logger.Error(err, "Could not get metadata", "path", path)
			}
		case info.IsDir():
			logger.Error(nil, "Provided manifest path is a directory, not recursing into manifest path", "path", path)
		case !info.Mode().IsRegular():
			logger.Error(nil, "Manifest path is not a directory or file", "path", path, "mode", info.Mode())
		default:
			pod, err := s.readFile(logger, path)
			if err != nil {
				if !errors.Is(err, os.ErrNotExist) {
					logger.Error(err, "Could not process manifest file", "path", path)
				}
				continue
			}
			pods[path] = pod
		}
	}
	return pods
}

// apply handles one inotify event: a changed manifest is read again (a bad one leaves its
// last good pod until the next relist, so a half-written file does not stop a pod), a gone
// one takes its pod with it.
func (s *sourceFile) apply(logger klog.Logger, e fileEvent) {
	if e.kind == fileGone {
		delete(s.pods, e.name)
		return
	}
	info, err := os.Stat(e.name)
	switch {
	case errors.Is(err, os.ErrNotExist):
		delete(s.pods, e.name)
		return
	case err != nil:
		logger.Error(err, "Could not get metadata", "path", e.name)
		return
	case !info.Mode().IsRegular():
		logger.V(4).Info("Ignoring a manifest path that is not a file", "path", e.name)
		return
	}
	pod, err := s.readFile(logger, e.name)
	if err != nil {
		logger.Error(err, "Could not process manifest file", "path", e.name)
		return
	}
	s.pods[e.name] = pod
}

// readFile reads one manifest as a static pod of this node.
func (s *sourceFile) readFile(logger klog.Logger, path string) (*v1.Pod, error) {
	logger.V(3).Info("Reading config file", "path", path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := readAtMost(f, maxConfigLength)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	d := staticPodDefaulter{nodeName: s.nodeName, fromFile: true, source: path}
	var parsed bool
	var pod *v1.Pod
	// A manifest that makes the decoder panic is a bad manifest, not the end of the node.
	if perr := panics.Call(klog.NewContext(context.Background(), logger), Component, func() error {
		parsed, pod, err = d.decodeSinglePod(logger, data)
		return nil
	}); perr != nil {
		return nil, fmt.Errorf("%s: %w", path, perr)
	}
	if !parsed {
		return nil, fmt.Errorf("%s: couldn't parse as pod (%w), please check config file", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pod, nil
}

// watch keeps an inotify watch on path (on its directory when path is a file) and turns its
// events into fileEvents, until ctx ends. A failed or lost watch is set up again after a
// back-off; each new watch asks for a relist, since changes may have been missed meanwhile.
func (s *sourceFile) watch(ctx context.Context, events chan<- fileEvent) {
	logger := klog.FromContext(ctx).WithValues("source", types.FileSource, "path", s.path)
	delay := watchRetryPeriod
	for {
		established, err := s.doWatch(ctx, events)
		if ctx.Err() != nil {
			return
		}
		switch {
		case established:
			delay = watchRetryPeriod
		case errors.Is(err, os.ErrNotExist):
			// Waiting for the path to appear is not a failure: retry at the base period.
			delay = watchRetryPeriod
			logger.V(4).Info("Static pod path does not exist yet, not watching it")
		default:
			logger.Error(err, "Unable to watch static pod path")
			if delay *= 2; delay > watchMaxRetryPeriod {
				delay = watchMaxRetryPeriod
			}
		}
		if err != nil && established {
			logger.V(2).Info("Static pod path watch ended, setting it up again", "reason", err.Error())
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// doWatch runs one watch until it fails, its directory goes away, or ctx ends.
func (s *sourceFile) doWatch(ctx context.Context, events chan<- fileEvent) (established bool, err error) {
	info, err := os.Stat(s.path)
	if err != nil {
		return false, err
	}
	dir := s.path
	if !info.IsDir() {
		dir = filepath.Dir(s.path)
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return false, fmt.Errorf("unable to create inotify: %w", err)
	}
	defer w.Close()
	if err := w.Add(dir); err != nil {
		return false, fmt.Errorf("unable to create inotify for path %q: %w", dir, err)
	}
	forward := func(e fileEvent) bool {
		select {
		case events <- e:
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !forward(fileEvent{kind: relistAll}) {
		return true, nil
	}
	for {
		select {
		case <-ctx.Done():
			return true, nil
		case err, ok := <-w.Errors:
			if !ok {
				return true, errors.New("inotify closed")
			}
			return true, fmt.Errorf("error while watching %q: %w", dir, err)
		case ev, ok := <-w.Events:
			if !ok {
				return true, errors.New("inotify closed")
			}
			if ev.Name == dir && (ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)) {
				forward(fileEvent{kind: relistAll})
				return true, fmt.Errorf("%q was removed", dir)
			}
			e, ok := s.translate(ev, dir)
			if ok && !forward(e) {
				return true, nil
			}
		}
	}
}

// translate maps an inotify event to a fileEvent, or drops it: dotfiles, and when path is
// a single file, every other file of its directory.
func (s *sourceFile) translate(ev fsnotify.Event, dir string) (fileEvent, bool) {
	if dir != s.path && ev.Name != s.path {
		return fileEvent{}, false
	}
	if strings.HasPrefix(filepath.Base(ev.Name), ".") {
		return fileEvent{}, false
	}
	switch {
	case ev.Has(fsnotify.Create), ev.Has(fsnotify.Write), ev.Has(fsnotify.Chmod):
		return fileEvent{name: ev.Name, kind: fileChanged}, true
	case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
		return fileEvent{name: ev.Name, kind: fileGone}, true
	}
	return fileEvent{}, false
}
