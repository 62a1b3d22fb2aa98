package kuberuntime

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/randfill"

	podregistry "github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
	"github.com/berth-cluster/berth/pkg/node/container"
)

// fuzzBytes hands out the fuzz input a byte at a time, then zeros: the shape of the pod and
// of its runtime status follows the bytes, so the fuzzer's mutations change it.
type fuzzBytes []byte

func (b *fuzzBytes) next() byte {
	if len(*b) == 0 {
		return 0
	}
	c := (*b)[0]
	*b = (*b)[1:]
	return c
}

func (b *fuzzBytes) pick(n int) int { return int(b.next()) % n }
func (b *fuzzBytes) bool() bool     { return b.next()&1 == 1 }

// fuzzContainerNames is small so that the pod's containers and the runtime's statuses meet.
var fuzzContainerNames = []string{"a", "b", "c", "d"}

func (b *fuzzBytes) container() v1.Container {
	c := v1.Container{Name: fuzzContainerNames[b.pick(len(fuzzContainerNames))], Image: []string{"busybox", "busybox:1", ""}[b.pick(3)]}
	switch b.pick(4) {
	case 1:
		c.RestartPolicy = ptr(v1.ContainerRestartPolicyAlways)
	case 2:
		c.RestartPolicy = ptr(v1.ContainerRestartPolicy("Never"))
	}
	if b.bool() {
		c.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}
	if b.bool() {
		c.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}
	return c
}

// FuzzComputePodActions plans SyncPod for a pod and a runtime status built from the input
// (the shape from its bytes, the details by randfill seeded from it). The planner must not
// panic, and its plan must name only containers the pod has and running ones it saw.
func FuzzComputePodActions(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 0, 1, 0, 0, 1, 1, 0, 1, 1, 2, 0, 1, 1, 0, 2, 1, 3, 0})
	f.Add([]byte{0, 3, 1, 1, 0, 1, 2, 1, 1, 0, 0, 0, 3, 0, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("\x01\x02\x01\x00\x01\x00\x02\x01\x03\x00\x00\x01\x01\x04\x02\x00\x00\x00\x01\x03\x02\x02\x01"))
	f.Add([]byte("the quick brown fox jumps over the lazy dog; the pod restarts its init containers"))
	f.Fuzz(func(t *testing.T, data []byte) {
		b := fuzzBytes(data)
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"}}
		for n := b.pick(4); n > 0; n-- {
			pod.Spec.InitContainers = append(pod.Spec.InitContainers, b.container())
		}
		for n := b.pick(4); n > 0; n-- {
			pod.Spec.Containers = append(pod.Spec.Containers, b.container())
		}
		for n := b.pick(3); n > 0; n-- {
			c := b.container()
			pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(c)})
		}
		pod.Spec.RestartPolicy = []v1.RestartPolicy{"", v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever}[b.pick(4)]
		pod.Spec.HostNetwork = b.bool()
		if b.pick(4) == 0 {
			pod.DeletionTimestamp = &metav1.Time{Time: t0}
		}

		status := &container.PodStatus{ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
		for n := b.pick(4); n > 0; n-- {
			s := &runtimeapi.PodSandboxStatus{
				Id:        fmt.Sprintf("sandbox-%d", n),
				State:     runtimeapi.PodSandboxState(b.pick(3)),
				CreatedAt: t0.UnixNano() - int64(len(status.SandboxStatuses))*int64(time.Hour),
			}
			if b.pick(4) != 0 {
				s.Metadata = &runtimeapi.PodSandboxMetadata{Attempt: uint32(b.next())}
			}
			if b.pick(4) != 0 {
				s.Network = &runtimeapi.PodSandboxNetworkStatus{Ip: []string{"", "10.0.0.2"}[b.pick(2)]}
			}
			if b.pick(4) != 0 {
				s.Linux = &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode(b.pick(4))}}}
			}
			status.SandboxStatuses = append(status.SandboxStatuses, s)
		}
		all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
		for n := b.pick(8); n > 0; n-- {
			cs := &container.Status{
				ID:        container.ContainerID{Type: "containerd", ID: fmt.Sprintf("id-%d", n)},
				Name:      fuzzContainerNames[b.pick(len(fuzzContainerNames))],
				State:     []container.State{container.ContainerStateRunning, container.ContainerStateExited, container.ContainerStateCreated, container.ContainerStateUnknown}[b.pick(4)],
				ExitCode:  []int{0, 1, 137, -1}[b.pick(4)],
				CreatedAt: t0.Add(time.Duration(int8(b.next())) * time.Minute),
			}
			// The hash of the spec the container was made from: the pod's, or a changed one.
			if b.bool() {
				for i := range all {
					if all[i].Name == cs.Name {
						cs.Hash = HashContainer(&all[i])
					}
				}
			}
			status.ContainerStatuses = append(status.ContainerStatuses, cs)
		}
		// The rest (restart counts, times, reasons, extra sandbox fields) randfill picks.
		filler := randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 2).MaxDepth(3)
		for _, cs := range status.ContainerStatuses {
			filler.Fill(&cs.RestartCount)
			filler.Fill(&cs.StartedAt)
			filler.Fill(&cs.Reason)
		}
		probes := fakeProbes{liveness: map[string]ProbeResult{}, startup: map[string]ProbeResult{}}
		for n := b.pick(4); n > 0; n-- {
			id := fmt.Sprintf("id-%d", b.pick(8))
			probes.liveness[id] = ProbeResult(b.pick(3))
			probes.startup[id] = ProbeResult(b.pick(3))
		}
		var results ProbeResults = probes
		if b.pick(4) == 0 {
			results = nil
		}

		// The resources the runtime applied: random, for some containers, or no record
		// keeper at all.
		var actuated ActuatedLookup
		if b.bool() {
			records := map[string]v1.ResourceRequirements{}
			for _, c := range all {
				if b.bool() {
					var r v1.ResourceRequirements
					filler.Fill(&r)
					records[c.Name] = r
				}
			}
			actuated = actuatedMap(records)
		}

		plan := computePodActions(pod, status, results, actuated)
		_ = plan.String()
		for name, list := range plan.ContainersToUpdate {
			for _, u := range list {
				if cs := status.FindContainerStatusByName(u.spec.Name); cs == nil || cs.ID != u.id || cs.State != container.ContainerStateRunning {
					t.Errorf("resizes %s (%s) in place, which does not run as %v: %v", u.spec.Name, name, u.id, plan)
				}
			}
		}
		checkIndexes(t, "InitContainersToStart", plan.InitContainersToStart, len(pod.Spec.InitContainers))
		checkIndexes(t, "ContainersToStart", plan.ContainersToStart, len(pod.Spec.Containers))
		checkIndexes(t, "EphemeralContainersToStart", plan.EphemeralContainersToStart, len(pod.Spec.EphemeralContainers))
		if plan.CreateSandbox && !plan.KillPod {
			t.Errorf("a new sandbox without killing the pod: %v", plan)
		}
		for id := range plan.ContainersToKill {
			found := false
			for _, cs := range status.ContainerStatuses {
				found = found || cs.ID == id
			}
			if !found {
				t.Errorf("kills %v, which the runtime does not have: %v", id, plan)
			}
		}
	})
}

func checkIndexes(t *testing.T, what string, idx []int, n int) {
	t.Helper()
	seen := map[int]bool{}
	for _, i := range idx {
		if i < 0 || i >= n || seen[i] {
			t.Errorf("%s %v: index %d out of [0,%d) or repeated", what, idx, i, n)
		}
		seen[i] = true
	}
}

// fuzzObjects answers every ConfigMap and Secret with a few keys, or not found.
type fuzzObjects struct{}

func (fuzzObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	if name == "missing" {
		return nil, errors.New("configmaps \"missing\" not found")
	}
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data: map[string]string{"a": "1", "b": "$(a)", "1bad": "x", "key": strings.Repeat("v", 100)}}, nil
}

func (fuzzObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if name == "missing" {
		return nil, errors.New("secrets \"missing\" not found")
	}
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data: map[string][]byte{"password": []byte("s3cr3t"), "bin": {0xff, 0}}}, nil
}

// fuzzVolumes sets up every other volume type as an empty directory.
type fuzzVolumes struct{ dir string }

func (v fuzzVolumes) SetUpVolume(_ context.Context, pod *v1.Pod, vol *v1.Volume) (string, bool, bool, error) {
	if vol.PersistentVolumeClaim != nil {
		return "", false, false, nil
	}
	path := filepath.Join(v.dir, string(pod.UID), vol.Name)
	return path, vol.Secret != nil, true, os.MkdirAll(path, 0o755)
}

// fuzzImages says what user an image runs as: root for "root" images, none for "nouser",
// a name for "named", else 1000.
type fuzzImages struct {
	internalapi.ImageManagerService
}

func (fuzzImages) ImageStatus(_ context.Context, spec *runtimeapi.ImageSpec, _ bool) (*runtimeapi.ImageStatusResponse, error) {
	img := &runtimeapi.Image{Id: spec.Image}
	switch {
	case strings.Contains(spec.Image, "root"):
		img.Uid = &runtimeapi.Int64Value{Value: 0}
	case strings.Contains(spec.Image, "named"):
		img.Username = "app"
	case strings.Contains(spec.Image, "nouser"):
	default:
		img.Uid = &runtimeapi.Int64Value{Value: 1000}
	}
	return &runtimeapi.ImageStatusResponse{Image: img}, nil
}

// fuzzSeedRuntimePods are pods as the node agent gets them, to make containers of.
var fuzzSeedRuntimePods = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"default","uid":"u1","labels":{"app":"web"},"annotations":{"a":"b"}},
"spec":{"nodeName":"node-1","hostname":"web-0","subdomain":"svc","setHostnameAsFQDN":true,"enableServiceLinks":true,
"containers":[{"name":"nginx","image":"nginx:1.27","command":["/bin/sh","-c"],"args":["echo $(GREETING) $$(HOME) $(MISSING)"],
"ports":[{"containerPort":80,"hostPort":8080},{"containerPort":53,"hostPort":53,"protocol":"UDP","hostIP":"127.0.0.1"}],
"env":[{"name":"GREETING","value":"hi"},{"name":"NODE","valueFrom":{"fieldRef":{"fieldPath":"spec.nodeName"}}},
{"name":"IPS","valueFrom":{"fieldRef":{"fieldPath":"status.podIPs"}}},{"name":"LBL","valueFrom":{"fieldRef":{"fieldPath":"metadata.labels['app']"}}},
{"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1m"}}},
{"name":"PW","valueFrom":{"secretKeyRef":{"name":"s","key":"password"}}},{"name":"CM","valueFrom":{"configMapKeyRef":{"name":"missing","key":"a","optional":true}}}],
"envFrom":[{"configMapRef":{"name":"cm"},"prefix":"CM_"},{"secretRef":{"name":"s"}}],
"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"1","memory":"128Mi","hugepages-2Mi":"2Mi"}},
"volumeMounts":[{"name":"data","mountPath":"/data","subPath":"web"},{"name":"cfg","mountPath":"/etc/cfg","readOnly":true},
{"name":"logs","mountPath":"/logs","subPathExpr":"$(NODE)"}],"terminationMessagePath":"/dev/termination-log"}],
"volumes":[{"name":"data","emptyDir":{}},{"name":"cfg","configMap":{"name":"cm"}},{"name":"logs","emptyDir":{"medium":"Memory","sizeLimit":"8Mi"}}]}}`,
	`apiVersion: v1
kind: Pod
metadata: {name: secure, namespace: apps, uid: u2}
spec:
  nodeName: node-1
  dnsPolicy: None
  dnsConfig: {nameservers: [1.1.1.1, 8.8.8.8, 9.9.9.9], searches: [a.example, b.example], options: [{name: ndots, value: "3"}, {name: edns0}]}
  hostAliases: [{ip: 10.1.1.1, hostnames: [db, db.local]}]
  securityContext:
    runAsNonRoot: true
    runAsGroup: 3000
    fsGroup: 2000
    supplementalGroups: [4000, 5000]
    seccompProfile: {type: RuntimeDefault}
    sysctls: [{name: net.ipv4.ip_unprivileged_port_start, value: "0"}, {name: kernel/shm_rmid_forced, value: "1"}]
  shareProcessNamespace: true
  containers:
  - name: app
    image: app-named:v1
    securityContext:
      runAsUser: 1000
      readOnlyRootFilesystem: true
      allowPrivilegeEscalation: false
      capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}
      procMount: Default
      appArmorProfile: {type: Localhost, localhostProfile: k8s-app}
    stdin: true
    tty: true
    workingDir: /work
    resources: {limits: {memory: 1Gi, ephemeral-storage: 1Gi}}
  - name: root
    image: root-image
    securityContext: {privileged: true, runAsNonRoot: false, seLinuxOptions: {level: "s0:c1,c2"}}
    volumeMounts: [{name: host, mountPath: /host, mountPropagation: Bidirectional}]
  volumes:
  - {name: host, hostPath: {path: /var/lib/app, type: DirectoryOrCreate}}
`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"hostnet","namespace":"kube-system","uid":"u3"},
"spec":{"nodeName":"node-1","hostNetwork":true,"hostPID":true,"hostIPC":true,"dnsPolicy":"ClusterFirstWithHostNet","priority":2000001000,
"resources":{"limits":{"cpu":"2","memory":"256Mi"}},
"initContainers":[{"name":"init","image":"busybox","restartPolicy":"Always","resources":{"requests":{"cpu":"10m"}}}],
"containers":[{"name":"agent","image":"agent-nouser","ports":[{"containerPort":9100,"hostPort":9100}],
"volumeMounts":[{"name":"hosts","mountPath":"/etc/hosts"}]}],"volumes":[{"name":"hosts","hostPath":{"path":"/etc/hosts","type":"File"}}]}}`,
}

// FuzzGenerateContainerConfig makes the sandbox and container configs SyncPod sends to the
// runtime for a pod decoded from the input, defaulted and validated as the API server does
// (the node agent only ever gets such pods). Nothing may panic. Paths that the pod would
// have the agent create on the host (its name, uid, hostPath volumes) are kept inside a
// temporary directory, and memory-backed emptyDirs are sized but not mounted.
func FuzzGenerateContainerConfig(f *testing.F) {
	for _, s := range fuzzSeedRuntimePods {
		f.Add([]byte(s), []byte("10.0.0.7"))
		f.Add([]byte(s), []byte("fd00::7,10.0.0.7"))
	}
	dir := f.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.com\noptions ndots:2\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	m, err := NewManager(Config{
		PodLogsDir:            filepath.Join(dir, "logs"),
		RootDir:               filepath.Join(dir, "root"),
		ResolvConf:            resolv,
		NodeName:              "node-1",
		NodeIPs:               []net.IP{net.ParseIP("192.0.2.10")},
		ClusterDNS:            []net.IP{net.ParseIP("10.96.0.10")},
		ClusterDomain:         "cluster.local",
		MachineMemoryCapacity: 8 << 30,
		NodeAllocatable:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("6Gi")},
		SeccompDefault:        true,
		NoPodCgroups:          true,
		Objects:               fuzzObjects{},
		ServiceEnv: func(context.Context, *v1.Pod) (map[string]string, error) {
			return map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}, nil
		},
		Volumes: fuzzVolumes{dir: filepath.Join(dir, "volumes")},
	}, nil, fuzzImages{}, record.NewFakeRecorder(100))
	if err != nil {
		f.Fatal(err)
	}
	// The recorder's channel is drained so that events never block.
	go func() {
		for range m.recorder.(*record.FakeRecorder).Events {
		}
	}()
	dec := scheme.Codecs.UniversalDeserializer()
	podGVK := v1.SchemeGroupVersion.WithKind("Pod")
	f.Fuzz(func(t *testing.T, data, ips []byte) {
		obj, _, err := dec.Decode(data, &podGVK, &v1.Pod{})
		if err != nil {
			return
		}
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		podregistry.SetDefaults(pod)
		if errs := podregistry.ValidatePod(pod); len(errs) > 0 {
			return
		}
		// Where the agent writes follows the pod's uid, namespace and name, and hostPath
		// volumes are the host's: keep them all in the temporary directory.
		pod.UID = types.UID(fmt.Sprintf("fuzz-%x", len(data)))
		for i := range pod.Spec.Volumes {
			v := &pod.Spec.Volumes[i]
			if v.HostPath != nil {
				v.HostPath.Path = filepath.Join(dir, "host", fmt.Sprint(i), filepath.Base(v.HostPath.Path))
			}
			if v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumMemory {
				_ = m.emptyDirMemorySize(pod, v.EmptyDir)
				v.EmptyDir.Medium = v1.StorageMediumDefault
			}
		}
		defer os.RemoveAll(filepath.Join(dir, "host"))
		defer os.RemoveAll(m.podLogsDir(pod.Namespace, pod.Name, string(pod.UID)))
		defer func() { _ = m.RemovePodDir(string(pod.UID)) }()

		var podIPs []string
		for _, ip := range strings.Split(string(ips), ",") {
			if net.ParseIP(ip) != nil {
				podIPs = append(podIPs, ip)
			}
		}
		ctx := context.Background()
		sandbox, err := m.generatePodSandboxConfig(ctx, pod, uint32(len(ips)))
		if err == nil && sandbox.Linux == nil {
			t.Errorf("a sandbox config without its Linux part: %v", sandbox)
		}
		_ = m.podCgroupResources(pod)
		target := &container.ContainerID{Type: "containerd", ID: "target"}
		for i := range pod.Spec.InitContainers {
			_, _ = m.generateContainerConfig(ctx, &pod.Spec.InitContainers[i], pod, i, podIPs, pod.Spec.InitContainers[i].Image, nil)
		}
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			config, err := m.generateContainerConfig(ctx, c, pod, i, podIPs, c.Image, nil)
			if err == nil && (config.Metadata.Name != c.Name || config.Linux == nil) {
				t.Errorf("container %q: config %v", c.Name, config)
			}
			ec := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(*c), TargetContainerName: c.Name}
			ec.Name = "debug-" + c.Name
			ec.Resources = v1.ResourceRequirements{}
			spec := ephemeralStartSpec(&ec)
			_, _ = m.generateContainerConfig(ctx, spec.container, pod, 0, podIPs, c.Image, target)
		}
	})
}
