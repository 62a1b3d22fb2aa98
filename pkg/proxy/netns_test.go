package proxy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// Helpers of the tests on the real kernel: network namespaces made with ip netns, and
// threads that run inside one (a process started from such a thread, as knftables starts
// nft, runs inside it too).

// requireRealNetworking fails the test unless it runs as root (CI does), as the node tests
// do, and installs the tools it needs (hack/deps.sh) when they are missing.
func requireRealNetworking(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the proxy's kernel tests need root: network namespaces and nftables (CI runs them as root)")
	}
	var missing []string
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	deps, err := filepath.Abs("../../hack/deps.sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(deps).CombinedOutput()
	if err != nil {
		t.Fatalf("%v missing, and %s failed: %v\n%s", missing, deps, err, out)
	}
}

var netnsSeq struct {
	sync.Mutex
	n int
}

// addNetns makes a network namespace with loopback up, deleted when the test ends (with
// whatever it holds: interfaces, nftables tables). The name is unique to this process.
func addNetns(t testing.TB, role string) string {
	t.Helper()
	netnsSeq.Lock()
	netnsSeq.n++
	name := fmt.Sprintf("bp%d-%d-%s", os.Getpid(), netnsSeq.n, role)
	netnsSeq.Unlock()
	run(t, "ip", "netns", "add", name)
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", name).CombinedOutput(); err != nil {
			t.Logf("ip netns del %s: %v %s", name, err, out)
		}
	})
	run(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

func run(t testing.TB, cmd string, args ...string) string {
	t.Helper()
	out, err := exec.Command(cmd, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", cmd, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// nsThread is a goroutine locked to an OS thread inside a network namespace, which runs
// the functions given to do.
type nsThread struct {
	work chan func()
}

// enterNetns starts an nsThread in ns, stopped when the test ends. The thread is never
// unlocked, so that it ends with its goroutine instead of going back to the Go scheduler
// in the wrong namespace.
func enterNetns(t testing.TB, ns string) *nsThread {
	t.Helper()
	n := &nsThread{work: make(chan func())}
	ready := make(chan error)
	go func() {
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err == nil {
			err = unix.Setns(fd, unix.CLONE_NEWNET)
			unix.Close(fd)
		}
		ready <- err
		if err != nil {
			return
		}
		for f := range n.work {
			f()
		}
	}()
	if err := <-ready; err != nil {
		t.Fatalf("entering %s: %v", ns, err)
	}
	t.Cleanup(func() { close(n.work) })
	return n
}

func (n *nsThread) do(f func()) {
	done := make(chan struct{})
	n.work <- func() { defer close(done); f() }
	<-done
}
