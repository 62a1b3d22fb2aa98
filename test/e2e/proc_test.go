package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Every child starts in its own process group, from one goroutine locked to its OS thread:
// Linux ties the parent-death signal to the thread that forked, so a child of that thread is
// killed only when the test binary itself dies (a go test timeout, a kill), never because the
// Go runtime retired some other thread.
var spawns = make(chan spawnRequest)

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

func init() {
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for r := range spawns {
			r.done <- r.cmd.Start()
		}
	}()
}

var (
	groupsMu sync.Mutex
	// groups are the process groups started and not yet reaped.
	groups = map[int]string{}
)

// startCmd starts cmd in a new process group that dies with the test binary, and tracks it
// until reap.
func startCmd(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	r := spawnRequest{cmd: cmd, done: make(chan error, 1)}
	spawns <- r
	if err := <-r.done; err != nil {
		return err
	}
	groupsMu.Lock()
	groups[cmd.Process.Pid] = strings.Join(cmd.Args, " ")
	groupsMu.Unlock()
	return nil
}

// reap forgets a process group once its leader has been waited for; what else it held is
// killed, so that nothing outlives its leader.
func reap(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	groupsMu.Lock()
	delete(groups, pid)
	groupsMu.Unlock()
}

// killLeftovers kills every tracked process group and says how many there were.
func killLeftovers() int {
	groupsMu.Lock()
	defer groupsMu.Unlock()
	n := len(groups)
	for pid, args := range groups {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		fmt.Fprintf(os.Stderr, "e2e: killed leftover process group %d: %s\n", pid, args)
		delete(groups, pid)
	}
	return n
}

// runCmd runs cmd to completion (or until ctx ends, when its whole group is killed) and
// returns its exit code; err is set only when it could not run or was killed.
func runCmd(ctx context.Context, cmd *exec.Cmd) (int, error) {
	if err := startCmd(cmd); err != nil {
		return -1, err
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		err = fmt.Errorf("killed: %w", ctx.Err())
	}
	reap(cmd.Process.Pid)
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, nil
	case errors.As(err, &exit) && exit.Exited():
		return exit.ExitCode(), nil
	default:
		return -1, err
	}
}

// syncBuffer is an output buffer that a process writes while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Len is an offset for since.
func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// since is what was written after offset.
func (b *syncBuffer) since(offset int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if offset > b.buf.Len() {
		offset = 0
	}
	return string(b.buf.Bytes()[offset:])
}

// process is a long-running child (berth, etcd, a kubectl watch).
type process struct {
	name   string
	cmd    *exec.Cmd
	stdout syncBuffer
	// output is stdout and stderr interleaved, for the test log.
	output syncBuffer
	done   chan struct{}
	err    error // Wait's answer, once done is closed
}

// startProcess starts bin with args in a process group of its own.
func startProcess(name, bin string, args ...string) (*process, error) {
	p := &process{name: name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Stdout = teeWriter{&p.stdout, &p.output}
	p.cmd.Stderr = &p.output
	p.cmd.Env = testEnv()
	if err := startCmd(p.cmd); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		reap(p.cmd.Process.Pid)
		close(p.done)
	}()
	return p, nil
}

type teeWriter [2]*syncBuffer

func (w teeWriter) Write(p []byte) (int, error) {
	w[0].Write(p)
	return w[1].Write(p)
}

// exited says whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and waits up to timeout for a clean exit (status 0); past that, it kills
// the group and says so.
func (p *process) stop(timeout time.Duration) error {
	if p.exited() {
		return p.exitError("had already exited")
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return p.exitError("after SIGTERM")
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("%s did not exit within %s of SIGTERM; killed it", p.name, timeout)
	}
}

func (p *process) exitError(when string) error {
	if p.err != nil {
		return fmt.Errorf("%s %s: %w", p.name, when, p.err)
	}
	if when == "had already exited" {
		return fmt.Errorf("%s %s (status 0)", p.name, when)
	}
	return nil
}

// kill ends the whole group at once and waits for the leader.
func (p *process) kill() {
	if !p.exited() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
	<-p.done
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return fmt.Sprintf("[%d lines left out]\n%s", len(lines)-n, strings.Join(lines[len(lines)-n:], "\n"))
}

// execCommand is exec.Command with the tests' environment.
func execCommand(bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = testEnv()
	return cmd
}
