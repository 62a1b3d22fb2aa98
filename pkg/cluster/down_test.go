package cluster

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestPIDFile(t *testing.T) {
	dir := t.TempDir()
	remove, err := WritePIDFile(PIDFilePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	r, ok, err := running(PIDFilePath(dir))
	if err != nil || !ok || r.pid != os.Getpid() {
		t.Fatalf("running = %+v, %v, %v; want this process", r, ok, err)
	}
	// Our own record again (a restart in process) is no conflict.
	if _, err := WritePIDFile(PIDFilePath(dir)); err != nil {
		t.Errorf("writing our own pid file again: %v", err)
	}
	remove()
	if _, err := os.Stat(PIDFilePath(dir)); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there: %v", err)
	}
}

// TestStop stops a process recorded in the pid file, refuses a second start over it, and
// treats the record of a process that has ended (or whose pid was reused) as stale.
func TestStop(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { cmd.Wait(); close(waited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-waited })
	rec := pidRecord{pid: cmd.Process.Pid, start: processStart(cmd.Process.Pid)}
	if rec.start == "" {
		t.Fatal("no start time for a running process")
	}
	if err := os.WriteFile(PIDFilePath(dir), []byte(rec.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePIDFile(PIDFilePath(dir)); err == nil || !strings.Contains(err.Error(), "already runs with the pid file") {
		t.Errorf("WritePIDFile over a running process: %v", err)
	}

	// Our Wait reaps sleep; a zombie counts as gone anyway.
	pids, err := Stop(context.Background(), dir, 10*time.Second)
	if err != nil || len(pids) != 1 || pids[0] != rec.pid {
		t.Fatalf("Stop = %v, %v; want [%d]", pids, err, rec.pid)
	}
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("the process still runs after Stop")
	}

	if _, err := Stop(context.Background(), dir, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Stop of an ended process = %v, want ErrNotRunning", err)
	}
	if _, err := os.Stat(PIDFilePath(dir)); !os.IsNotExist(err) {
		t.Errorf("Stop left a stale pid file: %v", err)
	}
	// A live pid with another start time is someone else.
	other := pidRecord{pid: os.Getpid(), start: "1"}
	if err := os.WriteFile(PIDFilePath(dir), []byte(other.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Stop(context.Background(), dir, time.Second); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Stop of a reused pid = %v, want ErrNotRunning", err)
	}
}

// TestStopTimesOut: a process that ignores SIGTERM is reported, not killed.
func TestStopTimesOut(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", "trap '' TERM; echo ready; sleep 60 & wait")
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil {
		t.Fatal(err)
	}
	rec := pidRecord{pid: cmd.Process.Pid, start: processStart(cmd.Process.Pid)}
	if err := os.WriteFile(PIDFilePath(dir), []byte(rec.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Stop(context.Background(), dir, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "did not exit within 300ms of SIGTERM") {
		t.Errorf("Stop = %v", err)
	}
	if processStart(rec.pid) != rec.start {
		t.Error("Stop killed the process")
	}
}

// TestStopNodeAndUp stops the `berth node` and the `berth up` of a data dir, the node first.
func TestStopNodeAndUp(t *testing.T) {
	dir := t.TempDir()
	var want []int
	for _, path := range []string{NodePIDFilePath(dir), PIDFilePath(dir)} {
		cmd := exec.Command("sleep", "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		waited := make(chan struct{})
		go func() { cmd.Wait(); close(waited) }()
		t.Cleanup(func() { cmd.Process.Kill(); <-waited })
		rec := pidRecord{pid: cmd.Process.Pid, start: processStart(cmd.Process.Pid)}
		if err := os.MkdirAll(NodeDir(dir), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(rec.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		want = append(want, rec.pid)
	}
	pids, err := Stop(context.Background(), dir, 10*time.Second)
	if err != nil || len(pids) != 2 || pids[0] != want[0] || pids[1] != want[1] {
		t.Fatalf("Stop = %v, %v; want %v", pids, err, want)
	}
	for _, pid := range pids {
		if processStart(pid) != "" {
			t.Errorf("pid %d still runs", pid)
		}
	}
}
