package nodestatus

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

const gi = int64(1) << 30

func testConfig() Config {
	cfg := Config{NodeName: "node-a", KubeletVersion: "v1.37.2", RootDir: "/var/lib/berth"}
	cfg.complete()
	return cfg
}

func testMachine() *MachineInfo {
	return &MachineInfo{
		NumCores: 4, MemoryCapacity: 8 * gi,
		HugePages:      map[int64]int64{2 << 20: 0, gi: 0},
		RootfsCapacity: 100 * gi,
		MachineID:      "mid", SystemUUID: "uuid", BootID: "boot-1",
		KernelVersion: "6.1.0", OSImage: "Debian GNU/Linux 12 (bookworm)",
	}
}

// readyInputs are the inputs of a healthy node at now.
func readyInputs(now time.Time) *statusInputs {
	return &statusInputs{
		now: now, nodeIP: net.ParseIP("127.0.0.1"), machine: testMachine(),
		runtimeType: "containerd", runtimeVersion: "1.6.20",
	}
}

func quantities(l v1.ResourceList) map[v1.ResourceName]string {
	out := map[v1.ResourceName]string{}
	for k, v := range l {
		out[k] = v.String()
	}
	return out
}

func TestCapacityAndAllocatable(t *testing.T) {
	tests := []struct {
		name            string
		cfg             func(*Config)
		machine         func(*MachineInfo)
		noMachine       bool
		old             v1.ResourceList // allocatable before
		oldCapacity     v1.ResourceList
		wantCapacity    map[v1.ResourceName]string
		wantAllocatable map[v1.ResourceName]string
	}{
		{
			name: "defaults: 100Mi of memory and 10% of the disk kept for eviction",
			wantCapacity: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110",
				"ephemeral-storage": "100Gi", "hugepages-2Mi": "0", "hugepages-1Gi": "0"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "4", "memory": "8092Mi", "pods": "110",
				"ephemeral-storage": "90Gi", "hugepages-2Mi": "0", "hugepages-1Gi": "0"},
		},
		{
			name: "reserved resources, max pods, no disk threshold",
			cfg: func(c *Config) {
				c.Reserved = v1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("1Gi"), "ephemeral-storage": resource.MustParse("1Gi")}
				c.MaxPods = 30
				c.NodefsThresholdPercent = -1
				c.HardEvictionMemory = resource.MustParse("200Mi")
			},
			wantCapacity: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "30",
				"ephemeral-storage": "100Gi", "hugepages-2Mi": "0", "hugepages-1Gi": "0"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "3500m", "memory": "6968Mi", "pods": "30",
				"ephemeral-storage": "99Gi", "hugepages-2Mi": "0", "hugepages-1Gi": "0"},
		},
		{
			name:    "huge pages come out of allocatable memory",
			machine: func(m *MachineInfo) { m.HugePages = map[int64]int64{2 << 20: 512} },
			wantCapacity: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110",
				"ephemeral-storage": "100Gi", "hugepages-2Mi": "1Gi"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "4", "memory": "7068Mi", "pods": "110",
				"ephemeral-storage": "90Gi", "hugepages-2Mi": "1Gi"},
		},
		{
			name:    "reservations larger than capacity leave zero",
			cfg:     func(c *Config) { c.Reserved = v1.ResourceList{"cpu": resource.MustParse("8")} },
			machine: func(m *MachineInfo) { m.HugePages = nil },
			wantCapacity: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110",
				"ephemeral-storage": "100Gi"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "0", "memory": "8092Mi", "pods": "110",
				"ephemeral-storage": "90Gi"},
		},
		{
			name:            "unknown root filesystem: no ephemeral storage",
			machine:         func(m *MachineInfo) { m.HugePages = nil; m.RootfsErr = errors.New("statfs: no such file") },
			wantCapacity:    map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "4", "memory": "8092Mi", "pods": "110"},
		},
		{
			name:            "no machine information: no CPU and no memory",
			noMachine:       true,
			wantCapacity:    map[v1.ResourceName]string{"cpu": "0", "memory": "0", "pods": "110"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "0", "memory": "0", "pods": "110"},
		},
		{
			name:        "extended resources: kept in capacity, dropped from allocatable only once gone",
			machine:     func(m *MachineInfo) { m.HugePages = nil },
			oldCapacity: v1.ResourceList{"example.com/gpu": resource.MustParse("2")},
			old:         v1.ResourceList{"example.com/gpu": resource.MustParse("2"), "example.com/gone": resource.MustParse("1")},
			wantCapacity: map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "pods": "110",
				"ephemeral-storage": "100Gi", "example.com/gpu": "2"},
			wantAllocatable: map[v1.ResourceName]string{"cpu": "4", "memory": "8092Mi", "pods": "110",
				"ephemeral-storage": "90Gi", "example.com/gpu": "2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			in := readyInputs(time.Now())
			if tt.machine != nil {
				tt.machine(in.machine)
			}
			if tt.noMachine {
				in.machine = nil
			}
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
			node.Status.Capacity = tt.oldCapacity
			node.Status.Allocatable = tt.old
			setNodeStatus(&cfg, node, in)
			if diff := cmp.Diff(tt.wantCapacity, quantities(node.Status.Capacity)); diff != "" {
				t.Errorf("capacity (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAllocatable, quantities(node.Status.Allocatable)); diff != "" {
				t.Errorf("allocatable (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeInfoAndAddresses(t *testing.T) {
	cfg := testConfig()
	cfg.Hostname = "host-a"
	cfg.DaemonPort = 10350
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	in := readyInputs(time.Now())
	events, errs := setNodeStatus(&cfg, node, in)
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	want := v1.NodeSystemInfo{
		MachineID: "mid", SystemUUID: "uuid", BootID: "boot-1", KernelVersion: "6.1.0",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://1.6.20",
		KubeletVersion: "v1.37.2", OperatingSystem: "linux", Architecture: node.Status.NodeInfo.Architecture,
	}
	if diff := cmp.Diff(want, node.Status.NodeInfo); diff != "" {
		t.Errorf("node info (-want +got):\n%s", diff)
	}
	wantAddresses := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "127.0.0.1"}, {Type: v1.NodeHostName, Address: "host-a"}}
	if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	if node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10350 {
		t.Errorf("kubelet port %d, want 10350", node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	}
	wantEvents := []event{
		{"Normal", "NodeHasSufficientMemory", "Node node-a status is now: NodeHasSufficientMemory", "MemoryPressure"},
		{"Normal", "NodeHasNoDiskPressure", "Node node-a status is now: NodeHasNoDiskPressure", "DiskPressure"},
		{"Normal", "NodeHasSufficientPID", "Node node-a status is now: NodeHasSufficientPID", "PIDPressure"},
		{"Normal", "NodeReady", "Node node-a status is now: NodeReady", "Ready"},
	}
	if diff := cmp.Diff(wantEvents, events, cmp.AllowUnexported(event{})); diff != "" {
		t.Errorf("events of a new node (-want +got):\n%s", diff)
	}

	// The runtime does not answer its version; the machine rebooted; no address is known.
	in.runtimeVersion = ""
	in.machine.BootID = "boot-2"
	in.nodeIP, in.nodeIPErr = nil, errNoNodeIP
	events, errs = setNodeStatus(&cfg, node, in)
	if got := node.Status.NodeInfo.ContainerRuntimeVersion; got != "containerd://Unknown" {
		t.Errorf("runtime version %q, want containerd://Unknown", got)
	}
	if len(events) != 1 || events[0].reason != "Rebooted" || events[0].eventType != v1.EventTypeWarning ||
		events[0].message != "Node node-a has been rebooted, boot id: boot-2" {
		t.Errorf("events %+v, want one Rebooted", events)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "can't get ip address of node node-a") {
		t.Errorf("errors %v, want the missing address", errs)
	}
	if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
		t.Errorf("addresses should stay as they were (-want +got):\n%s", diff)
	}
}

func TestConditions(t *testing.T) {
	cfg := testConfig()
	clock := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
	notReady := NewRuntimeState()
	notReady.clock = clock

	type step struct {
		name       string
		runtime    *RuntimeState
		in         func(*statusInputs)
		wantEvents []string
		// want is each condition's status and reason, in order.
		want        []string
		wantMessage string
		// transitioned lists the conditions whose lastTransitionTime is this step's time.
		transitioned []v1.NodeConditionType
	}
	ready := NewRuntimeState()
	ready.clock = clock
	steps := []step{
		{
			name: "a new node whose runtime was not checked yet", runtime: notReady,
			wantEvents: []string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"},
			want: []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
				"PIDPressure=False KubeletHasSufficientPID", "Ready=False KubeletNotReady"},
			wantMessage:  "[container runtime status check may not have completed yet, network state unknown]",
			transitioned: []v1.NodeConditionType{"MemoryPressure", "DiskPressure", "PIDPressure", "Ready"},
		},
		{
			name: "the runtime is up", runtime: ready, wantEvents: []string{"NodeReady"},
			want: []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
				"PIDPressure=False KubeletHasSufficientPID", "Ready=True KubeletReady"},
			wantMessage:  "kubelet is posting ready status",
			transitioned: []v1.NodeConditionType{"Ready"},
		},
		{
			name: "nothing changes", runtime: ready,
			want: []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
				"PIDPressure=False KubeletHasSufficientPID", "Ready=True KubeletReady"},
			wantMessage: "kubelet is posting ready status",
		},
		{
			name: "memory and PID pressure", runtime: ready,
			in:         func(in *statusInputs) { in.memoryPressure, in.pidPressure = true, true },
			wantEvents: []string{"NodeHasInsufficientMemory", "NodeHasInsufficientPID"},
			want: []string{"MemoryPressure=True KubeletHasInsufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
				"PIDPressure=True KubeletHasInsufficientPID", "Ready=True KubeletReady"},
			wantMessage:  "kubelet is posting ready status",
			transitioned: []v1.NodeConditionType{"MemoryPressure", "PIDPressure"},
		},
		{
			name: "disk pressure, memory and PID back", runtime: ready,
			in:         func(in *statusInputs) { in.diskPressure = true },
			wantEvents: []string{"NodeHasSufficientMemory", "NodeHasDiskPressure", "NodeHasSufficientPID"},
			want: []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=True KubeletHasDiskPressure",
				"PIDPressure=False KubeletHasSufficientPID", "Ready=True KubeletReady"},
			wantMessage:  "kubelet is posting ready status",
			transitioned: []v1.NodeConditionType{"MemoryPressure", "DiskPressure", "PIDPressure"},
		},
		{
			name: "the disk is gone from capacity", runtime: ready,
			in: func(in *statusInputs) {
				in.machine.RootfsErr = errors.New("gone")
			},
			want: []string{"MemoryPressure=False KubeletHasSufficientMemory", "DiskPressure=False KubeletHasNoDiskPressure",
				"PIDPressure=False KubeletHasSufficientPID", "Ready=True KubeletReady"},
			wantEvents:   []string{"NodeHasNoDiskPressure"},
			wantMessage:  "kubelet is posting ready status", // the old capacity stays, as in the kubelet
			transitioned: []v1.NodeConditionType{"DiskPressure"},
		},
	}
	for _, s := range steps {
		clock.Step(10 * time.Second)
		in := readyInputs(clock.Now())
		in.runtimeErr, in.networkErr = s.runtime.RuntimeErrors(), s.runtime.NetworkErrors()
		if s.runtime == ready {
			ready.UpdateFromStatus(&container.RuntimeStatus{Conditions: []container.RuntimeCondition{
				{Type: container.RuntimeReady, Status: true}, {Type: container.NetworkReady, Status: true}}}, clock.Now())
			in.runtimeErr, in.networkErr = ready.RuntimeErrors(), ready.NetworkErrors()
		}
		if s.in != nil {
			s.in(in)
		}
		events, _ := setNodeStatus(&cfg, node, in)
		var gotEvents []string
		for _, e := range events {
			gotEvents = append(gotEvents, e.reason)
		}
		if diff := cmp.Diff(s.wantEvents, gotEvents); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", s.name, diff)
		}
		var got []string
		for _, c := range node.Status.Conditions {
			got = append(got, string(c.Type)+"="+string(c.Status)+" "+c.Reason)
			if !c.LastHeartbeatTime.Time.Equal(clock.Now()) {
				t.Errorf("%s: %s heartbeat %v, want %v", s.name, c.Type, c.LastHeartbeatTime, clock.Now())
			}
			wantTransition := false
			for _, tc := range s.transitioned {
				wantTransition = wantTransition || tc == c.Type
			}
			if gotTransition := c.LastTransitionTime.Time.Equal(clock.Now()); gotTransition != wantTransition {
				t.Errorf("%s: %s transitioned at %v (now %v), want a transition: %v", s.name, c.Type, c.LastTransitionTime, clock.Now(), wantTransition)
			}
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Errorf("%s: conditions (-want +got):\n%s", s.name, diff)
		}
		if msg := findCondition(node, v1.NodeReady).Message; msg != s.wantMessage {
			t.Errorf("%s: Ready message %q, want %q", s.name, msg, s.wantMessage)
		}
	}
}

func TestReadyReasons(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakeClock(now)
	status := func(conds ...container.RuntimeCondition) *container.RuntimeStatus {
		return &container.RuntimeStatus{Conditions: conds}
	}
	tests := []struct {
		name        string
		status      *container.RuntimeStatus
		later       time.Duration // how long after the check the status is computed
		noDisk      bool
		wantReady   bool
		wantMessage string
	}{
		{
			name:      "runtime and network ready",
			status:    status(container.RuntimeCondition{Type: "RuntimeReady", Status: true}, container.RuntimeCondition{Type: "NetworkReady", Status: true}),
			wantReady: true, wantMessage: "kubelet is posting ready status",
		},
		{
			name: "network not ready",
			status: status(container.RuntimeCondition{Type: "RuntimeReady", Status: true},
				container.RuntimeCondition{Type: "NetworkReady", Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"}),
			wantMessage: "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized",
		},
		{
			name:        "no conditions at all",
			status:      status(),
			wantMessage: "[container runtime status check may not have completed yet, container runtime not ready: <nil>, container runtime network not ready: <nil>]",
		},
		{
			name:        "runtime ready once, but too long ago",
			status:      status(container.RuntimeCondition{Type: "RuntimeReady", Status: true}, container.RuntimeCondition{Type: "NetworkReady", Status: true}),
			later:       31 * time.Second,
			wantMessage: "container runtime is down",
		},
		{
			name:        "ready runtime, unknown disk",
			status:      status(container.RuntimeCondition{Type: "RuntimeReady", Status: true}, container.RuntimeCondition{Type: "NetworkReady", Status: true}),
			noDisk:      true,
			wantMessage: "missing node capacity for resources: ephemeral-storage",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock.SetTime(now)
			state := NewRuntimeState()
			state.clock = clock
			if got := state.UpdateFromStatus(tt.status, now); got != (tt.status.GetRuntimeCondition("RuntimeReady") != nil) {
				t.Errorf("UpdateFromStatus says ready=%v", got)
			}
			clock.Step(tt.later)
			in := readyInputs(clock.Now())
			in.runtimeErr, in.networkErr = state.RuntimeErrors(), state.NetworkErrors()
			if tt.noDisk {
				in.machine.RootfsErr = errors.New("no disk")
			}
			cfg := testConfig()
			node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}}
			setNodeStatus(&cfg, node, in)
			ready := findCondition(node, v1.NodeReady)
			if (ready.Status == v1.ConditionTrue) != tt.wantReady || ready.Message != tt.wantMessage {
				t.Errorf("Ready=%s %q, want ready=%v %q", ready.Status, ready.Message, tt.wantReady, tt.wantMessage)
			}
			if !tt.wantReady && ready.Reason != "KubeletNotReady" {
				t.Errorf("reason %q, want KubeletNotReady", ready.Reason)
			}
		})
	}
}

func TestImages(t *testing.T) {
	var images []container.Image
	for i, size := range []int64{10, 30, 20, 30} {
		images = append(images, container.Image{
			ID: string(rune('a' + i)), Size: size,
			RepoDigests: []string{"r@sha256:" + string(rune('a'+i))},
			RepoTags:    []string{"r:1", "r:2", "r:3", "r:4", "r:5"},
		})
	}
	cfg := testConfig()
	cfg.MaxImages = 3
	node := &v1.Node{}
	in := readyInputs(time.Now())
	in.images = images
	setNodeStatus(&cfg, node, in)
	var got []string
	for _, img := range node.Status.Images {
		if len(img.Names) != maxNamesPerImage {
			t.Errorf("image has %d names, want %d", len(img.Names), maxNamesPerImage)
		}
		got = append(got, img.Names[0])
	}
	want := []string{"r@sha256:b", "r@sha256:d", "r@sha256:c"} // largest first, ties by ID
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}

	in.images, in.imagesErr = nil, errors.New("runtime down")
	if _, errs := setNodeStatus(&cfg, node, in); len(errs) != 1 || node.Status.Images != nil {
		t.Errorf("with a failing runtime: errors %v, images %v; want one error and no images", errs, node.Status.Images)
	}
}

func TestNodeStatusChanged(t *testing.T) {
	t0, t1 := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	base := v1.NodeStatus{Conditions: []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, LastHeartbeatTime: t0},
		{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: t0},
	}, Capacity: v1.ResourceList{"cpu": resource.MustParse("2")}}
	tests := []struct {
		name   string
		change func(*v1.NodeStatus)
		want   bool
	}{
		{"identical", func(*v1.NodeStatus) {}, false},
		{"only heartbeats", func(s *v1.NodeStatus) { s.Conditions[0].LastHeartbeatTime = t1; s.Conditions[1].LastHeartbeatTime = t1 }, false},
		{"conditions reordered", func(s *v1.NodeStatus) { s.Conditions[0], s.Conditions[1] = s.Conditions[1], s.Conditions[0] }, false},
		{"a condition's status", func(s *v1.NodeStatus) { s.Conditions[1].Status = v1.ConditionFalse }, true},
		{"a condition's transition", func(s *v1.NodeStatus) { s.Conditions[1].LastTransitionTime = t1 }, true},
		{"a condition more", func(s *v1.NodeStatus) {
			s.Conditions = append(s.Conditions, v1.NodeCondition{Type: v1.NodePIDPressure})
		}, true},
		{"capacity", func(s *v1.NodeStatus) { s.Capacity["cpu"] = resource.MustParse("3") }, true},
		{"same capacity written differently", func(s *v1.NodeStatus) { s.Capacity["cpu"] = resource.MustParse("2000m") }, false},
		{"images", func(s *v1.NodeStatus) { s.Images = []v1.ContainerImage{{Names: []string{"x"}}} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base.DeepCopy()
			tt.change(changed)
			if got := nodeStatusChanged(&base, changed); got != tt.want {
				t.Errorf("nodeStatusChanged = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestNodeStatusPatch(t *testing.T) {
	original := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Unschedulable: true}}
	original.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.1"}, {Type: v1.NodeHostName, Address: "n"}}
	tests := []struct {
		name   string
		change func(*v1.Node)
		want   string
	}{
		{"nothing", func(*v1.Node) {}, `{}`},
		{"the spec is left alone", func(n *v1.Node) { n.Spec.Unschedulable = false }, `{}`},
		{"a label", func(n *v1.Node) { n.Labels = map[string]string{"a": "b"} }, `{"metadata":{"labels":{"a":"b"}}}`},
		{"a new address list is sent whole", func(n *v1.Node) {
			n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.2"}, {Type: v1.NodeHostName, Address: "n"}}
		}, `{"status":{"addresses":[{"address":"10.0.0.2","type":"InternalIP"},{"address":"n","type":"Hostname"},{"$patch":"replace"}]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := original.DeepCopy()
			tt.change(node)
			patch, err := nodeStatusPatch(original, node)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != tt.want {
				t.Errorf("patch %s, want %s", patch, tt.want)
			}
		})
	}
}
