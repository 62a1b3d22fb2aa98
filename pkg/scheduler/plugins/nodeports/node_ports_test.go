package nodeports

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// newPod returns a pod on node with host ports written "PROTOCOL/IP/PORT".
func newPod(node string, ports ...string) *v1.Pod {
	p := st.MakePod().Name("p-" + strings.Join(ports, ",")).Node(node)
	for _, s := range ports {
		parts := strings.Split(s, "/")
		port, _ := strconv.Atoi(parts[2])
		p.HostPort(int32(port), v1.Protocol(parts[0]), parts[1])
	}
	return p.Obj()
}

// withInitPorts adds an init container that binds port 8001 on all addresses; a sidecar when
// restartPolicy is Always.
func withInitPorts(pod *v1.Pod, sidecar bool) *v1.Pod {
	c := v1.Container{Name: "init", Image: "img", Ports: []v1.ContainerPort{{ContainerPort: 8001, HostPort: 8001, Protocol: v1.ProtocolTCP}}}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	return pod
}

func newNodeInfo(ports ...string) *framework.NodeInfo {
	ni := framework.NewNodeInfo(newPod("m1", ports...))
	ni.SetNode(st.MakeNode().Name("m1").Obj())
	return ni
}

func TestNodePorts(t *testing.T) {
	tests := []struct {
		name          string
		pod           *v1.Pod
		nodeInfo      *framework.NodeInfo
		wantSkip      bool
		wantNoFitting bool
	}{
		{name: "no host ports: skip", pod: st.MakePod().Name("p").Obj(), nodeInfo: newNodeInfo(), wantSkip: true},
		{name: "other port", pod: newPod("", "UDP/127.0.0.1/8080"), nodeInfo: newNodeInfo("UDP/127.0.0.1/9090")},
		{name: "same udp port", pod: newPod("", "UDP/127.0.0.1/8080"), nodeInfo: newNodeInfo("UDP/127.0.0.1/8080"), wantNoFitting: true},
		{name: "same tcp port", pod: newPod("", "TCP/127.0.0.1/8080"), nodeInfo: newNodeInfo("TCP/127.0.0.1/8080"), wantNoFitting: true},
		{name: "different host ip", pod: newPod("", "TCP/127.0.0.1/8080"), nodeInfo: newNodeInfo("TCP/127.0.0.2/8080")},
		{name: "different protocol", pod: newPod("", "UDP/127.0.0.1/8080"), nodeInfo: newNodeInfo("TCP/127.0.0.1/8080")},
		{
			name: "second udp port conflict", pod: newPod("", "UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"),
			nodeInfo: newNodeInfo("UDP/127.0.0.1/8080"), wantNoFitting: true,
		},
		{
			name: "first tcp port conflict", pod: newPod("", "TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"),
			nodeInfo: newNodeInfo("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), wantNoFitting: true,
		},
		{name: "0.0.0.0 wanted, specific ip taken", pod: newPod("", "TCP/0.0.0.0/8001"), nodeInfo: newNodeInfo("TCP/127.0.0.1/8001"), wantNoFitting: true},
		{
			name: "0.0.0.0 among wanted ports", pod: newPod("", "TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"),
			nodeInfo: newNodeInfo("TCP/127.0.0.1/8001"), wantNoFitting: true,
		},
		{name: "specific ip wanted, 0.0.0.0 taken", pod: newPod("", "TCP/127.0.0.1/8001"), nodeInfo: newNodeInfo("TCP/0.0.0.0/8001"), wantNoFitting: true},
		{name: "0.0.0.0 taken for another protocol", pod: newPod("", "UDP/127.0.0.1/8001"), nodeInfo: newNodeInfo("TCP/0.0.0.0/8001")},
		{
			name: "0.0.0.0 taken for both protocols", pod: newPod("", "UDP/127.0.0.1/8001"),
			nodeInfo: newNodeInfo("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), wantNoFitting: true,
		},
		{name: "empty protocol means TCP", pod: newPod("", "/127.0.0.1/8001"), nodeInfo: newNodeInfo("TCP/127.0.0.1/8001"), wantNoFitting: true},
		{
			name: "ports of an ordinary init container are not held", pod: withInitPorts(st.MakePod().Name("p").Obj(), false),
			nodeInfo: newNodeInfo("TCP/0.0.0.0/8001"), wantSkip: true,
		},
		{
			name: "ports of a sidecar are held", pod: withInitPorts(st.MakePod().Name("p").Obj(), true),
			nodeInfo: newNodeInfo("TCP/0.0.0.0/8001"), wantNoFitting: true,
		},
	}
	p, _ := New(context.Background(), nil, nil)
	pl := p.(*NodePorts)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState()
			res, s := pl.PreFilter(ctx, state, tt.pod, nil)
			if !res.AllNodes() {
				t.Errorf("PreFilter narrowed the nodes: %v", res.NodeNames)
			}
			if tt.wantSkip {
				if !s.IsSkip() {
					t.Errorf("PreFilter = %v, want Skip", s)
				}
				return
			}
			if !s.IsSuccess() {
				t.Fatalf("PreFilter = %v", s)
			}
			got := pl.Filter(ctx, state, tt.pod, tt.nodeInfo)
			if tt.wantNoFitting {
				if got.Code() != framework.Unschedulable || got.Message() != ErrReason {
					t.Errorf("Filter = %v, want Unschedulable: %s", got, ErrReason)
				}
			} else if !got.IsSuccess() {
				t.Errorf("Filter = %v, want success", got)
			}
			if Fits(tt.pod, tt.nodeInfo) == tt.wantNoFitting {
				t.Errorf("Fits = %v", !tt.wantNoFitting)
			}
		})
	}
}

func TestFilterWithoutPreFilter(t *testing.T) {
	p, _ := New(context.Background(), nil, nil)
	got := p.(framework.FilterPlugin).Filter(context.Background(), framework.NewCycleState(), newPod("", "TCP/127.0.0.1/8080"), newNodeInfo())
	if got.Code() != framework.Error || got.Message() != `reading "PreFilterNodePorts" from cycleState: not found` {
		t.Errorf("Filter = %v", got)
	}
}

func TestIsSchedulableAfterAssignedPodDeleted(t *testing.T) {
	pod := newPod("", "TCP/0.0.0.0/8080")
	tests := []struct {
		name    string
		oldObj  interface{}
		want    framework.QueueingHint
		wantErr bool
	}{
		{name: "not a pod", oldObj: "x", want: framework.Queue, wantErr: true},
		{name: "deleted pod held the port", oldObj: newPod("node-a", "TCP/0.0.0.0/8080"), want: framework.Queue},
		{name: "deleted pod held it on one address", oldObj: newPod("node-a", "TCP/10.0.0.1/8080"), want: framework.Queue},
		{name: "deleted pod was never placed", oldObj: newPod("", "TCP/0.0.0.0/8080"), want: framework.QueueSkip},
		{name: "deleted pod held no ports", oldObj: newPod("node-a"), want: framework.QueueSkip},
		{name: "deleted pod held other ports", oldObj: newPod("node-a", "TCP/0.0.0.0/8081", "UDP/0.0.0.0/8080"), want: framework.QueueSkip},
		{
			name: "deleted pod was nominated",
			oldObj: func() *v1.Pod {
				p := newPod("", "TCP/0.0.0.0/8080")
				p.Status.NominatedNodeName = "node-a"
				return p
			}(),
			want: framework.Queue,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := isSchedulableAfterAssignedPodDeleted(klog.Background(), pod, tt.oldObj, nil)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("got %v, %v; want %v (err %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// Filter runs for every node of every pod: it must not allocate.
func TestFilterDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	pod := newPod("", "TCP/0.0.0.0/8080", "UDP/10.0.0.1/53")
	ni := newNodeInfo("TCP/127.0.0.1/8081", "UDP/0.0.0.0/54")
	pl := &NodePorts{}
	state := framework.NewCycleState()
	pl.PreFilter(ctx, state, pod, nil)
	if allocs := testing.AllocsPerRun(100, func() {
		if s := pl.Filter(ctx, state, pod, ni); !s.IsSuccess() {
			t.Fatal(s)
		}
	}); allocs != 0 {
		t.Errorf("Filter allocates %v times", allocs)
	}
}
