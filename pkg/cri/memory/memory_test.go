package memory

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/cri/pause"
)

var (
	ctx = context.Background()
	t0  = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

const testImage = "docker.io/library/busybox:1.36"

// newRuntime is a runtime on a fake clock at t0 with testImage present.
func newRuntime(t testing.TB, opts Options) (*Runtime, *testingclock.FakeClock) {
	t.Helper()
	clk := testingclock.NewFakeClock(t0)
	opts.Clock = clk
	opts.Images = append(opts.Images, testImage)
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, clk
}

// podSandbox builds the config the node agent sends for a pod (its labels and annotations).
func podSandbox(name string, annotations map[string]string) *runtimeapi.PodSandboxConfig {
	uid := "uid-" + name
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		LogDirectory: "/var/log/pods/default_" + name + "_" + uid,
		Labels: map[string]string{
			"io.kubernetes.pod.name":      name,
			"io.kubernetes.pod.namespace": "default",
			"io.kubernetes.pod.uid":       uid,
			"app":                         name,
		},
		Annotations: annotations,
	}
}

func hostNetwork(c *runtimeapi.PodSandboxConfig) *runtimeapi.PodSandboxConfig {
	c.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}}
	return c
}

// containerConfig builds the config the node agent sends for a container of pod sb.
func containerConfig(sb *runtimeapi.PodSandboxConfig, name string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: testImage, UserSpecifiedImage: "busybox:1.36"},
		Labels: map[string]string{
			"io.kubernetes.pod.name":       sb.Metadata.Name,
			"io.kubernetes.pod.namespace":  sb.Metadata.Namespace,
			"io.kubernetes.pod.uid":        sb.Metadata.Uid,
			"io.kubernetes.container.name": name,
		},
		Annotations: map[string]string{"io.kubernetes.container.restartCount": "0"},
		LogPath:     name + "/0.log",
		Mounts:      []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/pods/x/" + name}},
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources: &runtimeapi.LinuxContainerResources{CpuShares: 102, MemoryLimitInBytes: 64 << 20},
		},
	}
}

func runPod(t testing.TB, r *Runtime, sb *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	id, err := r.RunPodSandbox(ctx, sb, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	return id
}

func create(t testing.TB, r *Runtime, sbID string, sb *runtimeapi.PodSandboxConfig, name string) string {
	t.Helper()
	id, err := r.CreateContainer(ctx, sbID, containerConfig(sb, name), sb)
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", name, err)
	}
	return id
}

func createAndStart(t testing.TB, r *Runtime, sbID string, sb *runtimeapi.PodSandboxConfig, name string) string {
	t.Helper()
	id := create(t, r, sbID, sb, name)
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer %s: %v", name, err)
	}
	return id
}

func sandboxStatus(t testing.TB, r *Runtime, id string) *runtimeapi.PodSandboxStatus {
	t.Helper()
	resp, err := r.PodSandboxStatus(ctx, id, false)
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	return resp.Status
}

func containerStatus(t testing.TB, r *Runtime, id string) *runtimeapi.ContainerStatus {
	t.Helper()
	resp, err := r.ContainerStatus(ctx, id, false)
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	return resp.Status
}

func wantCode(t testing.TB, err error, code codes.Code) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Fatalf("error %v has code %v, want %v", err, got, code)
	}
}

func TestSandboxLifecycle(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	sb := podSandbox("web", map[string]string{"note": "kept"})
	id := runPod(t, r, sb)
	if len(id) != 64 {
		t.Errorf("sandbox id %q is not 64 hex digits", id)
	}

	st := sandboxStatus(t, r, id)
	if st.State != runtimeapi.PodSandboxState_SANDBOX_READY || st.CreatedAt != t0.UnixNano() {
		t.Errorf("new sandbox: state %v created %d, want READY at %d", st.State, st.CreatedAt, t0.UnixNano())
	}
	if st.Network.Ip != "10.88.0.2" || st.Metadata.Name != "web" || st.Labels["app"] != "web" || st.Annotations["note"] != "kept" {
		t.Errorf("new sandbox status: %v", st)
	}
	if st.GetLinux().GetNamespaces().GetOptions().GetNetwork() != runtimeapi.NamespaceMode_POD {
		t.Errorf("network mode %v, want POD", st.GetLinux().GetNamespaces().GetOptions().GetNetwork())
	}

	running := createAndStart(t, r, id, sb, "app")
	created := create(t, r, id, sb, "side")
	clk.Step(time.Minute)
	if err := r.StopPodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	st = sandboxStatus(t, r, id)
	if st.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || st.Network.Ip != "" {
		t.Errorf("stopped sandbox: state %v ip %q, want NOTREADY without IP", st.State, st.Network.Ip)
	}
	if c := containerStatus(t, r, running); c.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.ExitCode != 137 || c.FinishedAt != t0.Add(time.Minute).UnixNano() {
		t.Errorf("running container after StopPodSandbox: %v exit %d at %d, want killed (137) now", c.State, c.ExitCode, c.FinishedAt)
	}
	if c := containerStatus(t, r, created); c.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container after StopPodSandbox: %v, want left CREATED as containerd does", c.State)
	}
	if err := r.StopPodSandbox(ctx, id); err != nil {
		t.Errorf("second StopPodSandbox: %v", err)
	}

	if err := r.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	_, err := r.PodSandboxStatus(ctx, id, false)
	wantCode(t, err, codes.NotFound)
	_, err = r.ContainerStatus(ctx, running, false)
	wantCode(t, err, codes.NotFound)
	if n := r.Counts(); n.Sandboxes != 0 || n.Containers != 0 {
		t.Errorf("after RemovePodSandbox: %+v", n)
	}
	if err := r.RemovePodSandbox(ctx, id); err != nil {
		t.Errorf("RemovePodSandbox of a removed sandbox: %v, want nil", err)
	}
	wantCode(t, r.StopPodSandbox(ctx, "unknown"), codes.NotFound)
}

func TestSandboxRemoveKillsRunningContainers(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("web", nil)
	id := runPod(t, r, sb)
	createAndStart(t, r, id, sb, "app")
	if err := r.RemovePodSandbox(ctx, id); err != nil { // without StopPodSandbox first
		t.Fatal(err)
	}
	if n := r.Counts(); n != (Counts{Images: 2}) {
		t.Errorf("counts after remove: %+v", n)
	}
}

func TestSandboxIPs(t *testing.T) {
	tests := []struct {
		name     string
		cidr     string // UpdateRuntimeConfig's; "" keeps the default
		pods     []*runtimeapi.PodSandboxConfig
		stop     int // stop the sandbox at this index before the last pod, -1 none
		wantIPs  []string
		wantAddl []string // additional IP of the last pod
		wantErr  bool     // the last pod fails
	}{
		{
			name:    "default CIDR, round robin",
			pods:    []*runtimeapi.PodSandboxConfig{podSandbox("a", nil), podSandbox("b", nil)},
			stop:    -1,
			wantIPs: []string{"10.88.0.2", "10.88.0.3"},
		},
		{
			name:    "node's CIDR",
			cidr:    "10.244.3.0/24",
			pods:    []*runtimeapi.PodSandboxConfig{podSandbox("a", nil)},
			stop:    -1,
			wantIPs: []string{"10.244.3.2"},
		},
		{
			name:    "host network gets none",
			cidr:    "10.244.3.0/24",
			pods:    []*runtimeapi.PodSandboxConfig{hostNetwork(podSandbox("a", nil)), podSandbox("b", nil)},
			stop:    -1,
			wantIPs: []string{"", "10.244.3.2"},
		},
		{
			name:    "exhausted",
			cidr:    "10.0.0.0/30", // .2 only: .0 network, .1 gateway, .3 broadcast
			pods:    []*runtimeapi.PodSandboxConfig{podSandbox("a", nil), podSandbox("b", nil)},
			stop:    -1,
			wantIPs: []string{"10.0.0.2"},
			wantErr: true,
		},
		{
			name:    "released on stop",
			cidr:    "10.0.0.0/30",
			pods:    []*runtimeapi.PodSandboxConfig{podSandbox("a", nil), podSandbox("b", nil)},
			stop:    0,
			wantIPs: []string{"", "10.0.0.2"},
		},
		{
			name:     "dual stack",
			cidr:     "10.1.0.0/24,fd00:1::/64",
			pods:     []*runtimeapi.PodSandboxConfig{podSandbox("a", nil)},
			stop:     -1,
			wantIPs:  []string{"10.1.0.2"},
			wantAddl: []string{"fd00:1::2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _ := newRuntime(t, Options{})
			if tt.cidr != "" {
				if err := r.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: tt.cidr}}); err != nil {
					t.Fatal(err)
				}
			}
			var ids []string
			for i, sb := range tt.pods {
				if i == len(tt.pods)-1 && tt.stop >= 0 {
					if err := r.StopPodSandbox(ctx, ids[tt.stop]); err != nil {
						t.Fatal(err)
					}
				}
				id, err := r.RunPodSandbox(ctx, sb, "")
				if i == len(tt.pods)-1 && tt.wantErr {
					if err == nil {
						t.Fatalf("pod %d got a sandbox, want no IP left", i)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			for i, id := range ids {
				if got := sandboxStatus(t, r, id).Network.Ip; got != tt.wantIPs[i] {
					t.Errorf("pod %d: IP %q, want %q", i, got, tt.wantIPs[i])
				}
			}
			var addl []string
			for _, ip := range sandboxStatus(t, r, ids[len(ids)-1]).Network.AdditionalIps {
				addl = append(addl, ip.Ip)
			}
			if fmt.Sprint(addl) != fmt.Sprint(tt.wantAddl) {
				t.Errorf("additional IPs %v, want %v", addl, tt.wantAddl)
			}
		})
	}
}

func TestUpdateRuntimeConfig(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	for cidr, want := range map[string]codes.Code{
		"":              codes.OK, // nothing to change
		"10.9.0.0/16":   codes.OK,
		"nonsense":      codes.InvalidArgument,
		"10.0.0.0/31":   codes.InvalidArgument, // no usable address
		"fd00::/64,x/8": codes.InvalidArgument,
	} {
		err := r.UpdateRuntimeConfig(ctx, &runtimeapi.RuntimeConfig{NetworkConfig: &runtimeapi.NetworkConfig{PodCidr: cidr}})
		if status.Code(err) != want {
			t.Errorf("UpdateRuntimeConfig(%q): %v, want code %v", cidr, err, want)
		}
	}
	if _, err := New(Options{PodCIDR: "bad"}); err == nil {
		t.Error("New with a bad pod CIDR succeeded")
	}
}

func TestSandboxNameIsReserved(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("web", nil)
	id := runPod(t, r, sb)
	_, err := r.RunPodSandbox(ctx, sb, "")
	wantCode(t, err, codes.AlreadyExists)
	sb.Metadata.Attempt = 1 // the node agent's next sandbox for the pod
	runPod(t, r, sb)
	sb.Metadata.Attempt = 0
	if err := r.RemovePodSandbox(ctx, id); err != nil {
		t.Fatal(err)
	}
	runPod(t, r, sb)
}

func TestRunPodSandboxErrors(t *testing.T) {
	r, _ := newRuntime(t, Options{RuntimeHandlers: []string{"kata"}})
	_, err := r.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, "")
	wantCode(t, err, codes.InvalidArgument)
	_, err = r.RunPodSandbox(ctx, podSandbox("a", nil), "gvisor")
	wantCode(t, err, codes.InvalidArgument)
	for _, h := range []string{"", "runc", "kata"} {
		sb := podSandbox("pod-"+h, nil)
		id, err := r.RunPodSandbox(ctx, sb, h)
		if err != nil {
			t.Fatalf("handler %q: %v", h, err)
		}
		if got := sandboxStatus(t, r, id).RuntimeHandler; got != h {
			t.Errorf("runtime handler %q, want %q", got, h)
		}
	}
}

func TestListPodSandboxFilters(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	a := runPod(t, r, podSandbox("a", nil))
	b := runPod(t, r, podSandbox("b", nil))
	c := runPod(t, r, podSandbox("c", nil))
	if err := r.StopPodSandbox(ctx, c); err != nil {
		t.Fatal(err)
	}
	ready := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}
	notReady := &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}
	tests := []struct {
		name   string
		filter *runtimeapi.PodSandboxFilter
		want   []string
	}{
		{"none", nil, []string{a, b, c}},
		{"empty", &runtimeapi.PodSandboxFilter{}, []string{a, b, c}},
		{"id", &runtimeapi.PodSandboxFilter{Id: b}, []string{b}},
		{"unknown id", &runtimeapi.PodSandboxFilter{Id: "nope"}, nil},
		{"ready", &runtimeapi.PodSandboxFilter{State: ready}, []string{a, b}},
		{"not ready", &runtimeapi.PodSandboxFilter{State: notReady}, []string{c}},
		{"label", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": "uid-a"}}, []string{a}},
		{"labels ANDed", &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "a", "io.kubernetes.pod.name": "b"}}, nil},
		{"id and state", &runtimeapi.PodSandboxFilter{Id: c, State: ready}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ListPodSandbox(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, s := range got {
				ids = append(ids, s.Id)
			}
			if !sameSet(ids, tt.want) {
				t.Errorf("got %v, want %v", ids, tt.want)
			}
		})
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestVersionStatusConfig(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	v, err := r.Version(ctx, "")
	if err != nil || v.RuntimeName != RuntimeName || v.RuntimeApiVersion != "v1" || v.RuntimeVersion == "" {
		t.Errorf("Version: %v, %v", v, err)
	}
	st, err := r.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	ready := map[string]bool{}
	for _, c := range st.Status.Conditions {
		ready[c.Type] = c.Status
	}
	if !ready[runtimeapi.RuntimeReady] || !ready[runtimeapi.NetworkReady] {
		t.Errorf("conditions %v, want RuntimeReady and NetworkReady", st.Status.Conditions)
	}
	rc, err := r.RuntimeConfig(ctx)
	if err != nil || rc.GetLinux().GetCgroupDriver() != runtimeapi.CgroupDriver_CGROUPFS {
		t.Errorf("RuntimeConfig: %v, %v", rc, err)
	}
	if err := r.Close(ctx); err != nil {
		t.Error(err)
	}
}

// TestConcurrentNodeAgent runs what a node agent's goroutines do at once (pod workers,
// PLEG, probes, stats), for the race detector.
func TestConcurrentNodeAgent(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				sb := podSandbox(fmt.Sprintf("p%d-%d", w, i), map[string]string{AnnotationRunSeconds + ".job": "1"})
				id, err := r.RunPodSandbox(ctx, sb, "")
				if err != nil {
					t.Error(err)
					return
				}
				var c string
				for _, name := range []string{"app", "job"} {
					cid, err := r.CreateContainer(ctx, id, containerConfig(sb, name), sb)
					if err != nil {
						t.Error(err)
						return
					}
					if err := r.StartContainer(ctx, cid); err != nil {
						t.Error(err)
					}
					if name == "app" {
						c = cid
					}
				}
				if _, _, err := r.ExecSync(ctx, c, []string{"true"}, time.Second); err != nil {
					t.Error(err)
				}
				if err := r.StopContainer(ctx, c, 30); err != nil {
					t.Error(err)
				}
				if i%2 == 0 {
					if err := r.StopPodSandbox(ctx, id); err != nil {
						t.Error(err)
					}
					if err := r.RemovePodSandbox(ctx, id); err != nil {
						t.Error(err)
					}
				}
			}
		}()
	}
	listerDone := make(chan struct{})
	go func() { // the PLEG and the stats provider
		defer close(listerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			sbs, _ := r.ListPodSandbox(ctx, nil)
			for _, s := range sbs {
				_, _ = r.PodSandboxStatus(ctx, s.Id, false)
			}
			cs, _ := r.ListContainers(ctx, nil)
			for _, c := range cs {
				_, _ = r.ContainerStatus(ctx, c.Id, false)
			}
			_, _ = r.ListContainerStats(ctx, nil)
			clk.Step(100 * time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	<-listerDone
}

func TestSandboxImageIsPresentAndPinned(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	resp, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: pause.ImageName}, false)
	if err != nil || resp.Image == nil || !resp.Image.Pinned {
		t.Fatalf("sandbox image %s: %v, %v; want present and pinned", pause.ImageName, resp, err)
	}
}
