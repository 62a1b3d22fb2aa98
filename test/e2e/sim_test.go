package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/berth-cluster/berth/pkg/util/mount"
)

// TestSim: `berth sim` runs 100 simulated nodes, each berth's real node agent on the
// in-memory runtime. They register Ready with Leases; 1,000 pods run to Running with the
// statuses and events a real node gives them; scripted pods complete, crash-loop and fail to
// pull; then every pod is deleted through the node agents' graceful termination.
func TestSim(t *testing.T) {
	t.Parallel()
	const nodes, pods = 100, 1000
	dir := filepath.Join(workDir, "sim")
	c := startCluster(t, "up", dir)
	sim, err := startProcess("berth sim", berthBin, "sim", "--kubeconfig", c.kubeconfig(), "--nodes", fmt.Sprint(nodes),
		"--data-dir", filepath.Join(dir, "sim"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.stop(30 * time.Second); err != nil {
			t.Errorf("stopping berth sim: %v", err)
		}
		if points, err := mount.PointsUnder(filepath.Join(dir, "sim")); err != nil || len(points) > 0 {
			t.Errorf("berth sim left mounts behind: %v %v", points, err)
			_ = mount.UnmountUnder(filepath.Join(dir, "sim"))
		}
		if t.Failed() {
			t.Logf("output of berth sim:\n%s", tail(sim.output.String(), 200))
		}
	})

	// Every node registers and turns Ready, with its Lease.
	eventually(t, 2*time.Minute, "100 simulated nodes Ready", func() bool {
		out := c.kubectl(t, "get", "nodes", "-l", "node.berth.dev/simulated=true", "-o",
			`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`).stdout
		if strings.Count(out, "True") == nodes {
			return true
		}
		time.Sleep(time.Second)
		return false
	})
	leases := c.must(t, "get", "leases", "-n", "kube-node-lease", "-o", "jsonpath={range .items[*]}{.spec.holderIdentity}{\"\\n\"}{end}")
	if n := strings.Count(leases, "sim-"); n != nodes {
		t.Errorf("%d node Leases held by simulated nodes, want %d", n, nodes)
	}
	nodeIPs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(c.must(t, "get", "nodes", "-o",
		`jsonpath={range .items[*]}{.metadata.name} {.status.addresses[?(@.type=="InternalIP")].address} {.spec.podCIDR}{"\n"}{end}`)), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 {
			nodeIPs[f[0]] = f[1] + " " + f[2]
		}
	}

	ns := c.newNamespace(t)
	// 1,000 pods through client-go (kubectl create of that many takes a minute by itself).
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	config.QPS, config.Burst = -1, 0
	client := kubernetes.NewForConfigOrDie(config)
	ctx := context.Background()
	work := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 16 {
		wg.Go(func() {
			for i := range work {
				pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%04d", i)},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}}
				if _, err := client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					t.Errorf("creating %s: %v", pod.Name, err)
					failed.Add(1)
				}
			}
		})
	}
	for i := range pods {
		work <- i
	}
	close(work)
	wg.Wait()
	if failed.Load() > 0 {
		t.FailNow()
	}
	c.mustIn(t, `apiVersion: v1
kind: Pod
metadata: {name: job, annotations: {sim.berth.dev/run-seconds: "2"}}
spec:
  restartPolicy: Never
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: crash, annotations: {sim.berth.dev/run-seconds: "1", sim.berth.dev/exit-code: "3"}}
spec:
  containers: [{name: c, image: busybox}]
---
apiVersion: v1
kind: Pod
metadata: {name: nopull}
spec:
  containers: [{name: c, image: example.com/fail-pull:1}]
`, "create", "-n", ns, "-f", "-")

	var list v1.PodList
	eventually(t, 3*time.Minute, "1,000 pods Running", func() bool {
		list = v1.PodList{}
		if err := json.Unmarshal([]byte(c.must(t, "get", "pods", "-n", ns, "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		running := 0
		for _, p := range list.Items {
			if p.Status.Phase == v1.PodRunning && strings.HasPrefix(p.Name, "p") {
				running++
			}
		}
		if running == pods {
			return true
		}
		time.Sleep(2 * time.Second)
		return false
	})

	// Statuses as on a real node.
	_, simRange, _ := net.ParseCIDR("10.128.0.0/9")
	perNode := map[string]int{}
	for _, p := range list.Items {
		if !strings.HasPrefix(p.Name, "p") {
			continue
		}
		perNode[p.Spec.NodeName]++
		st := p.Status
		ipAndCIDR := strings.Fields(nodeIPs[p.Spec.NodeName])
		if len(ipAndCIDR) != 2 || st.HostIP != ipAndCIDR[0] {
			t.Errorf("%s: hostIP %q, node %s has %v", p.Name, st.HostIP, p.Spec.NodeName, ipAndCIDR)
			continue
		}
		_, nodeCIDR, _ := net.ParseCIDR(ipAndCIDR[1])
		if ip := net.ParseIP(st.PodIP); ip == nil || !simRange.Contains(ip) || nodeCIDR == nil || !nodeCIDR.Contains(ip) {
			t.Errorf("%s: podIP %q outside its node's podCIDR %s", p.Name, st.PodIP, ipAndCIDR[1])
		}
		for _, cond := range []v1.PodConditionType{v1.PodScheduled, v1.PodInitialized, v1.ContainersReady, v1.PodReady, "PodReadyToStartContainers"} {
			if !hasCondition(st.Conditions, cond) {
				t.Errorf("%s: condition %s not True: %+v", p.Name, cond, st.Conditions)
			}
		}
		if len(st.ContainerStatuses) != 1 {
			t.Errorf("%s: %d container statuses", p.Name, len(st.ContainerStatuses))
			continue
		}
		cs := st.ContainerStatuses[0]
		if !cs.Ready || cs.Started == nil || !*cs.Started || cs.State.Running == nil || cs.RestartCount != 0 ||
			!strings.HasPrefix(cs.ContainerID, "berth-memory://") || cs.ImageID == "" || cs.Image != "docker.io/library/nginx:latest" {
			t.Errorf("%s: container status %+v", p.Name, cs)
		}
		if st.StartTime == nil || st.QOSClass != v1.PodQOSBestEffort {
			t.Errorf("%s: startTime %v qosClass %q", p.Name, st.StartTime, st.QOSClass)
		}
	}
	// Their token volumes (kube-api-access, a projected volume) are on the one tmpfs berth sim
	// mounts on its directory, not a mount each.
	tokens := 0
	for _, p := range list.Items {
		for _, v := range p.Spec.Volumes {
			if v.Projected != nil && strings.HasPrefix(v.Name, "kube-api-access-") {
				tokens++
			}
		}
	}
	if tokens < pods {
		t.Errorf("%d of the pods have a kube-api-access volume, want all %d", tokens, pods)
	}
	if points, err := mount.PointsUnder(filepath.Join(dir, "sim")); err != nil {
		t.Error(err)
	} else if len(points) != 1 {
		t.Errorf("%d mounts under berth sim's directory with %d pods running, want 1 (its tmpfs); the first: %v", len(points), pods, points[:min(5, len(points))])
	}
	if len(perNode) < nodes/2 {
		t.Errorf("the pods went to %d nodes only: %v", len(perNode), perNode)
	}

	// Every pod's events, from its node.
	reasons := podEvents(t, c, ns)
	for _, p := range list.Items {
		if !strings.HasPrefix(p.Name, "p") {
			continue
		}
		for _, want := range []string{"Scheduled", "Pulling", "Pulled", "Created", "Started"} {
			if !reasons[p.Name][want] {
				t.Errorf("%s: no %s event (has %v)", p.Name, want, reasons[p.Name])
				break
			}
		}
	}

	// The scripted ones.
	c.waitPhase(t, ns, "job", "Succeeded")
	if got := c.jsonpath(t, ns, "pod/job", "{.status.containerStatuses[0].state.terminated.reason} {.status.containerStatuses[0].state.terminated.exitCode}"); got != "Completed 0" {
		t.Errorf("job: terminated %q, want Completed 0", got)
	}
	c.waitStatusColumn(t, ns, "crash", "CrashLoopBackOff")
	c.waitEvent(t, ns, "crash", "BackOff", "Back-off restarting failed container c")
	if got := c.jsonpath(t, ns, "pod/crash", "{.status.containerStatuses[0].lastState.terminated.exitCode}"); got != "3" {
		t.Errorf("crash: last exit code %q, want 3", got)
	}
	c.waitStatusColumn(t, ns, "nopull", "ImagePullBackOff")
	c.waitEvent(t, ns, "nopull", "Failed", "example.com/fail-pull:1")

	// Deleted pods go through the node agents' termination and are gone.
	c.must(t, "delete", "pods", "--all", "-n", ns, "--wait=false")
	eventually(t, 3*time.Minute, "every pod deleted", func() bool {
		if strings.TrimSpace(c.must(t, "get", "pods", "-n", ns, "-o", "name")) == "" {
			return true
		}
		time.Sleep(2 * time.Second)
		return false
	})
	reasons = podEvents(t, c, ns)
	killed := 0
	for name, r := range reasons {
		if strings.HasPrefix(name, "p") && r["Killing"] {
			killed++
		}
	}
	if killed != pods {
		t.Errorf("%d pods have a Killing event, want %d", killed, pods)
	}
	if ready := c.must(t, "get", "nodes", "-l", "node.berth.dev/simulated=true", "-o",
		`jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}`); strings.Count(ready, "True") != nodes {
		t.Errorf("after the run, not every simulated node is Ready:\n%s", ready)
	}
}

func hasCondition(conds []v1.PodCondition, t v1.PodConditionType) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// podEvents are the reasons of the events of each pod in ns.
func podEvents(t *testing.T, c *cluster, ns string) map[string]map[string]bool {
	t.Helper()
	var events v1.EventList
	if err := json.Unmarshal([]byte(c.must(t, "get", "events", "-n", ns, "-o", "json")), &events); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, e := range events.Items {
		if e.InvolvedObject.Kind != "Pod" {
			continue
		}
		if out[e.InvolvedObject.Name] == nil {
			out[e.InvolvedObject.Name] = map[string]bool{}
		}
		out[e.InvolvedObject.Name][e.Reason] = true
	}
	return out
}
