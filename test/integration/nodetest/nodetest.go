// Package nodetest runs whole node agents inside a test process: the real API server on real
// etcd (test/integration/framework) and node agents built by node.NewKubelet on the
// in-memory CRI runtime (pkg/cri/memory), as berth sim builds them. Pods are bound by
// spec.nodeName, so no scheduler runs; the node agent's config source, sync loop, pod
// workers, PLEG and status manager are the real ones.
package nodetest

import (
	"context"
	"fmt"
	"net"

	"path/filepath"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri/memory"
	"github.com/berth-cluster/berth/pkg/node"
	"github.com/berth-cluster/berth/pkg/node/envvars"
	"github.com/berth-cluster/berth/pkg/node/nodestatus"
	"github.com/berth-cluster/berth/pkg/node/token"
	"github.com/berth-cluster/berth/pkg/util/mount"
	"github.com/berth-cluster/berth/test/integration/framework"
)

// NodeOptions shape a node.
type NodeOptions struct {
	// MaxPods is the node's pod capacity (110 when 0).
	MaxPods int32
	// PodCIDR is where the runtime's pod IPs come from ("" is the in-memory runtime's
	// 10.88.0.0/16). A loopback range makes HTTP probes and hooks of generated pods fail at
	// once rather than wait for an unroutable address.
	PodCIDR string
	// NoEvents drops the node agent's events instead of writing them to the API (a
	// thousand-pod run writes fewer objects).
	NoEvents bool
	// Services, when set, are the Services the node's containers get their variables from
	// (run by the test); nil: the node agent watches the API server's own.
	Services *envvars.Services
	// Tokens, when set, is the node's service-account token manager (run by the test, which
	// may move its clock); nil: the node agent's own.
	Tokens *token.Manager
	// NodeIP is the node's InternalIP (127.0.0.1 when nil).
	NodeIP net.IP
	// ReplaceKubernetesService: containers' KUBERNETES_SERVICE_* point at the API server
	// itself even though the kubernetes Service exists (node.Config's, as berth up's node).
	ReplaceKubernetesService bool
}

// Node is one node agent in process. Its runtime and data dir outlive the agent, so that a
// restarted agent finds the pods it ran.
type Node struct {
	Name    string
	Runtime *memory.Runtime
	DataDir string

	cluster *framework.Cluster
	opts    NodeOptions
	cancel  context.CancelFunc
	done    chan error

	mu sync.Mutex
	// envs are the environments the node agent created containers with, by pod UID and
	// container name (the last one of each).
	envs map[string]map[string]map[string]string
}

// ContainerEnv is the environment the node agent last created the pod's container with; nil
// when it created none.
func (n *Node) ContainerEnv(uid, container string) map[string]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.envs[uid][container]
}

// recordingRuntime is the node's runtime, remembering every container's environment.
type recordingRuntime struct {
	*memory.Runtime
	node *Node
}

func (r recordingRuntime) CreateContainer(ctx context.Context, podSandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	env := map[string]string{}
	for _, kv := range config.GetEnvs() {
		env[kv.Key] = string(kv.Value)
	}
	uid := config.GetLabels()[podUIDLabel]
	r.node.mu.Lock()
	if r.node.envs == nil {
		r.node.envs = map[string]map[string]map[string]string{}
	}
	if r.node.envs[uid] == nil {
		r.node.envs[uid] = map[string]map[string]string{}
	}
	r.node.envs[uid][config.GetMetadata().GetName()] = env
	r.node.mu.Unlock()
	return r.Runtime.CreateContainer(ctx, podSandboxID, config, sandboxConfig)
}

// machine is what every test node reports: big enough that hundreds of generated pods, each
// asking for up to a few cores and GiB, fit (admission would refuse them OutOfcpu).
var machine = nodestatus.MachineInfo{
	NumCores:       4096,
	MemoryCapacity: 16 << 40,
	RootfsCapacity: 16 << 40,
	MachineID:      "nodetest",
	SystemUUID:     "nodetest",
	BootID:         "nodetest-boot",
	KernelVersion:  "6.1.0-nodetest",
	OSImage:        "berth nodetest",
}

// StartNode starts a node agent named name against c; it stops when the test ends.
func StartNode(t testing.TB, c *framework.Cluster, name string, opts NodeOptions) *Node {
	t.Helper()
	dir := t.TempDir()
	// Token and secret volumes are tmpfs mounts under the data dir, which the pods left
	// running at the end keep: unmounted after the node stops, before the dir is removed.
	t.Cleanup(func() {
		if err := mount.UnmountUnder(dir); err != nil {
			t.Error(err)
		}
	})
	rt, err := memory.New(memory.Options{ImageFsMountpoint: dir, PodCIDR: opts.PodCIDR})
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Name: name, Runtime: rt, DataDir: dir, cluster: c, opts: opts}
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Stop(t) })
	return n
}

func (n *Node) start() error {
	kc, err := node.LoadKubeletConfiguration("")
	if err != nil {
		return err
	}
	kc.MaxPods = 110
	if n.opts.MaxPods > 0 {
		kc.MaxPods = n.opts.MaxPods
	}
	kc.PodLogsDir = filepath.Join(n.DataDir, "logs")
	kc.ClusterDNS = []string{"10.96.0.10"}
	// The in-memory runtime streams container events (upstream's EventedPLEG).
	kc.FeatureGates = map[string]bool{node.EventedPLEG: true}
	config := n.cluster.ProtobufConfig()
	config.QPS, config.Burst = -1, 0
	config.UserAgent = "nodetest/" + n.Name
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	ctx = klog.NewContext(ctx, klog.Background().WithValues("node", n.Name))
	var recorder record.EventRecorder = &record.FakeRecorder{}
	var broadcaster record.EventBroadcaster
	if !n.opts.NoEvents {
		broadcaster = record.NewBroadcaster(record.WithContext(ctx))
		broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
		recorder = broadcaster.NewRecorder(scheme.Scheme, v1.EventSource{Component: "kubelet", Host: n.Name})
	}
	m := machine
	kl, updates, err := node.NewKubelet(ctx, node.Config{
		NodeName:  n.Name,
		NodeIP:    n.opts.NodeIP,
		DataDir:   n.DataDir,
		Kubelet:   kc,
		APIServer: config.Host,

		ReplaceKubernetesService: n.opts.ReplaceKubernetesService,
	}, kc, node.Dependencies{
		Client:      client,
		Recorder:    recorder,
		Runtime:     recordingRuntime{n.Runtime, n},
		Images:      n.Runtime,
		Services:    n.opts.Services,
		Tokens:      n.opts.Tokens,
		MachineInfo: func() (*nodestatus.MachineInfo, error) { return &m, nil },
		Simulated:   true,
	})
	if err != nil {
		cancel()
		return err
	}
	n.cancel, n.done = cancel, make(chan error, 1)
	go func() {
		err := kl.Run(ctx, updates)
		if broadcaster != nil {
			broadcaster.Shutdown()
		}
		n.done <- err
	}()
	return nil
}

// Stop stops the node agent and waits until every goroutine of its Run has ended; the
// runtime keeps its pods. Stopping a stopped node does nothing.
func (n *Node) Stop(t testing.TB) {
	t.Helper()
	if n.cancel == nil {
		return
	}
	n.cancel()
	select {
	case err := <-n.done:
		if err != nil {
			t.Errorf("node %s: Run returned %v", n.Name, err)
		}
	case <-time.After(time.Minute):
		t.Errorf("node %s: Run did not return within a minute of its context's end", n.Name)
	}
	n.cancel = nil
}

// Restart stops the node agent and starts a new one on the same runtime and data dir, as a
// restarted `berth node` finds containerd's containers.
func (n *Node) Restart(t testing.TB) {
	t.Helper()
	n.Stop(t)
	if err := n.start(); err != nil {
		t.Fatal(err)
	}
}

// WaitForNodeReady waits until the node is registered and Ready.
func (n *Node) WaitForNodeReady(t testing.TB, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		nd, err := n.cluster.Client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady {
				return c.Status == v1.ConditionTrue, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s did not become Ready within %v: %v", n.Name, timeout, err)
	}
}

// RuntimeLive counts the pod's ready sandboxes and running containers in the runtime: a
// deleted pod has none (its stopped sandbox and dead containers stay until the container GC,
// as on the kubelet).
func (n *Node) RuntimeLive(ctx context.Context, uid string) (sandboxes, containers int, err error) {
	ss, err := n.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
		LabelSelector: map[string]string{podUIDLabel: uid},
	})
	if err != nil {
		return 0, 0, err
	}
	cs, err := n.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{podUIDLabel: uid},
	})
	if err != nil {
		return 0, 0, err
	}
	return len(ss), len(cs), nil
}

// LiveUIDs are the UIDs of the pods that have a ready sandbox or a running container.
func (n *Node) LiveUIDs(ctx context.Context) (map[string]bool, error) {
	live := map[string]bool{}
	ss, err := n.Runtime.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	for _, s := range ss {
		live[s.GetLabels()[podUIDLabel]] = true
	}
	cs, err := n.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		live[c.GetLabels()[podUIDLabel]] = true
	}
	return live, nil
}

// podUIDLabel is the label the node agent puts on every sandbox and container of a pod.
const podUIDLabel = "io.kubernetes.pod.uid"

// PodBuilder builds a pod for a test (MakePod(...).Node(...).Container(...).Obj()).
type PodBuilder struct{ pod *v1.Pod }

// MakePod starts a pod in namespace "default" with no containers.
func MakePod(name string) *PodBuilder {
	return &PodBuilder{pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: new(int64)},
	}}
}

// Namespace sets the pod's namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// Node binds the pod to a node.
func (b *PodBuilder) Node(name string) *PodBuilder { b.pod.Spec.NodeName = name; return b }

// Container adds an app container.
func (b *PodBuilder) Container(name, image string) *PodBuilder {
	b.pod.Spec.Containers = append(b.pod.Spec.Containers, v1.Container{Name: name, Image: image})
	return b
}

// Req sets the requests of the last container ("cpu", "100m", "memory", "64Mi", ...).
func (b *PodBuilder) Req(kv ...string) *PodBuilder {
	c := &b.pod.Spec.Containers[len(b.pod.Spec.Containers)-1]
	if c.Resources.Requests == nil {
		c.Resources.Requests = v1.ResourceList{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		c.Resources.Requests[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return b
}

// Annotation sets an annotation (the in-memory runtime's sim.berth.dev/... script).
func (b *PodBuilder) Annotation(k, v string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

// RestartPolicy sets the pod's restart policy.
func (b *PodBuilder) RestartPolicy(p v1.RestartPolicy) *PodBuilder {
	b.pod.Spec.RestartPolicy = p
	return b
}

// Obj is the pod.
func (b *PodBuilder) Obj() *v1.Pod { return b.pod }

// WaitForPod polls the pod until cond holds, and returns it; it fails the test after timeout
// with the pod's last status.
func WaitForPod(t testing.TB, client kubernetes.Interface, namespace, name string, timeout time.Duration, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		status := "never read"
		if last != nil {
			status = fmt.Sprintf("%+v", last.Status)
		}
		t.Fatalf("pod %s/%s: not %s within %v; last status: %s", namespace, name, what, timeout, status)
	}
	return last
}

// WaitForPodGone waits until the pod is deleted from the API.
func WaitForPodGone(t testing.TB, client kubernetes.Interface, namespace, name string, timeout time.Duration) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s still in the API after %v", namespace, name, timeout)
	}
}

// Running is true once the pod is Running with every container ready.
func Running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// WaitingReason is the reason of the first waiting container of the pod, "" if none waits.
func WaitingReason(p *v1.Pod) string {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, p.Status.EphemeralContainerStatuses} {
		for _, s := range list {
			if s.State.Waiting != nil && s.State.Waiting.Reason != "" {
				return s.State.Waiting.Reason
			}
		}
	}
	return ""
}

// WaitForServiceAccount waits until the namespace's "default" service account exists (the
// API refuses pods before the service account controller made it) and its kube-root-ca.crt
// (which every pod's kube-api-access volume reads), as Kubernetes' e2e framework waits for a
// new namespace.
func WaitForServiceAccount(t testing.TB, client kubernetes.Interface, namespace string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if _, err := client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return false, nil
		}
		_, err := client.CoreV1().ConfigMaps(namespace).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no service account %s/default or ConfigMap kube-root-ca.crt within a minute", namespace)
	}
}
