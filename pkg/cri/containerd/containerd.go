// Package containerd is berth's launcher of containerd, the node agent's default container
// runtime: the CRI endpoint behind the "runtime" of seed 000's initializeModules and
// updateRuntimeUp, and the sandbox → CNI → containers path of seed 001. When no CRI runtime
// answers on the node's endpoint, `berth node` starts containerd from the distribution's
// package with a config it writes (Start): the CRI plugin with berth's sandbox image, runc
// on cgroupfs, the overlayfs snapshotter, a CNI bridge on the node's pod CIDR, and loopback
// registries over plain HTTP. Cleanup undoes all of it for a node that goes for good
// (`berth down --cleanup`).
package containerd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/cri/pause"
)

// Config says where and how to run containerd.
type Config struct {
	// StateDir is berth's directory for this containerd: its root, state, config, socket,
	// log, CNI config and IPAM allocations live under it. Required.
	StateDir string
	// Endpoint is the unix socket to serve on, as a path or a unix:// URL.
	// Default: StateDir/containerd.sock.
	Endpoint string
	// PodCIDR is the node's pod CIDR. When empty, containerd renders the CNI config later,
	// from the pod CIDR the node agent sends with CRI UpdateRuntimeConfig; until then the
	// runtime reports NetworkReady false.
	PodCIDR string
	// CNIBinDir holds the CNI plugins. Default: the first of /usr/lib/cni, /opt/cni/bin that
	// has "bridge".
	CNIBinDir string
	// Bridge is the Linux bridge pods attach to. Default "berth0". Two nodes on one machine
	// need different bridges (and pod CIDRs).
	Bridge string
	// SandboxImage is the pod sandbox ("pause") image. Default pause.ImageName.
	SandboxImage string
	// LogLevel is containerd's log level. Default "info".
	LogLevel string
	// Binary is the containerd program. Default "containerd" from PATH.
	Binary string
}

// cniBinDirs are the distributions' folders of CNI plugins, in order of preference.
var cniBinDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

const (
	startTimeout = time.Minute
	stopTimeout  = 10 * time.Second
	// probeTimeout bounds one "does a runtime answer?" check.
	probeTimeout = 3 * time.Second
	// maxSocketPath is the room in sockaddr_un, less the ".ttrpc" containerd appends for its
	// second socket.
	maxSocketPath = 107 - len(".ttrpc")
)

// withDefaults fills in c's defaults and checks it.
func (c Config) withDefaults() (Config, error) {
	if c.StateDir == "" {
		return c, errors.New("containerd: StateDir is required")
	}
	dir, err := filepath.Abs(c.StateDir)
	if err != nil {
		return c, err
	}
	c.StateDir = dir
	if c.Endpoint == "" {
		c.Endpoint = filepath.Join(c.StateDir, defaultSocket)
	}
	if !filepath.IsAbs(socketPath(c.Endpoint)) {
		return c, fmt.Errorf("containerd: endpoint %q is not an absolute unix socket path", c.Endpoint)
	}
	if len(socketPath(c.Endpoint)) > maxSocketPath {
		return c, fmt.Errorf("containerd: socket path %q is longer than %d bytes", socketPath(c.Endpoint), maxSocketPath)
	}
	if c.PodCIDR != "" {
		_, ipnet, err := net.ParseCIDR(c.PodCIDR)
		if err != nil {
			return c, fmt.Errorf("containerd: pod CIDR: %w", err)
		}
		c.PodCIDR = ipnet.String()
	}
	if c.CNIBinDir == "" {
		for _, d := range cniBinDirs {
			if _, err := os.Stat(filepath.Join(d, "bridge")); err == nil {
				c.CNIBinDir = d
				break
			}
		}
		if c.CNIBinDir == "" {
			return c, fmt.Errorf("containerd: no CNI plugins: none of %s has \"bridge\" (install containernetworking-plugins)", strings.Join(cniBinDirs, ", "))
		}
	}
	if c.Bridge == "" {
		c.Bridge = DefaultBridge
	}
	if len(c.Bridge) > 15 {
		return c, fmt.Errorf("containerd: bridge name %q is longer than 15 bytes", c.Bridge)
	}
	if c.SandboxImage == "" {
		c.SandboxImage = pause.ImageName
	}
	if c.LogLevel == "" {
		c.LogLevel = "info"
	}
	if c.Binary == "" {
		c.Binary = "containerd"
	}
	return c, nil
}

// socketPath is the file of a unix endpoint given as a path or a unix:// URL.
func socketPath(endpoint string) string { return strings.TrimPrefix(endpoint, "unix://") }

// Process is a containerd that berth started.
type Process struct {
	cmd      *exec.Cmd
	endpoint string
	config   Config
	log      *os.File
	done     chan struct{} // closed once containerd has exited and waitErr is set
	waitErr  error
}

// Start writes containerd's config and CNI config under c.StateDir, makes the pod bridge
// (deleting stale berth bridges that route the pod CIDR, refusing when another interface
// does: see bridge.go), starts containerd as a child in its own process group (output
// appended to StateDir/containerd.log), and returns once its CRI service answers. It fails
// if a runtime already answers on the endpoint. containerd outlives ctx: only Stop ends it,
// and the bridge stays after Stop (pods may still run in their shims; Cleanup removes it).
func Start(ctx context.Context, c Config) (*Process, error) {
	c, err := c.withDefaults()
	if err != nil {
		return nil, err
	}
	endpoint := "unix://" + socketPath(c.Endpoint)
	if Available(ctx, endpoint) {
		return nil, fmt.Errorf("containerd: a CRI runtime already answers on %s", endpoint)
	}
	binary, err := exec.LookPath(c.Binary)
	if err != nil {
		return nil, fmt.Errorf("containerd: %w (install the containerd package)", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return nil, fmt.Errorf("containerd: %w (install the iproute2 package)", err)
	}
	// The configs first: they are also the record Cleanup goes by.
	if err := writeConfigs(c); err != nil {
		return nil, err
	}
	if c.PodCIDR != "" {
		if err := takeOverPodCIDR(ctx, c, endpoint); err != nil {
			return nil, err
		}
	}
	created, err := ensureBridge(ctx, c, endpoint)
	if err != nil {
		return nil, err
	}
	if c.PodCIDR != "" {
		if err := ensureGateway(ctx, c); err != nil {
			if created {
				_ = deleteLink(context.WithoutCancel(ctx), c.Bridge)
			}
			return nil, err
		}
	}
	p, err := launch(ctx, c, endpoint, binary)
	if err != nil && created {
		// A bridge berth made for a containerd that never ran is no one's.
		_ = deleteLink(context.WithoutCancel(ctx), c.Bridge)
	}
	return p, err
}

// launch masquerades the pod CIDR, starts containerd and waits until it serves.
func launch(ctx context.Context, c Config, endpoint, binary string) (*Process, error) {
	logger := klog.FromContext(ctx)
	if c.PodCIDR != "" {
		if err := ensureMasquerade(ctx, c.PodCIDR, c.Bridge); err != nil {
			return nil, err
		}
	}
	logf, err := os.OpenFile(filepath.Join(c.StateDir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("containerd: %w", err)
	}
	cmd := exec.Command(binary, "--config", filepath.Join(c.StateDir, configFile))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("containerd: start %s: %w", binary, err)
	}
	p := &Process{cmd: cmd, endpoint: endpoint, config: c, log: logf, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	logger.Info("Started containerd", "pid", cmd.Process.Pid, "endpoint", endpoint, "stateDir", c.StateDir, "podCIDR", c.PodCIDR)

	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("containerd: %w; its log: %s", err, p.logTail())
	}
	logger.V(2).Info("containerd answers on its CRI socket", "endpoint", endpoint)
	return p, nil
}

// writeConfigs writes config.toml, the CNI template and, when the pod CIDR is known, the CNI
// config list; stale CNI configs go, so that the one containerd loads is berth's.
func writeConfigs(c Config) error {
	for _, d := range []string{c.StateDir, filepath.Join(c.StateDir, cniConfDir), filepath.Join(c.StateDir, registryHostsDir), filepath.Dir(socketPath(c.Endpoint))} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}
	write := func(rel string, data []byte) error {
		path := rel
		if !filepath.IsAbs(rel) {
			path = filepath.Join(c.StateDir, rel)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
		return nil
	}
	if err := write(configFile, []byte(containerdConfig(c, socketPath(c.Endpoint)))); err != nil {
		return err
	}
	if err := write(cniTemplateFile, []byte(cniTemplate(c))); err != nil {
		return err
	}
	confDir := filepath.Join(c.StateDir, cniConfDir)
	stale, err := os.ReadDir(confDir)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	for _, e := range stale {
		if err := os.Remove(filepath.Join(confDir, e.Name())); err != nil {
			return fmt.Errorf("containerd: %w", err)
		}
	}
	if c.PodCIDR == "" {
		return nil
	}
	conf, err := cniConfList(c, c.PodCIDR)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	return write(filepath.Join(confDir, cniConfFile), conf)
}

// waitReady polls the CRI socket until it answers, containerd exits, or startTimeout (or
// ctx) runs out.
func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if Available(ctx, p.endpoint) {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("exited before serving: %v", p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not serving on %s: %w", p.endpoint, ctx.Err())
		case <-tick.C:
		}
	}
}

// logTail is the end of containerd's log, for error messages.
func (p *Process) logTail() string {
	data, err := os.ReadFile(p.LogFile())
	if err != nil {
		return err.Error()
	}
	const max = 2000
	if len(data) > max {
		data = data[len(data)-max:]
	}
	return string(bytes.TrimSpace(data))
}

// Endpoint is the CRI endpoint, a unix:// URL.
func (p *Process) Endpoint() string { return p.endpoint }

// Socket is the path of containerd's gRPC socket (for ctr --address).
func (p *Process) Socket() string { return socketPath(p.endpoint) }

// LogFile is the file containerd's output goes to.
func (p *Process) LogFile() string { return filepath.Join(p.config.StateDir, logFile) }

// Config is the config containerd runs with, defaults filled in.
func (p *Process) Config() Config { return p.config }

// Pid is containerd's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed when containerd has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Stop ends containerd: SIGTERM, then SIGKILL after 10 s; it returns once containerd has
// exited. Containers keep running in their shims (as with any containerd restart). It
// returns nil if containerd exited on SIGTERM or had already exited.
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(stopTimeout):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	return fmt.Errorf("containerd: killed after ignoring SIGTERM for %v", stopTimeout)
}

// Available reports whether a CRI runtime answers (the Version RPC) on endpoint.
func Available(ctx context.Context, endpoint string) bool {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	if !strings.Contains(endpoint, "://") {
		endpoint = "unix://" + endpoint
	}
	if strings.HasPrefix(endpoint, "unix://") {
		if _, err := os.Stat(socketPath(endpoint)); err != nil {
			return false
		}
	}
	rs, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(probeTimeout).
		WithTracerProvider(nil).
		Build(klog.NewContext(ctx, klog.FromContext(ctx).V(4))) // quiet: Start polls
	if err != nil {
		return false
	}
	defer closeQuietly(ctx, rs)
	return true
}

func closeQuietly(ctx context.Context, rs internalapi.RuntimeService) { _ = rs.Close(ctx) }

// ensureMasquerade adds, once, the NAT rule that lets pods reach addresses outside the pod
// CIDR: traffic from the CIDR to anywhere else leaves with the node's address.
func ensureMasquerade(ctx context.Context, podCIDR, bridge string) error {
	ip, ipnet, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return fmt.Errorf("containerd: pod CIDR: %w", err)
	}
	tool := "iptables"
	if ip.To4() == nil {
		tool = "ip6tables"
	}
	if _, err := exec.LookPath(tool); err != nil {
		return fmt.Errorf("containerd: %w (install the iptables package)", err)
	}
	cidr := ipnet.String()
	rule := []string{"POSTROUTING", "-s", cidr, "!", "-d", cidr,
		"-m", "comment", "--comment", "berth " + bridge + ": pods leaving " + cidr, "-j", "MASQUERADE"}
	run := func(op string) error {
		out, err := exec.CommandContext(ctx, tool, append([]string{"-w", "-t", "nat", op}, rule...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %w: %s", tool, op, err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	if run("-C") == nil {
		return nil
	}
	if err := run("-A"); err != nil {
		return fmt.Errorf("containerd: masquerading the pod CIDR: %w", err)
	}
	return nil
}

// RemoveMasquerade deletes the NAT rules that ensureMasquerade added for podCIDR. A node
// that stops leaves its rule (its pods keep running); this is for those that go for good.
func RemoveMasquerade(ctx context.Context, podCIDR string) error {
	ip, ipnet, err := net.ParseCIDR(podCIDR)
	if err != nil {
		return err
	}
	tool := "iptables"
	if ip.To4() == nil {
		tool = "ip6tables"
	}
	out, err := exec.CommandContext(ctx, tool, "-w", "-t", "nat", "-S", "POSTROUTING").Output()
	if err != nil {
		return fmt.Errorf("%s -S: %w", tool, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "-A POSTROUTING -s "+ipnet.String()+" ") || !strings.Contains(line, "berth ") {
			continue
		}
		// -S prints a rule as -A arguments; -D takes the same ones. The comment is quoted.
		args := []string{"-w", "-t", "nat", "-D"}
		for _, f := range splitQuoted(strings.TrimPrefix(line, "-A ")) {
			args = append(args, f)
		}
		if out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s -D: %w: %s", tool, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// splitQuoted splits iptables -S output into arguments, keeping "double quoted" ones whole.
func splitQuoted(s string) []string {
	var args []string
	var cur strings.Builder
	quoted, inArg := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inArg = !quoted, true
		case r == ' ' && !quoted:
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args
}
