package kuberuntime

import (
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func sidecarPod(inits []v1.Container, apps ...string) *v1.Pod {
	pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: inits}}
	for _, a := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: a})
	}
	return pod
}

// stopInTurn stops each running container as killContainer does (wait for its turn, stop,
// say so) and returns the order they stopped in.
func stopInTurn(o *terminationOrdering, running []string, grace int64) []string {
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	for _, name := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.waitForTurn(name, grace)
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			o.containerTerminated(name)
		}()
	}
	wg.Wait()
	return order
}

// Sidecars stop after every app container, the last declared first; a regular init
// container, or a container that does not run, holds nobody back.
func TestTerminationOrderingStopsSidecarsLastInReverse(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := sidecarPod([]v1.Container{{Name: "s1", RestartPolicy: &always}, {Name: "init"}, {Name: "s2", RestartPolicy: &always}, {Name: "s3", RestartPolicy: &always}}, "a", "b", "gone")
	running := []string{"s1", "s2", "s3", "a", "b"}
	for i := 0; i < 20; i++ {
		order := stopInTurn(newTerminationOrdering(pod, running), running, 30)
		if len(order) != 5 || !(order[0] == "a" && order[1] == "b" || order[0] == "b" && order[1] == "a") || order[2] != "s3" || order[3] != "s2" || order[4] != "s1" {
			t.Fatalf("stop order %v, want the app containers, then s3, s2, s1", order)
		}
	}
}

// A sidecar waits at most its grace period for what must stop first.
func TestTerminationOrderingWaitIsBoundedByTheGracePeriod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := sidecarPod([]v1.Container{{Name: "s", RestartPolicy: &always}}, "a")
	o := newTerminationOrdering(pod, []string{"s", "a"})
	start := time.Now()
	waited := o.waitForTurn("s", 1) // a never stops
	if elapsed := time.Since(start); elapsed < time.Second || elapsed > 3*time.Second || waited < 1 {
		t.Errorf("the sidecar waited %v (reported %.1fs) for an app container that never stopped, want about its 1 s grace period", elapsed, waited)
	}
}
