package bench

import (
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// child is a process a scenario starts (berth up, berth sim) that gets SIGTERM if the
// benchmark dies. Linux sends that parent-death signal when the thread that forked the child
// exits, not the process (golang/go#27505), and the Go runtime may end a thread; so the
// child is forked and waited for from a goroutine locked to its thread for the child's whole
// life. Without it a `berth sim` was stopped mid-run, an hour into a 5,000-node benchmark.
type child struct {
	*exec.Cmd
	exited chan struct{}
}

// startChild starts cmd as a child.
func startChild(cmd *exec.Cmd) (*child, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	c := &child{Cmd: cmd, exited: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		_ = cmd.Wait()
		close(c.exited)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return c, nil
}

// stop sends SIGTERM and waits for the exit, killing the child after grace.
func (c *child) stop(grace time.Duration) {
	_ = c.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(grace):
		_ = c.Process.Kill()
		<-c.exited
	}
}
