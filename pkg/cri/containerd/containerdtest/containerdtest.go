// Package containerdtest starts a private containerd for tests that need a real runtime
// (berth's CRI code, the node agent's runtime manager, end-to-end tests): its own state
// directory, socket, bridge and pod CIDR, with berth's sandbox image loaded, all torn down
// when the test ends. It needs root, containerd, runc and the CNI plugins.
package containerdtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
)

// Start starts containerd with a pod CIDR and bridge no other interface on the machine uses,
// and imports berth's sandbox image. See StartWith.
func Start(t testing.TB) *containerd.Process {
	t.Helper()
	return StartWith(t, containerd.Config{PodCIDR: FreePodCIDR(t)})
}

// StartWith starts containerd with c, filling in what c leaves empty: StateDir (a fresh
// temporary directory) and Bridge (a fresh name). Unless c.SandboxImage is set, berth's
// sandbox image is imported. When the test ends, every pod sandbox is stopped and removed,
// containerd is stopped, the bridge deleted and the state directory removed. A test that
// stops containerd itself must remove its pods first (or through a containerd it restarts).
func StartWith(t testing.TB, c containerd.Config) *containerd.Process {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("containerd tests need root")
	}
	if c.StateDir == "" {
		// Not t.TempDir: its path holds the test's name, and the socket path must stay short.
		dir, err := os.MkdirTemp("", "berth-containerd-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(dir); err != nil {
				t.Logf("remove containerd's state: %v", err)
			}
		})
		c.StateDir = dir
	}
	if c.Bridge == "" {
		c.Bridge = FreeBridgeName(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := containerd.Start(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("containerd's log (%s):\n%s", p.LogFile(), tail(p.LogFile(), 8000))
		}
		select {
		case <-p.Done(): // the test stopped it, and cleaned up through another
		default:
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := RemoveAllPodSandboxes(ctx, p.Endpoint()); err != nil {
				t.Errorf("remove the test's pods: %v", err)
			}
			if err := p.Stop(); err != nil {
				t.Errorf("stop containerd: %v", err)
			}
		}
		if out, err := exec.Command("ip", "link", "delete", p.Config().Bridge).CombinedOutput(); err != nil {
			if _, lookupErr := net.InterfaceByName(p.Config().Bridge); lookupErr == nil {
				t.Logf("delete bridge %s: %v: %s", p.Config().Bridge, err, out)
			}
		}
	})
	if c.SandboxImage == "" {
		if err := cri.EnsureSandboxImage(ctx, p.Endpoint(), p.Config().SandboxImage); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// tail is the end of a file.
func tail(path string, max int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(data)
}

// RemoveAllPodSandboxes stops and removes every pod sandbox (and so every container) of the
// runtime on endpoint.
func RemoveAllPodSandboxes(ctx context.Context, endpoint string) error {
	rs, is, err := cri.Connect(ctx, endpoint)
	if err != nil {
		return err
	}
	defer rs.Close(ctx)
	defer is.Close(ctx)
	sandboxes, err := rs.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{})
	if err != nil {
		return err
	}
	for _, s := range sandboxes {
		if err := rs.StopPodSandbox(ctx, s.Id); err != nil {
			return fmt.Errorf("stop pod sandbox %s: %w", s.Id, err)
		}
		if err := rs.RemovePodSandbox(ctx, s.Id); err != nil {
			return fmt.Errorf("remove pod sandbox %s: %w", s.Id, err)
		}
	}
	return nil
}

// FreeBridgeName is a random interface name ("bt" and 8 hex digits) no interface has.
func FreeBridgeName(t testing.TB) string {
	t.Helper()
	for {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		name := "bt" + hex.EncodeToString(b)
		if _, err := net.InterfaceByName(name); err != nil {
			return name
		}
	}
}

// FreePodCIDR is a random /24 in 10.128.0.0/9 that overlaps no address on the machine's
// interfaces.
func FreePodCIDR(t testing.TB) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for {
		n, _ := rand.Int(rand.Reader, big.NewInt(1<<15))
		v := 128<<8 + int(n.Int64()) // the second and third octets
		_, cidr, _ := net.ParseCIDR(fmt.Sprintf("10.%d.%d.0/24", v>>8, v&0xff))
		free := true
		for _, a := range addrs {
			if ipnet, ok := a.(*net.IPNet); ok && (cidr.Contains(ipnet.IP) || ipnet.Contains(cidr.IP)) {
				free = false
			}
		}
		if free {
			// containerd.Start masquerades the CIDR; the rule goes with the test.
			t.Cleanup(func() { _ = containerd.RemoveMasquerade(context.Background(), cidr.String()) })
			return cidr.String()
		}
	}
}

// PodSandboxConfig is a minimal sandbox config for a pod named name in namespace "test",
// with its container logs under logDir, as the node agent would send for a pod with
// no special settings.
func PodSandboxConfig(name, logDir string) *runtimeapi.PodSandboxConfig {
	uid := make([]byte, 8)
	_, _ = rand.Read(uid)
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "test", Uid: hex.EncodeToString(uid)},
		Hostname:     name,
		LogDirectory: logDir,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
			},
		},
	}
}
