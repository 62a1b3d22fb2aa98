package kuberuntime

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testManager is a Manager with no runtime, for the config it generates.
func testManager(t *testing.T, mutate func(*Config)) (*Manager, *record.FakeRecorder) {
	t.Helper()
	dir := t.TempDir()
	resolv := filepath.Join(dir, "resolv.conf")
	os.WriteFile(resolv, []byte("# node\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch example.com corp.example.com.\noptions ndots:2 timeout:1\n"), 0o644)
	cfg := Config{
		PodLogsDir:            filepath.Join(dir, "logs"),
		RootDir:               filepath.Join(dir, "root"),
		ResolvConf:            resolv,
		NodeName:              "node-1",
		NodeIPs:               []net.IP{net.ParseIP("192.0.2.10")},
		MachineMemoryCapacity: 10 << 30,
		NodeAllocatable:       v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")},
	}
	if mutate != nil {
		mutate(&cfg)
	}
	rec := record.NewFakeRecorder(100)
	m, err := NewManager(cfg, nil, nil, rec)
	if err != nil {
		t.Fatal(err)
	}
	return m, rec
}

func TestPodDNSConfig(t *testing.T) {
	ctx := context.Background()
	node := []string{"192.0.2.53", "192.0.2.54"}
	nodeSearch := []string{"example.com", "corp.example.com"}
	clusterSearch := []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example.com"}
	withCluster := func(c *Config) {
		c.ClusterDNS = []net.IP{net.ParseIP("10.96.0.10")}
		c.ClusterDomain = "cluster.local"
	}
	five := "5"
	tests := []struct {
		name      string
		cfg       func(*Config)
		policy    v1.DNSPolicy
		host      bool
		dnsConfig *v1.PodDNSConfig
		want      *runtimeapi.DNSConfig
		wantEvent string
	}{
		{name: "Default", policy: v1.DNSDefault, want: &runtimeapi.DNSConfig{Servers: node, Searches: nodeSearch, Options: []string{"ndots:2", "timeout:1"}}},
		{name: "ClusterFirst with cluster DNS", cfg: withCluster, policy: v1.DNSClusterFirst,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst without cluster DNS falls back to Default", policy: v1.DNSClusterFirst,
			want:      &runtimeapi.DNSConfig{Servers: node, Searches: nodeSearch, Options: []string{"ndots:2", "timeout:1"}},
			wantEvent: `Warning MissingClusterDNS pod: "web_ns(uid)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`},
		{name: "ClusterFirst on the host network is Default", cfg: withCluster, policy: v1.DNSClusterFirst, host: true,
			want: &runtimeapi.DNSConfig{Servers: node, Searches: nodeSearch, Options: []string{"ndots:2", "timeout:1"}}},
		{name: "ClusterFirstWithHostNet", cfg: withCluster, policy: v1.DNSClusterFirstWithHostNet, host: true,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
		{name: "None with the pod's dnsConfig", policy: v1.DNSNone,
			dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.b"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &five}, {Name: "edns0"}}},
			want:      &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"a.b"}, Options: []string{"edns0", "ndots:5"}}},
		{name: "dnsConfig merged over ClusterFirst", cfg: withCluster, policy: v1.DNSClusterFirst,
			dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: &five}}},
			want:      &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "1.1.1.1"}, Searches: clusterSearch, Options: []string{"ndots:5"}}},
		{name: "no node resolver", cfg: func(c *Config) { c.ResolvConf = "-" }, policy: v1.DNSDefault,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		{name: "too many nameservers", policy: v1.DNSNone,
			dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4"}},
			want:      &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1", "1.1.1.2", "1.1.1.3"}},
			wantEvent: "Warning DNSConfigForming Nameserver limits were exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, rec := testManager(t, tt.cfg)
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid"},
				Spec: v1.PodSpec{DNSPolicy: tt.policy, HostNetwork: tt.host, DNSConfig: tt.dnsConfig}}
			got, err := m.podDNSConfig(ctx, pod)
			if err != nil {
				t.Fatal(err)
			}
			norm := func(c *runtimeapi.DNSConfig) [3][]string {
				return [3][]string{append([]string{}, c.Servers...), append([]string{}, c.Searches...), append([]string{}, c.Options...)}
			}
			if !reflect.DeepEqual(norm(got), norm(tt.want)) {
				t.Errorf("podDNSConfig() = %v, want %v", got, tt.want)
			}
			var events []string
			for len(rec.Events) > 0 {
				events = append(events, <-rec.Events)
			}
			if tt.wantEvent != "" && !hasPrefix(events, tt.wantEvent) {
				t.Errorf("events %q, want %q", events, tt.wantEvent)
			}
			if tt.wantEvent == "" && len(events) > 0 {
				t.Errorf("unexpected events %q", events)
			}
		})
	}
}

func hasPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func TestGeneratePodSandboxConfig(t *testing.T) {
	m, _ := testManager(t, func(c *Config) { c.ClusterDomain = "cluster.local"; c.CgroupRoot = "/berth" })
	share, fqdn := true, true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "u-1", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"note": "x"}},
		Spec: v1.PodSpec{
			Hostname: "web-0", Subdomain: "web", SetHostnameAsFQDN: &fqdn,
			ShareProcessNamespace: &share,
			SecurityContext: &v1.PodSecurityContext{
				Sysctls:    []v1.Sysctl{{Name: "net/ipv4/ip_unprivileged_port_start", Value: "0"}, {Name: "kernel.shm_rmid_forced", Value: "1"}},
				RunAsUser:  ptr(int64(1000)),
				FSGroup:    ptr(int64(2000)),
				RunAsGroup: ptr(int64(3000)),
			},
			Containers: []v1.Container{{
				Name: "app",
				Ports: []v1.ContainerPort{
					{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
					{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP}, // twice: once
					{Name: "dns", ContainerPort: 53, Protocol: v1.ProtocolUDP},
				},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
			}},
		},
	}
	cfg, err := m.generatePodSandboxConfig(context.Background(), pod, 2)
	if err != nil {
		t.Fatal(err)
	}
	if md := cfg.Metadata; md.Name != "web-0" || md.Namespace != "shop" || md.Uid != "u-1" || md.Attempt != 2 {
		t.Errorf("metadata = %v", md)
	}
	if cfg.Hostname != "web-0.web.shop.svc.cluster.local" {
		t.Errorf("hostname = %q", cfg.Hostname)
	}
	if want := filepath.Join(m.cfg.PodLogsDir, "shop_web-0_u-1"); cfg.LogDirectory != want {
		t.Errorf("log directory = %q, want %q", cfg.LogDirectory, want)
	}
	if cfg.Labels["app"] != "web" || cfg.Labels[podUIDLabel] != "u-1" || cfg.Annotations["note"] != "x" {
		t.Errorf("labels %v annotations %v", cfg.Labels, cfg.Annotations)
	}
	wantPorts := []*runtimeapi.PortMapping{
		{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
		{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53},
	}
	if len(cfg.PortMappings) != len(wantPorts) {
		t.Fatalf("port mappings = %v", cfg.PortMappings)
	}
	for i := range wantPorts {
		if cfg.PortMappings[i].String() != wantPorts[i].String() {
			t.Errorf("port mapping %d = %v, want %v", i, cfg.PortMappings[i], wantPorts[i])
		}
	}
	lc := cfg.Linux
	if lc.CgroupParent != "/berth/kubepods/burstable/podu-1" {
		t.Errorf("cgroup parent = %q", lc.CgroupParent)
	}
	if !reflect.DeepEqual(lc.Sysctls, map[string]string{"net.ipv4.ip_unprivileged_port_start": "0", "kernel.shm_rmid_forced": "1"}) {
		t.Errorf("sysctls = %v", lc.Sysctls)
	}
	sc := lc.SecurityContext
	if sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_POD || sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_POD || sc.NamespaceOptions.Ipc != runtimeapi.NamespaceMode_POD {
		t.Errorf("namespaces = %v", sc.NamespaceOptions)
	}
	if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 3000 || !reflect.DeepEqual(sc.SupplementalGroups, []int64{2000}) || sc.Privileged {
		t.Errorf("security context = %v", sc)
	}

	// Host namespaces, no hostname.
	pod.Spec.HostNetwork, pod.Spec.HostPID, pod.Spec.HostIPC = true, true, true
	cfg, _ = m.generatePodSandboxConfig(context.Background(), pod, 0)
	ns := cfg.Linux.SecurityContext.NamespaceOptions
	if cfg.Hostname != "" || ns.Network != runtimeapi.NamespaceMode_NODE || ns.Pid != runtimeapi.NamespaceMode_NODE || ns.Ipc != runtimeapi.NamespaceMode_NODE {
		t.Errorf("host namespaces: hostname %q, %v", cfg.Hostname, ns)
	}
}

func TestPodHostname(t *testing.T) {
	m, _ := testManager(t, func(c *Config) { c.ClusterDomain = "cluster.local" })
	long := strings.Repeat("a", 62) + "-b"
	tests := []struct {
		name, hostname, subdomain string
		override                  *string
		wantHost, wantDomain      string
		wantErr                   bool
	}{
		{name: "web", wantHost: "web"},
		{name: "web", hostname: "front", wantHost: "front"},
		{name: "web", subdomain: "svc", wantHost: "web", wantDomain: "svc.ns.svc.cluster.local"},
		{name: long, wantHost: strings.Repeat("a", 62)}, // cut at 63, then the trailing "-"
		{name: "web", hostname: "Not_Valid", wantErr: true},
		{name: "web", subdomain: "a.b", wantErr: true},
		// spec.hostnameOverride is the whole name: no domain, whatever hostname and subdomain say.
		{name: "web", override: ptr("override.example.host"), wantHost: "override.example.host"},
		{name: "web", hostname: "custom-host", override: ptr("override-host"), wantHost: "override-host"},
		{name: "web", subdomain: "t", override: ptr("override-host"), wantHost: "override-host"},
		{name: "web", override: ptr(strings.Repeat("a", 62) + ".b"), wantHost: strings.Repeat("a", 62)},
		{name: "web", override: ptr("Not-RFC1123"), wantErr: true},
		{name: "web", hostname: "Not_Valid", override: ptr("ok"), wantHost: "ok"},
	}
	for _, tt := range tests {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tt.name, Namespace: "ns"},
			Spec: v1.PodSpec{Hostname: tt.hostname, Subdomain: tt.subdomain, HostnameOverride: tt.override}}
		host, domain, err := m.podHostnameAndDomain(context.Background(), pod)
		if (err != nil) != tt.wantErr || host != tt.wantHost || domain != tt.wantDomain {
			t.Errorf("%+v: got %q, %q, %v", tt, host, domain, err)
		}
	}
}

// TestHostnameOverride: the sandbox's hostname and the pod's /etc/hosts both carry
// spec.hostnameOverride, and setHostnameAsFQDN has no domain to add to it (the upstream
// "Override hostname of Pod" tests read `hostname` and `hostname -f`).
func TestHostnameOverride(t *testing.T) {
	m, _ := testManager(t, func(c *Config) { c.ClusterDomain = "cluster.local" })
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "hostfqdn-x", Namespace: "ns", UID: "u-1"},
		Spec: v1.PodSpec{Hostname: "custom-host", Subdomain: "t", SetHostnameAsFQDN: ptr(true),
			HostnameOverride: ptr("override.example.host")},
	}
	cfg, err := m.generatePodSandboxConfig(context.Background(), pod, 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Hostname != "override.example.host" {
		t.Errorf("sandbox hostname %q, want override.example.host", cfg.Hostname)
	}
	path, err := m.ensureHostsFile(context.Background(), pod, []string{"10.0.0.5"})
	if err != nil {
		t.Fatal(err)
	}
	hosts, _ := os.ReadFile(path)
	if !strings.HasSuffix(string(hosts), "fe00::2\tip6-allrouters\n10.0.0.5\toverride.example.host\n") {
		t.Errorf("hosts file:\n%s", hosts)
	}
	pod.Spec.HostnameOverride = ptr("Not-RFC1123")
	if _, err := m.generatePodSandboxConfig(context.Background(), pod, 0); err == nil ||
		!strings.HasPrefix(err.Error(), `pod HostnameOverride "Not-RFC1123" is not a valid DNS subdomain: `) {
		t.Errorf("an invalid override: %v", err)
	}
}

func TestPodCgroupParent(t *testing.T) {
	res := func(req, lim string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{}
		if req != "" {
			r.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(req), v1.ResourceMemory: resource.MustParse("1Gi")}
		}
		if lim != "" {
			r.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(lim), v1.ResourceMemory: resource.MustParse("1Gi")}
		}
		return r
	}
	for want, r := range map[string]v1.ResourceRequirements{
		"/kubepods/poduid":            res("1", "1"),
		"/kubepods/burstable/poduid":  res("500m", "1"),
		"/kubepods/besteffort/poduid": {},
	} {
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid"}, Spec: v1.PodSpec{Containers: []v1.Container{{Resources: r}}}}
		if got := podCgroupParent("/", pod); got != want {
			t.Errorf("podCgroupParent(%v) = %q, want %q", r, got, want)
		}
	}
}

func TestContainerResources(t *testing.T) {
	m, _ := testManager(t, nil)
	guaranteed := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("256Mi")},
	}
	burstable := v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("1Gi")},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
	}
	limitsOnly := v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
	tests := []struct {
		name string
		r    v1.ResourceRequirements
		want *runtimeapi.LinuxContainerResources
	}{
		{"guaranteed", guaranteed, &runtimeapi.LinuxContainerResources{CpuShares: 512, CpuPeriod: 100000, CpuQuota: 50000, MemoryLimitInBytes: 256 << 20, OomScoreAdj: -997}},
		// 1 GiB of 10 GiB: 1000 - 1000*1/10 = 900.
		{"burstable", burstable, &runtimeapi.LinuxContainerResources{CpuShares: 256, CpuPeriod: 100000, CpuQuota: 200000, OomScoreAdj: 900}},
		{"cpu request defaults to the limit", limitsOnly, &runtimeapi.LinuxContainerResources{CpuShares: 1024, CpuPeriod: 100000, CpuQuota: 100000, OomScoreAdj: 999}},
		{"best effort", v1.ResourceRequirements{}, &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000}},
	}
	for _, tt := range tests {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: tt.r}}}}
		got := m.containerResources(pod, &pod.Spec.Containers[0])
		got.MemorySwapLimitInBytes = 0 // depends on the machine's swap accounting
		if got.String() != tt.want.String() {
			t.Errorf("%s: containerResources() = %v, want %v", tt.name, got, tt.want)
		}
	}
	if milliCPUToQuota(1, 100000) != 1000 || milliCPUToShares(1) != 2 || milliCPUToShares(1_000_000) != 262144 {
		t.Errorf("cpu conversions at their bounds")
	}
}

func TestPodCgroupResources(t *testing.T) {
	m, _ := testManager(t, nil)
	rl := func(cpu, mem string) v1.ResourceList {
		l := v1.ResourceList{}
		if cpu != "" {
			l[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			l[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return l
	}
	ctr := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	tests := []struct {
		name       string
		containers []v1.Container
		want       cgroupResources
	}{
		{"guaranteed: shares, quota and memory", []v1.Container{ctr(rl("500m", "64Mi"), rl("500m", "64Mi")), ctr(rl("250m", "32Mi"), rl("250m", "32Mi"))},
			cgroupResources{cpuShares: 768, cpuQuota: 75000, cpuPeriod: 100000, memoryLimit: 96 << 20}},
		{"burstable, memory limited everywhere, cpu not", []v1.Container{ctr(rl("100m", ""), rl("", "64Mi")), ctr(nil, rl("", "32Mi"))},
			cgroupResources{cpuShares: 102, memoryLimit: 96 << 20}},
		{"burstable, one container unlimited: no pod limit", []v1.Container{ctr(rl("1", "64Mi"), rl("2", "64Mi")), ctr(rl("", "16Mi"), nil)},
			cgroupResources{cpuShares: 1024}},
		{"best effort: the minimum shares", []v1.Container{ctr(nil, nil)}, cgroupResources{cpuShares: 2}},
	}
	for _, tt := range tests {
		pod := &v1.Pod{Spec: v1.PodSpec{Containers: tt.containers}}
		if got := m.podCgroupResources(pod); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestContainerSecurityContext(t *testing.T) {
	m, _ := testManager(t, func(c *Config) { c.SeccompDefault = true })
	priv, ro, escalate := true, true, false
	unmasked := v1.UnmaskedProcMount
	pod := &v1.Pod{Spec: v1.PodSpec{
		SecurityContext: &v1.PodSecurityContext{RunAsUser: ptr(int64(1000)), RunAsGroup: ptr(int64(1000)), SupplementalGroups: []int64{5}},
		Containers: []v1.Container{{Name: "c", SecurityContext: &v1.SecurityContext{
			RunAsUser: ptr(int64(2000)), Privileged: &priv, ReadOnlyRootFilesystem: &ro, AllowPrivilegeEscalation: &escalate,
			Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
			ProcMount:    &unmasked,
		}}},
	}}
	sc := m.containerSecurityContext(pod, &pod.Spec.Containers[0])
	if sc.RunAsUser.GetValue() != 2000 || sc.RunAsGroup.GetValue() != 1000 || !sc.Privileged || !sc.ReadonlyRootfs || !sc.NoNewPrivs {
		t.Errorf("security context = %v", sc)
	}
	if !reflect.DeepEqual(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !reflect.DeepEqual(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
		t.Errorf("capabilities = %v", sc.Capabilities)
	}
	if sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault || !reflect.DeepEqual(sc.SupplementalGroups, []int64{5}) {
		t.Errorf("seccomp %v groups %v", sc.Seccomp, sc.SupplementalGroups)
	}
	if sc.MaskedPaths == nil || len(sc.MaskedPaths) != 0 {
		t.Errorf("unmasked proc: masked paths %v", sc.MaskedPaths)
	}
	m.cfg.SeccompDefault = false
	if sc := m.containerSecurityContext(&v1.Pod{}, &v1.Container{}); sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_Unconfined {
		t.Errorf("seccomp without a default = %v", sc.Seccomp)
	}
	localhost := "profiles/audit.json"
	p := m.seccompProfile(&v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &localhost})
	if p.LocalhostRef != filepath.Join(m.cfg.RootDir, "seccomp", localhost) {
		t.Errorf("localhost profile = %v", p)
	}
}

// fakeObjects serves ConfigMaps and Secrets from maps.
type fakeObjects struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	gets       int
}

func (f *fakeObjects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	f.gets++
	if cm, ok := f.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

func (f *fakeObjects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	f.gets++
	if s, ok := f.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func TestMakeEnvironmentVariables(t *testing.T) {
	objs := &fakeObjects{
		configMaps: map[string]*v1.ConfigMap{"ns/cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}},
		secrets:    map[string]*v1.Secret{"ns/sec": {Data: map[string][]byte{"TOKEN": []byte("t0k")}}},
	}
	m, _ := testManager(t, func(c *Config) {
		c.Objects = objs
		c.ServiceEnv = func(context.Context, *v1.Pod) (map[string]string, error) {
			return map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "MODE": "from-service"}, nil
		}
	})
	optional := true
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-1", Labels: map[string]string{"app": "web", "tier": "front"}},
		Spec:       v1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa"},
	}
	c := &v1.Container{
		Name:    "app",
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}, Prefix: "CFG_"}},
		Env: []v1.EnvVar{
			{Name: "A", Value: "a"},
			{Name: "B", Value: "$(A)-$(CFG_MODE)-$(KUBERNETES_SERVICE_HOST)-$(MISSING)-$$(A)"},
			{Name: "NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "NS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
			{Name: "LABELS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "CPU_LIMIT", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
			{Name: "MEM_LIMIT_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "CPU_REQUEST_M", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}},
			{Name: "LEVEL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
			{Name: "TOKEN", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Key: "X", Optional: &optional}}},
			{Name: "A", Value: "again"},
		},
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")}},
	}
	env, err := m.makeEnvironmentVariables(context.Background(), pod, c, []string{"10.0.0.5", "fd00::5"})
	if err != nil {
		t.Fatal(err)
	}
	want := []envVar{
		{"CFG_LEVEL", "3"}, {"CFG_MODE", "fast"},
		{"A", "again"},
		{"B", "a-fast-10.96.0.1-$(MISSING)-$(A)"},
		{"NAME", "web"}, {"NS", "ns"}, {"UID", "u-1"}, {"APP", "web"},
		{"LABELS", "app=\"web\"\ntier=\"front\""},
		{"NODE", "node-1"}, {"SA", "sa"},
		{"POD_IP", "10.0.0.5"}, {"POD_IPS", "10.0.0.5,fd00::5"}, {"HOST_IP", "192.0.2.10"},
		{"CPU_LIMIT", "4"}, {"MEM_LIMIT_MI", "8192"}, {"CPU_REQUEST_M", "250"},
		{"LEVEL", "3"}, {"TOKEN", "t0k"},
		{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"MODE", "from-service"},
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("env =\n%v\nwant\n%v", env, want)
	}
	if objs.gets != 3 {
		t.Errorf("%d object reads, want 3 (each object once)", objs.gets)
	}

	// A missing ConfigMap, a missing key, and no object getter at all.
	for _, e := range []v1.EnvVar{
		{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Key: "K"}}},
		{Name: "X", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "NOPE"}}},
		{Name: "X", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.unknown"}}},
	} {
		if _, err := m.makeEnvironmentVariables(context.Background(), pod, &v1.Container{Env: []v1.EnvVar{e}}, nil); err == nil {
			t.Errorf("%+v: no error", e.ValueFrom)
		}
	}
	bare, _ := testManager(t, nil)
	_, err = bare.makeEnvironmentVariables(context.Background(), pod, &v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "TOKEN"}}}}}, nil)
	if err == nil || err.Error() != "couldn't get secret ns/sec, no kubeClient defined" {
		t.Errorf("no object getter: %v", err)
	}
}

func TestMounts(t *testing.T) {
	m, _ := testManager(t, nil)
	hostDir := t.TempDir()
	dirType := v1.HostPathDirectoryOrCreate
	fileType := v1.HostPathFile
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-1"},
		Spec: v1.PodSpec{
			HostAliases: []v1.HostAlias{{IP: "192.0.2.1", Hostnames: []string{"db", "db.local"}}},
			Volumes: []v1.Volume{
				{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(hostDir, "made"), Type: &dirType}}},
				{Name: "hostfile", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: filepath.Join(hostDir, "missing"), Type: &fileType}}},
				{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "s"}}},
			},
		},
	}
	c := &v1.Container{
		Name:                   "app",
		TerminationMessagePath: "/dev/termination-log",
		VolumeMounts: []v1.VolumeMount{
			{Name: "scratch", MountPath: "/scratch"},
			{Name: "scratch", MountPath: "/sub", SubPathExpr: "$(POD)/data", ReadOnly: true},
			{Name: "host", MountPath: "/host"},
		},
	}
	mounts, err := m.makeMounts(context.Background(), pod, c, []string{"10.0.0.5"}, map[string]string{"POD": "web"})
	if err != nil {
		t.Fatal(err)
	}
	emptyDir := m.emptyDirPath("u-1", "scratch")
	if info, err := os.Stat(emptyDir); err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir: %v %v", info, err)
	}
	if len(mounts) != 5 {
		t.Fatalf("mounts = %v", mounts)
	}
	if mounts[0].HostPath != emptyDir || mounts[0].ContainerPath != "/scratch" {
		t.Errorf("emptyDir mount = %v", mounts[0])
	}
	if mounts[1].HostPath != filepath.Join(emptyDir, "web/data") || !mounts[1].Readonly {
		t.Errorf("subPath mount = %v", mounts[1])
	}
	if _, err := os.Stat(filepath.Join(hostDir, "made")); err != nil || mounts[2].HostPath != filepath.Join(hostDir, "made") {
		t.Errorf("hostPath DirectoryOrCreate: %v, %v", mounts[2], err)
	}
	if mounts[3].ContainerPath != "/etc/hosts" {
		t.Fatalf("hosts mount = %v", mounts[3])
	}
	hosts, _ := os.ReadFile(mounts[3].HostPath)
	if !strings.Contains(string(hosts), "10.0.0.5\tweb\n") || !strings.Contains(string(hosts), "# Entries added by HostAliases.\n192.0.2.1\tdb\tdb.local\n") ||
		!strings.HasPrefix(string(hosts), "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n") {
		t.Errorf("hosts file:\n%s", hosts)
	}
	if mounts[4].ContainerPath != "/dev/termination-log" || !strings.HasPrefix(mounts[4].HostPath, filepath.Join(m.podDir("u-1"), "containers", "app")+"/") {
		t.Errorf("termination log mount = %v", mounts[4])
	}

	// The container's own /etc/hosts wins; no IP yet: no hosts file either.
	own := &v1.Container{Name: "own", VolumeMounts: []v1.VolumeMount{{Name: "scratch", MountPath: "/etc/hosts"}}}
	if mounts, _ := m.makeMounts(context.Background(), pod, own, []string{"10.0.0.5"}, nil); len(mounts) != 1 {
		t.Errorf("own hosts: %v", mounts)
	}
	if mounts, _ := m.makeMounts(context.Background(), pod, &v1.Container{Name: "x"}, nil, nil); len(mounts) != 0 {
		t.Errorf("no IP: %v", mounts)
	}

	// Errors: unsupported volume, failed hostPath type check, subPath escapes.
	os.Symlink("/etc", filepath.Join(emptyDir, "escape"))
	for _, vm := range []v1.VolumeMount{
		{Name: "secret", MountPath: "/s"},
		{Name: "hostfile", MountPath: "/f"},
		{Name: "nosuch", MountPath: "/n"},
		{Name: "scratch", MountPath: "/x", SubPath: "../../etc"},
		{Name: "scratch", MountPath: "/x", SubPath: "/etc"},
		{Name: "scratch", MountPath: "/x", SubPath: "escape"},
		{Name: "scratch", MountPath: "/x", SubPathExpr: "$(UNSET)"},
	} {
		if _, err := m.makeMounts(context.Background(), pod, &v1.Container{Name: "bad", VolumeMounts: []v1.VolumeMount{vm}}, nil, nil); err == nil {
			t.Errorf("%+v: no error", vm)
		}
	}
}

func TestFindCgroupMounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	os.WriteFile(path, []byte(`31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct
33 30 0:30 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset,clone_children
39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
41 30 0:28 / /mnt/again rw,relatime - cgroup cgroup rw,cpu,cpuacct
50 30 0:50 / /tmp rw - tmpfs tmpfs rw
`), 0o644)
	got, err := findCgroupMounts(path)
	if err != nil {
		t.Fatal(err)
	}
	want := cgroupMounts{
		{dir: "/sys/fs/cgroup/cpu,cpuacct", controllers: []string{"cpu", "cpuacct"}},
		{dir: "/sys/fs/cgroup/cpuset", controllers: []string{"cpuset"}},
		{dir: "/sys/fs/cgroup/systemd", controllers: []string{"name=systemd"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findCgroupMounts() = %+v, want %+v", got, want)
	}
	os.WriteFile(path, []byte("40 30 0:37 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"), 0o644)
	if got, _ := findCgroupMounts(path); len(got) != 1 || !got[0].v2 || got[0].dir != "/sys/fs/cgroup" {
		t.Errorf("v2 only: %+v", got)
	}
}

func TestEnsureCgroup(t *testing.T) {
	mounts, err := findCgroupMounts("/proc/self/mountinfo")
	if err != nil || len(mounts) == 0 {
		t.Fatalf("cgroup mounts: %v %v", mounts, err)
	}
	root := fmt.Sprintf("/berth-h2-test-%d", os.Getpid())
	leaf := root + "/kubepods/burstable/pod1"
	t.Cleanup(func() {
		for _, p := range []string{leaf, root + "/kubepods/burstable", root + "/kubepods", root} {
			mounts.remove(p)
		}
	})
	if err := mounts.ensure(leaf); err != nil {
		t.Fatal(err)
	}
	if err := mounts.ensure(leaf); err != nil {
		t.Fatalf("ensure is not idempotent: %v", err)
	}
	for _, m := range mounts {
		if _, err := os.Stat(filepath.Join(m.dir, leaf)); err != nil {
			t.Errorf("%s hierarchy: %v", m.name(), err)
		}
	}
	if cpuset, ok := mounts.has("cpuset"); ok {
		cpus, _ := os.ReadFile(filepath.Join(cpuset.dir, leaf, "cpuset.cpus"))
		if strings.TrimSpace(string(cpus)) == "" {
			t.Errorf("the new cpuset cgroup has no cpus")
		}
	}

	if err := mounts.set(leaf, cgroupResources{cpuShares: 512, cpuQuota: 50000, cpuPeriod: 100000, memoryLimit: 64 << 20}); err != nil {
		t.Fatal(err)
	}
	if cpu, ok := mounts.has("cpu"); ok {
		for file, want := range map[string]string{"cpu.shares": "512", "cpu.cfs_quota_us": "50000"} {
			if got, _ := os.ReadFile(filepath.Join(cpu.dir, leaf, file)); strings.TrimSpace(string(got)) != want {
				t.Errorf("%s = %q, want %s", file, got, want)
			}
		}
	}
	if mem, ok := mounts.has("memory"); ok {
		if got, _ := os.ReadFile(filepath.Join(mem.dir, leaf, "memory.limit_in_bytes")); strings.TrimSpace(string(got)) != fmt.Sprint(64<<20) {
			t.Errorf("memory.limit_in_bytes = %q", got)
		}
	}

	bad := cgroupMounts{{dir: "/proc/no-such-dir", controllers: []string{"memory"}}}
	if err := bad.ensure("/kubepods"); err == nil || !strings.Contains(err.Error(), "cannot create cgroup /kubepods in the memory hierarchy") {
		t.Errorf("unwritable hierarchy: %v", err)
	}
}

func TestMemoryEmptyDirAndRemovePodDir(t *testing.T) {
	m, _ := testManager(t, nil)
	limit := resource.MustParse("16Mi")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u-mem"},
		Spec:       v1.PodSpec{Volumes: []v1.Volume{{Name: "shm", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: &limit}}}}},
	}
	t.Cleanup(func() { syscall.Unmount(m.emptyDirPath("u-mem", "shm"), 0) })
	for i := 0; i < 2; i++ { // the second time finds it mounted
		dir, _, err := m.volumeHostPath(context.Background(), pod, "shm")
		if err != nil {
			t.Fatal(err)
		}
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil || st.Type != 0x01021994 || st.Blocks*uint64(st.Bsize) != 16<<20 {
			t.Fatalf("%s is not a 16 MiB tmpfs: %+v %v", dir, st, err)
		}
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	if n := strings.Count(string(mounts), m.emptyDirPath("u-mem", "shm")); n != 1 {
		t.Errorf("the tmpfs is mounted %d times", n)
	}
	if err := m.RemovePodDir("u-mem"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.PodDir("u-mem")); !os.IsNotExist(err) {
		t.Errorf("pod dir still there: %v", err)
	}
}

// A memory emptyDir is sized as the kubelet sizes it; its sizeLimit is optional (the
// /dev/shm pod of charts has none, and once crashed the whole process).
func TestEmptyDirMemorySize(t *testing.T) {
	m, _ := testManager(t, nil)
	m.allocatable = v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	limited := func(mem string) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse(mem)}}}
	}
	for _, tc := range []struct {
		name       string
		containers []v1.Container
		sizeLimit  *resource.Quantity
		want       int64
	}{
		{"no sizeLimit, no limits: allocatable", []v1.Container{{Name: "c"}}, nil, 1 << 30},
		{"no sizeLimit, every container limited: the pod's limit", []v1.Container{limited("100Mi"), limited("28Mi")}, nil, 128 << 20},
		{"one container unlimited: allocatable", []v1.Container{limited("100Mi"), {Name: "d"}}, nil, 1 << 30},
		{"a smaller sizeLimit wins", []v1.Container{limited("100Mi")}, q("16Mi"), 16 << 20},
		{"a larger sizeLimit is lowered to the pod's limit", []v1.Container{limited("100Mi")}, q("2Gi"), 100 << 20},
		{"a zero sizeLimit is no limit", nil, q("0"), 1 << 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Containers: tc.containers}}
			if got := m.emptyDirMemorySize(pod, &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory, SizeLimit: tc.sizeLimit}); got != tc.want {
				t.Errorf("size = %d, want %d", got, tc.want)
			}
		})
	}
}
