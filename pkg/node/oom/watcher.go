// Package oom is the node agent's OOM watcher (seed 000's oomWatcher, started in
// initializeModules): it reads the kernel's log from /dev/kmsg and records a SystemOOM event
// on the Node when the kernel's OOM killer kills a process because the whole machine ran out
// of memory. A container that hits its own limit is reported by the runtime instead
// (OOMKilled in its status), so OOM kills confined to a memory cgroup are not events here.
package oom

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// SystemOOMEvent is the reason of the Node event.
const SystemOOMEvent = "SystemOOM"

// Kill is one OOM kill the kernel logged.
type Kill struct {
	// VictimCgroup is the memory cgroup whose limit was reached: "/" for the whole machine.
	VictimCgroup string
	// TaskCgroup is the killed process's memory cgroup.
	TaskCgroup  string
	ProcessName string
	Pid         int
}

// System reports a kill for want of the machine's memory, not a cgroup's.
func (k Kill) System() bool { return k.VictimCgroup == "/" }

// ParseLine reads a kernel "oom-kill:" line (kernels since 5.0):
//
//	oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=...,mems_allowed=0,oom_memcg=/kubepods/pod1,task_memcg=/kubepods/pod1/c1,task=tail,pid=7498,uid=0
//
// A global OOM logs "global_oom" instead of oom_memcg.
func ParseLine(line string) (Kill, bool) {
	_, rest, ok := strings.Cut(line, "oom-kill:")
	if !ok {
		return Kill{}, false
	}
	var k Kill
	for _, field := range strings.Split(rest, ",") {
		key, value, _ := strings.Cut(strings.TrimSpace(field), "=")
		switch key {
		case "global_oom":
			k.VictimCgroup = "/"
		case "oom_memcg":
			k.VictimCgroup = value
		case "task_memcg":
			k.TaskCgroup = value
		case "task":
			k.ProcessName = value
		case "pid":
			k.Pid, _ = strconv.Atoi(value)
		}
	}
	if k.VictimCgroup == "" {
		k.VictimCgroup = "/" // no memcg named: the machine's limit
	}
	return k, true
}

// Watcher records SystemOOM events from a kernel log.
type Watcher struct {
	recorder record.EventRecorder
	node     *v1.ObjectReference
	open     func() (io.ReadCloser, error)
}

// NewWatcher returns a watcher of /dev/kmsg.
func NewWatcher(recorder record.EventRecorder, node *v1.ObjectReference) *Watcher {
	return &Watcher{recorder: recorder, node: node, open: openKmsg}
}

// openKmsg opens the kernel log positioned at its end: kills from before the node agent
// started were reported (or not) by its predecessor.
func openKmsg() (io.ReadCloser, error) {
	f, err := os.Open("/dev/kmsg")
	if err != nil {
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Start opens the kernel log and watches it until ctx ends. A node agent that cannot read
// it (not root, or /dev/kmsg absent in a container) runs on without the watcher, as the
// kubelet does when cAdvisor's OOM parser cannot start.
func (w *Watcher) Start(ctx context.Context) error {
	r, err := w.open()
	if err != nil {
		return fmt.Errorf("opening the kernel log for the OOM watcher: %w", err)
	}
	go func() {
		<-ctx.Done()
		r.Close() // unblocks the read
	}()
	go w.watch(ctx, r)
	return nil
}

func (w *Watcher) watch(ctx context.Context, r io.Reader) {
	logger := klog.FromContext(ctx)
	for record := range records(ctx, r) {
		k, ok := ParseLine(record)
		if !ok {
			continue
		}
		if !k.System() {
			logger.V(2).Info("OOM kill inside a memory cgroup", "cgroup", k.VictimCgroup, "process", k.ProcessName, "pid", k.Pid)
			continue
		}
		logger.Info("System OOM encountered", "process", k.ProcessName, "pid", k.Pid)
		msg := "System OOM encountered"
		if k.ProcessName != "" && k.Pid != 0 {
			msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, k.ProcessName, k.Pid)
		}
		w.recorder.Event(w.node, v1.EventTypeWarning, SystemOOMEvent, msg)
	}
}

// records yields the messages of a kernel log: /dev/kmsg returns one record per read,
// "priority,sequence,timestamp,flags;message"; a plain reader (tests) is read by lines.
func records(ctx context.Context, r io.Reader) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		emit := func(rec []byte) bool {
			if _, msg, ok := bytes.Cut(rec, []byte(";")); ok {
				rec = msg
			}
			select {
			case out <- strings.TrimRight(string(rec), "\n"):
				return true
			case <-ctx.Done():
				return false
			}
		}
		if _, isFile := r.(*os.File); !isFile {
			s := bufio.NewScanner(r)
			for s.Scan() {
				if !emit(s.Bytes()) {
					return
				}
			}
			return
		}
		buf := make([]byte, 8192)
		for {
			n, err := r.Read(buf)
			if errors.Is(err, syscall.EPIPE) {
				continue // records were overwritten before we read them
			}
			if err != nil || ctx.Err() != nil {
				return
			}
			if !emit(buf[:n]) {
				return
			}
		}
	}()
	return out
}
