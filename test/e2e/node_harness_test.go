package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	berthcluster "github.com/berth-cluster/berth/pkg/cluster"
	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

// nodeReadyTimeout bounds a node agent's start, from exec to its Node being Ready.
const nodeReadyTimeout = 2 * time.Minute

// node is what one node agent of the tests needs to live beside any other on the machine
// (MACHINE-NOTES: containerd's dirs and socket, the bridge, the pod CIDR, the node port and
// the pod logs must all differ), and how to clean up after it.
type node struct {
	name    string
	dataDir string // berth's data dir: the node's state in dataDir/node
	bridge  string
	podCIDR string
	port    int
	// serviceRange and nodePorts are its berth up's Service ranges: every cluster's service
	// proxy sees every packet of the machine, so that no two clusters alive at once may
	// share a cluster IP or a node port.
	serviceRange, nodePorts string
}

// newNode picks a bridge, pod CIDR and node API port no other node of this run uses.
func newNode(name, dataDir string) (*node, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cidr, err := freePodCIDR()
	if err != nil {
		return nil, err
	}
	serviceRange, err := freeServiceRange()
	if err != nil {
		return nil, err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &node{name: name, dataDir: dataDir, bridge: "be2e" + hex.EncodeToString(b), podCIDR: cidr, port: port,
		serviceRange: serviceRange, nodePorts: nextNodePortRange()}, nil
}

// upArgs are args and the Service ranges, for `berth up`.
func (n *node) upArgs() []string {
	return append(n.args(), "--service-cluster-ip-range", n.serviceRange, "--service-node-port-range", n.nodePorts)
}

// args are the node flags of `berth up` and `berth node`.
func (n *node) args() []string {
	return []string{
		"--node-name", n.name,
		"--bridge", n.bridge,
		"--pod-cidr", n.podCIDR,
		"--node-port", strconv.Itoa(n.port),
		"--pod-logs-dir", filepath.Join(n.dataDir, "pod-logs"),
	}
}

// containerdDir is where the node's own containerd keeps its state and socket.
func (n *node) containerdDir() string { return filepath.Join(n.dataDir, "node", "containerd") }

func (n *node) runtimeEndpoint() string {
	return "unix://" + filepath.Join(n.containerdDir(), "containerd.sock")
}

// runtime connects to the node's containerd through the CRI; the connection closes when
// the test ends.
func (n *node) runtime(t *testing.T) internalapi.RuntimeService {
	t.Helper()
	rs, err := n.connect()
	if err != nil {
		t.Fatalf("connecting to the node's runtime: %v", err)
	}
	t.Cleanup(func() { rs.Close(context.Background()) })
	return rs
}

func (n *node) connect() (internalapi.RuntimeService, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs, is, err := cri.Connect(ctx, n.runtimeEndpoint())
	if err != nil {
		return nil, err
	}
	is.Close(ctx)
	return rs, nil
}

// runningContainers lists the containers running on the node for pods of namespace ns.
func runningContainers(t *testing.T, rs internalapi.RuntimeService, ns string) []*runtimeapi.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := rs.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns},
	})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	return l
}

// cleanup leaves the machine as it was before the node, with the code of
// `berth down --cleanup` (cluster.Cleanup): every sandbox stopped and removed, containerd
// and its shims ended, leftover mounts under the data dir undone, the bridge and the
// masquerade rule gone. berth's node agent must have stopped.
func (n *node) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := berthcluster.Cleanup(ctx, n.dataDir)
	if _, lookupErr := net.InterfaceByName(n.bridge); lookupErr == nil {
		err = errors.Join(err, fmt.Errorf("bridge %s is still there after the cleanup", n.bridge))
	}
	return err
}

// freePodCIDR is a random 10.x.y.0/24 of 10.64.0.0/10 that no interface's address overlaps
// and no other node of this run has.
func freePodCIDR() (string, error) { return freeCIDR(64, "pod CIDR") }

// freeServiceRange is a 10.x.y.0/24 of 10.128.0.0/10, away from the pod CIDRs, that no
// interface's address overlaps and no other cluster of this run has.
func freeServiceRange() (string, error) { return freeCIDR(128, "service range") }

// freeCIDR is a random free 10.x.y.0/24 with x in [second, second+64).
func freeCIDR(second int, what string) (string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	portsMu.Lock() // cidrsGiven shares the ports' lock
	defer portsMu.Unlock()
	for range 1000 {
		n, _ := rand.Int(rand.Reader, big.NewInt(1<<14))
		v := second<<8 + int(n.Int64())
		cidr := fmt.Sprintf("10.%d.%d.0/24", v>>8, v&0xff)
		_, ipnet, _ := net.ParseCIDR(cidr)
		free := !cidrsGiven[cidr]
		for _, a := range addrs {
			if in, ok := a.(*net.IPNet); ok && (ipnet.Contains(in.IP) || in.Contains(ipnet.IP)) {
				free = false
			}
		}
		if free {
			cidrsGiven[cidr] = true
			return cidr, nil
		}
	}
	return "", errors.New("no free " + what)
}

var cidrsGiven = map[string]bool{}

// nodePortRanges counts the node port ranges given: 100 ports each, in turn through
// 30000-32699, so that the clusters alive at once (far fewer than 27) never share one.
var nodePortRanges atomic.Int64

func nextNodePortRange() string {
	first := 30000 + 100*int((nodePortRanges.Add(1)-1)%27)
	return fmt.Sprintf("%d-%d", first, first+99)
}

// registry is the loopback registry the node tests pull from: the busybox image of
// Debian's busybox-static, as busybox:e2e. It lives as long as the test binary.
var registry struct {
	once sync.Once
	host string
	err  error
}

// busyboxImage is the name of the test image in the loopback registry.
func busyboxImage(t *testing.T) string {
	t.Helper()
	registry.once.Do(func() {
		img, err := testimage.Busybox("e2e")
		if err != nil {
			registry.err = err
			return
		}
		registry.host, registry.err = testimage.ServeForever(map[string]v1.Image{"busybox:e2e": img})
	})
	if registry.err != nil {
		t.Fatalf("the test registry: %v", registry.err)
	}
	return registry.host + "/busybox:e2e"
}

// registryHost is the loopback registry's host:port.
func registryHost(t *testing.T) string {
	t.Helper()
	busyboxImage(t)
	return registry.host
}

// nodeShared is the `berth up` with a node agent that the node tests share, started on
// first use and stopped (its pods deleted, the node cleaned up) by TestMain.
var nodeShared struct {
	sync.Mutex
	c    *cluster
	node *node
	err  error
}

// nodeCluster returns the shared cluster with a Ready node. A test that fails gets what
// berth wrote while it ran.
func nodeCluster(t *testing.T) (*cluster, *node) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("the node tests run containerd and need root (CI runs them as root)")
	}
	nodeShared.Lock()
	defer nodeShared.Unlock()
	if nodeShared.c == nil && nodeShared.err == nil {
		dir := filepath.Join(workDir, "node")
		n, err := newNode("e2e-node", dir)
		var c *cluster
		if err == nil {
			c, err = newCluster("up", dir, n.upArgs()...)
		}
		if err == nil {
			err = c.start()
		}
		if err == nil {
			err = waitNodeReady(c, n.name)
		}
		nodeShared.c, nodeShared.node, nodeShared.err = c, n, err
	}
	if nodeShared.err != nil {
		t.Fatalf("the shared berth up with a node did not start: %v", nodeShared.err)
	}
	p := nodeShared.c.proc
	if p.exited() {
		t.Fatalf("the shared berth up with a node has exited (%v); its output:\n%s", p.err, tail(p.output.String(), 200))
	}
	offset := p.output.Len()
	t.Cleanup(func() {
		if t.Failed() {
			out := p.output.since(offset)
			t.Logf("berth up's output while this test ran:\n%s", tail(out, 300))
			// A recovered panic's lines (with its stack) may lie before the tail: berth's own
			// boundaries log "Recovered from a panic", the libraries' (utilruntime.HandleCrash,
			// counted as component "library") "Observed a panic", the stack on the lines after.
			lines := strings.Split(out, "\n")
			for i, line := range lines {
				if strings.Contains(line, "Recovered from a panic") || strings.Contains(line, "Observed a panic") {
					t.Logf("a recovered panic while this test ran:\n%s", strings.Join(lines[i:min(i+40, len(lines))], "\n"))
				}
			}
		}
	})
	return nodeShared.c, nodeShared.node
}

// stopNodeShared stops the node tests' cluster and cleans its node up.
func stopNodeShared() error {
	nodeShared.Lock()
	defer nodeShared.Unlock()
	if nodeShared.node == nil {
		return nil
	}
	var errs []error
	if c := nodeShared.c; c != nil && c.proc != nil {
		if err := c.stop(); err != nil {
			errs = append(errs, fmt.Errorf("%w; its output:\n%s", err, tail(c.proc.output.String(), 100)))
		}
	}
	if err := nodeShared.node.cleanup(); err != nil {
		errs = append(errs, fmt.Errorf("cleaning up the node: %w", err))
	}
	return errors.Join(errs...)
}

// waitNodeReady waits until the Node is Ready, as kubectl sees it.
func waitNodeReady(c *cluster, name string) error {
	deadline := time.Now().Add(nodeReadyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := execKubectl(ctx, kubectlBin, c.kubeconfig(), nil, "", "get", "node", name,
			"-o", `jsonpath={.status.conditions[?(@.type=="Ready")].status}`)
		cancel()
		if err == nil && r.code == 0 && r.stdout == "True" {
			return nil
		}
		if c.proc != nil && c.proc.exited() {
			return fmt.Errorf("berth exited before node %s was Ready; its output:\n%s", name, tail(c.proc.output.String(), 100))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("node %s not Ready within %s (last: %s); berth's output:\n%s", name, nodeReadyTimeout, r, tail(c.proc.output.String(), 100))
		}
		time.Sleep(200 * time.Millisecond)
	}
}
