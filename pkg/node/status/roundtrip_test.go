package status

import (
	"net"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/podstatus"
)

// TestSyncLoopWritesOnce drives the manager as syncPod does — generate a status from the
// runtime's, store it, write — once a second for a minute with nothing changing: one write.
func TestSyncLoopWritesOnce(t *testing.T) {
	pod := makePod("p", "a", "b")
	e := newEnv(t, pod)
	runtime := &container.PodStatus{
		ID: pod.UID, Name: pod.Name, Namespace: pod.Namespace, IPs: []string{"10.88.0.5"},
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{{
			Id: "sb", Metadata: &runtimeapi.PodSandboxMetadata{}, State: runtimeapi.PodSandboxState_SANDBOX_READY,
			CreatedAt: t0.UnixNano(), Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.5"},
			Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{}}},
		}},
	}
	for i, name := range []string{"a", "b"} {
		created := t0.Add(time.Duration(i+1)*time.Second + 123*time.Millisecond)
		runtime.ContainerStatuses = append(runtime.ContainerStatuses, &container.Status{
			ID: container.ContainerID{Type: "containerd", ID: name}, Name: name, State: container.ContainerStateRunning,
			CreatedAt: created, StartedAt: created.Add(time.Millisecond), Image: "img-" + name, ImageRef: "sha256:" + name,
		})
	}
	reasons := podstatus.NewReasonCache()
	writes := 0
	for i := 0; i < 60; i++ {
		old, ok := e.m.GetPodStatus(pod.UID)
		if !ok {
			old = pod.Status
		}
		s := podstatus.GenerateAPIPodStatus(pod, runtime, false, reasons, []net.IP{net.ParseIP("192.0.2.10")}, old, podstatus.WithClock(e.clk))
		e.m.SetPodStatus(e.logger, pod, s)
		patches, _ := e.sync(i%10 == 9)
		writes += len(patches)
		if i == 0 {
			e.pm.add(e.apiPod(t, "p"))
		}
		e.clk.Step(time.Second)
	}
	if writes != 1 {
		t.Fatalf("%d writes for a pod whose state never changed", writes)
	}
	api := e.apiPod(t, "p")
	if api.Status.Phase != v1.PodRunning || findCondition(api.Status.Conditions, v1.PodReady).Status != v1.ConditionTrue {
		t.Fatalf("status = %+v", api.Status)
	}
}
