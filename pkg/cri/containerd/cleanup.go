package containerd

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	remote "k8s.io/cri-client/pkg"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/util/mount"
)

// cniResultsDir is the CNI plugins' machine-wide result cache (libcni's fixed path).
var cniResultsDir = "/var/lib/cni/results"

// Cleaned says what Cleanup found and removed.
type Cleaned struct {
	// Sandboxes is how many pod sandboxes (with their containers) were stopped and removed.
	Sandboxes int
	// Processes is how many containerd and shim processes had to be ended.
	Processes int
	// Bridge and PodCIDR are the network of the containerd, as its CNI config names them
	// (PodCIDR is empty if the node never learnt one).
	Bridge, PodCIDR string
}

// Cleanup leaves the machine as it was before berth started containerd from stateDir (the
// StateDir of a Start whose containerd and node are gone for good): every pod sandbox stopped
// and removed over the CRI (which kills the containers, unmounts their root filesystems and
// releases their network) and its pod log directory removed, containerd and its shims ended, leftover mounts under stateDir
// undone, the masquerade rule and the bridge deleted, and the network's entries in the CNI
// result cache and its host-local IPAM files removed. Only containerd can tear its sandboxes
// down, so Cleanup starts it again from the config berth wrote if it is not running. Images
// and the rest of stateDir stay. A stateDir without berth's config is nothing to clean.
//
// The node agent must have stopped: a running one would start its pods again.
func Cleanup(ctx context.Context, stateDir string) (Cleaned, error) {
	logger := klog.FromContext(ctx)
	var done Cleaned
	stateDir, err := filepath.Abs(stateDir)
	if err != nil {
		return done, err
	}
	config := filepath.Join(stateDir, configFile)
	data, err := os.ReadFile(config)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return done, fmt.Errorf("containerd: %w", err)
	}
	socket := grpcAddress(string(data))
	if socket == "" {
		socket = filepath.Join(stateDir, defaultSocket)
	}
	endpoint := "unix://" + socket
	done.Bridge, done.PodCIDR = networkOf(stateDir)

	var errs []error
	var restarted *Process
	if !Available(ctx, endpoint) {
		p, err := restart(ctx, stateDir, config, endpoint)
		if err != nil {
			errs = append(errs, fmt.Errorf("containerd: starting it again to remove its pods: %w", err))
		}
		restarted = p
	}
	if restarted != nil || Available(ctx, endpoint) {
		n, err := removeAllSandboxes(ctx, endpoint)
		done.Sandboxes = n
		if err != nil {
			errs = append(errs, err)
		}
	}
	if restarted != nil {
		if err := restarted.Stop(); err != nil {
			errs = append(errs, err)
		}
	}
	// What is left: a containerd that outlived its node, and shims of containers that
	// containerd could not remove. Shims name containerd's socket in -address.
	done.Processes = endProcesses(func(args []string) bool {
		joined := strings.Join(args, " ")
		return strings.Contains(joined, "--config "+config) || strings.Contains(joined, "-address "+socket)
	})
	if err := mount.UnmountUnder(stateDir); err != nil {
		errs = append(errs, fmt.Errorf("containerd: %w", err))
	}
	if done.Bridge != "" {
		if err := removeMasqueradeOf(ctx, done.Bridge); err != nil {
			errs = append(errs, err)
		}
		if err := deleteBridge(ctx, done.Bridge, endpoint); err != nil {
			errs = append(errs, err)
		}
		if err := removeCNIResults(done.Bridge); err != nil {
			errs = append(errs, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(stateDir, cniIPAMDir)); err != nil {
		errs = append(errs, fmt.Errorf("containerd: %w", err))
	}
	logger.V(2).Info("Cleaned up after containerd", "stateDir", stateDir, "sandboxes", done.Sandboxes, "processes", done.Processes, "bridge", done.Bridge)
	return done, errors.Join(errs...)
}

// grpcAddress is the [grpc] address of a config.toml that containerdConfig wrote.
func grpcAddress(config string) string {
	inGRPC := false
	for _, line := range strings.Split(config, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			inGRPC = line == "[grpc]"
			continue
		}
		if v, ok := strings.CutPrefix(line, "address = "); ok && inGRPC {
			if s, err := strconv.Unquote(v); err == nil {
				return s
			}
		}
	}
	return ""
}

// bridgeField finds the bridge plugin's "bridge" in a CNI config or berth's template (which
// is not JSON until rendered).
var bridgeField = regexp.MustCompile(`"bridge":\s*("(?:[^"\\]|\\.)*")`)

// networkOf reads the bridge and pod CIDR from the CNI config under stateDir (written by
// berth, or rendered by containerd from berth's template), else the bridge from the template.
func networkOf(stateDir string) (bridge, podCIDR string) {
	confDir := filepath.Join(stateDir, cniConfDir)
	entries, _ := os.ReadDir(confDir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(confDir, e.Name()))
		if err != nil {
			continue
		}
		if b, cidr, ok := bridgeNetwork(data); ok {
			return b, cidr
		}
	}
	data, err := os.ReadFile(filepath.Join(stateDir, cniTemplateFile))
	if err != nil {
		return "", ""
	}
	if m := bridgeField.FindSubmatch(data); m != nil {
		if s, err := strconv.Unquote(string(m[1])); err == nil {
			return s, ""
		}
	}
	return "", ""
}

// bridgeNetwork reads the bridge plugin of berth's CNI network from a conflist: its bridge
// and the first IPAM subnet.
func bridgeNetwork(conflist []byte) (bridge, podCIDR string, ok bool) {
	var list struct {
		Name    string `json:"name"`
		Plugins []struct {
			Type   string `json:"type"`
			Bridge string `json:"bridge"`
			IPAM   struct {
				Ranges [][]struct {
					Subnet string `json:"subnet"`
				} `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal(conflist, &list); err != nil || list.Name != NetworkName {
		return "", "", false
	}
	for _, p := range list.Plugins {
		if p.Type != "bridge" || p.Bridge == "" {
			continue
		}
		if len(p.IPAM.Ranges) > 0 && len(p.IPAM.Ranges[0]) > 0 {
			podCIDR = p.IPAM.Ranges[0][0].Subnet
		}
		return p.Bridge, podCIDR, true
	}
	return "", "", false
}

// restart starts containerd again from the config berth wrote, as Start would, but without
// rewriting anything.
func restart(ctx context.Context, stateDir, config, endpoint string) (*Process, error) {
	binary, err := exec.LookPath("containerd")
	if err != nil {
		return nil, fmt.Errorf("%w (install the containerd package)", err)
	}
	logf, err := os.OpenFile(filepath.Join(stateDir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--config", config)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	p := &Process{cmd: cmd, endpoint: endpoint, config: Config{StateDir: stateDir, Endpoint: socketPath(endpoint)}, log: logf, done: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	if err := p.waitReady(ctx); err != nil {
		_ = p.Stop()
		return nil, fmt.Errorf("%w; its log: %s", err, p.logTail())
	}
	return p, nil
}

// removeAllSandboxes stops and removes every pod sandbox of the runtime on endpoint, and
// says how many it removed.
func removeAllSandboxes(ctx context.Context, endpoint string) (int, error) {
	rs, err := remote.NewRemoteRuntimeServiceBuilder().
		WithEndpoint(endpoint).
		WithConnectionTimeout(probeTimeout).
		WithTracerProvider(nil).
		Build(ctx)
	if err != nil {
		return 0, fmt.Errorf("containerd: connecting to remove its pods: %w", err)
	}
	defer closeQuietly(ctx, rs)
	sandboxes, err := rs.ListPodSandbox(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("containerd: listing pod sandboxes: %w", err)
	}
	var errs []error
	n := 0
	for _, sb := range sandboxes {
		logDir := sandboxLogDir(ctx, rs, sb)
		if err := rs.StopPodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, fmt.Errorf("containerd: stopping pod sandbox %s: %w", sb.Id, err))
			continue
		}
		if err := rs.RemovePodSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, fmt.Errorf("containerd: removing pod sandbox %s: %w", sb.Id, err))
			continue
		}
		n++
		// The node agent removes a deleted pod's logs; with the node gone, Cleanup does.
		if logDir != "" {
			if err := os.RemoveAll(logDir); err != nil {
				errs = append(errs, fmt.Errorf("containerd: removing the logs of pod sandbox %s: %w", sb.Id, err))
			}
		}
	}
	return n, errors.Join(errs...)
}

// sandboxLogDir is the pod log directory in a sandbox's config, as containerd's verbose
// status shows it, when it is a node agent's ROOT/<namespace>_<name>_<uid> of that pod;
// otherwise "" (nothing of which Cleanup can be sure that it is the pod's alone).
func sandboxLogDir(ctx context.Context, rs internalapi.RuntimeService, sb *runtimeapi.PodSandbox) string {
	md := sb.GetMetadata()
	if md == nil {
		return ""
	}
	st, err := rs.PodSandboxStatus(ctx, sb.Id, true)
	if err != nil || st.GetInfo()["info"] == "" {
		return ""
	}
	var info struct {
		Config struct {
			LogDirectory      string `json:"log_directory"`
			LogDirectoryCamel string `json:"logDirectory"`
		} `json:"config"`
	}
	if json.Unmarshal([]byte(st.GetInfo()["info"]), &info) != nil {
		return ""
	}
	dir := info.Config.LogDirectory
	if dir == "" {
		dir = info.Config.LogDirectoryCamel
	}
	if !filepath.IsAbs(dir) || filepath.Base(dir) != md.Namespace+"_"+md.Name+"_"+md.Uid || md.Namespace == "" || md.Name == "" || md.Uid == "" {
		return ""
	}
	return filepath.Clean(dir)
}

// endProcesses ends every process whose command line matches: SIGTERM, then SIGKILL for
// those still there after stopTimeout. It returns once they are gone (or after another
// stopTimeout), with how many there were.
func endProcesses(match func(args []string) bool) int {
	pids := matchingProcesses(match)
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGTERM)
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, 0} {
		deadline := time.Now().Add(stopTimeout)
		for time.Now().Before(deadline) && anyAlive(pids) {
			time.Sleep(20 * time.Millisecond)
		}
		if sig == 0 {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, sig)
		}
	}
	return len(pids)
}

// matchingProcesses are the IDs of the processes, this one aside, whose command line matches.
func matchingProcesses(match func(args []string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(data) == 0 {
			continue
		}
		if match(strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// anyAlive reports whether one of pids still runs (a zombie does not).
func anyAlive(pids []int) bool {
	for _, pid := range pids {
		if processAlive(pid) {
			return true
		}
	}
	return false
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return false
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if state, ok := strings.CutPrefix(s.Text(), "State:"); ok {
			return !strings.HasPrefix(strings.TrimSpace(state), "Z")
		}
	}
	return true
}

// masqueradeComment starts the comment of ensureMasquerade's rule for bridge.
func masqueradeComment(bridge string) string { return "berth " + bridge + ": " }

// removeMasqueradeOf deletes the NAT rules ensureMasquerade added for bridge, in IPv4 and
// IPv6.
func removeMasqueradeOf(ctx context.Context, bridge string) error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		if _, err := exec.LookPath(tool); err != nil {
			continue
		}
		out, err := exec.CommandContext(ctx, tool, "-w", "-t", "nat", "-S", "POSTROUTING").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("containerd: %s -S: %w", tool, err))
			continue
		}
		for _, line := range strings.Split(string(out), "\n") {
			rule := splitQuoted(strings.TrimPrefix(line, "-A "))
			if !strings.HasPrefix(line, "-A ") || !hasComment(rule, masqueradeComment(bridge)) {
				continue
			}
			args := append([]string{"-w", "-t", "nat", "-D"}, rule...)
			if out, err := exec.CommandContext(ctx, tool, args...).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("containerd: %s -D: %w: %s", tool, err, strings.TrimSpace(string(out))))
			}
		}
	}
	return errors.Join(errs...)
}

// hasComment reports whether a rule's --comment starts with prefix.
func hasComment(rule []string, prefix string) bool {
	for i, a := range rule {
		if a == "--comment" && i+1 < len(rule) && strings.HasPrefix(rule[i+1], prefix) {
			return true
		}
	}
	return false
}

// deleteBridge deletes the bridge unless it is gone or belongs to another containerd that
// answers (a node started since with the same bridge name).
func deleteBridge(ctx context.Context, bridge, endpoint string) error {
	l, err := showLink(ctx, bridge)
	if errors.Is(err, errNoLink) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	if owner, ok := l.berthEndpoint(); ok && owner != endpoint && Available(ctx, owner) {
		return fmt.Errorf("containerd: bridge %s now belongs to the containerd at %s; leaving it", bridge, owner)
	}
	if err := deleteLink(ctx, bridge); err != nil {
		return fmt.Errorf("containerd: deleting bridge %s: %w", bridge, err)
	}
	return nil
}

// removeCNIResults removes the CNI result cache entries of berth's network on bridge: those
// that CNI DEL did not remove because containerd lost a sandbox. Entries of berth's network
// on other bridges (other nodes on the machine) stay.
func removeCNIResults(bridge string) error {
	entries, err := os.ReadDir(cniResultsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), NetworkName+"-") {
			continue
		}
		path := filepath.Join(cniResultsDir, e.Name())
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// libcni's cache entry: the network config list, base64 in "config".
		var entry struct {
			Config      []byte `json:"config"`
			NetworkName string `json:"networkName"`
		}
		if json.Unmarshal(data, &entry) != nil || entry.NetworkName != NetworkName {
			continue
		}
		if b, _, ok := bridgeNetwork(entry.Config); !ok || b != bridge {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("containerd: %w", err))
		}
	}
	return errors.Join(errs...)
}
