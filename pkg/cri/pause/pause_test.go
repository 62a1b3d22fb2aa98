package pause

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// TestBinary runs the program: it stays up, and SIGTERM ends it with status 0.
func TestBinary(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Fatalf("the pause program is x86-64 only; this is %s", runtime.GOARCH)
	}
	path := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(path, Binary(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("pause exited on its own: %v", err)
		case <-time.After(300 * time.Millisecond):
		}
		// SIGCHLD is ignored, not fatal.
		_ = cmd.Process.Signal(syscall.SIGCHLD)
		select {
		case err := <-done:
			t.Fatalf("pause exited on SIGCHLD: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		_ = cmd.Process.Signal(sig)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("after %v: %v, want exit status 0", sig, err)
			}
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("pause ignored %v", sig)
		}
	}
}
