package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// TestNodeStatsAndMetrics: through nodes/proxy, the node API's /stats/summary reports the node
// and a running pod's containers (CPU, memory, root filesystem) and /metrics the running pods
// and containers.
func TestNodeStatsAndMetrics(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: %s, command: ["sh", "-c", "while true; do :; done"]}
`, busyboxImage(t)), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "busy", "Running")

	var summary statsapi.Summary
	var pod *statsapi.PodStats
	eventually(t, podTimeout, "the summary to report the pod's container", func() bool {
		raw := c.must(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/stats/summary")
		if err := json.Unmarshal([]byte(raw), &summary); err != nil {
			t.Fatalf("decoding the summary: %v\n%s", err, raw)
		}
		for i := range summary.Pods {
			if p := &summary.Pods[i]; p.PodRef.Namespace == ns && p.PodRef.Name == "busy" && len(p.Containers) == 1 {
				pod = p
				return true
			}
		}
		return false
	})
	if summary.Node.NodeName != n.name {
		t.Errorf("node name %q, want %q", summary.Node.NodeName, n.name)
	}
	if m := summary.Node.Memory; m == nil || m.WorkingSetBytes == nil || *m.WorkingSetBytes == 0 || m.AvailableBytes == nil {
		t.Errorf("node memory %+v", m)
	}
	if fs := summary.Node.Fs; fs == nil || fs.CapacityBytes == nil || *fs.CapacityBytes == 0 {
		t.Errorf("node fs %+v", fs)
	}
	// containerd measures its snapshots' usage every few seconds: the used bytes may still
	// be 0 on a new node; the filesystem's size is known at once.
	if rt := summary.Node.Runtime; rt == nil || rt.ImageFs == nil || rt.ImageFs.CapacityBytes == nil || *rt.ImageFs.CapacityBytes == 0 || rt.ImageFs.UsedBytes == nil {
		t.Errorf("image fs %+v", rt)
	}
	ctr := pod.Containers[0]
	if ctr.Name != "c" || ctr.CPU == nil || ctr.CPU.UsageCoreNanoSeconds == nil || *ctr.CPU.UsageCoreNanoSeconds == 0 {
		t.Errorf("container stats %+v (cpu %+v)", ctr, ctr.CPU)
	}
	if ctr.Memory == nil || ctr.Memory.WorkingSetBytes == nil || *ctr.Memory.WorkingSetBytes == 0 {
		t.Errorf("container memory %+v", ctr.Memory)
	}
	if pod.CPU == nil || pod.Memory == nil {
		t.Errorf("pod totals: cpu %+v memory %+v", pod.CPU, pod.Memory)
	}

	metrics := c.must(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/metrics")
	for _, want := range []string{`kubelet_node_name{node="` + n.name + `"} 1`, "kubelet_running_pods ", `kubelet_running_containers{container_state="running"} `,
		"kubelet_pod_start_duration_seconds_count ", `kubelet_pod_worker_duration_seconds_count{operation_type="sync"} `,
		"kubelet_pleg_relist_duration_seconds_count ", "kubelet_pleg_relist_interval_seconds_count ",
		`kubelet_runtime_operations_total{operation_type="run_podsandbox"} `, `kubelet_runtime_operations_duration_seconds_count{operation_type="start_container"} `} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %q:\n%s", want, metrics)
		}
	}
	// The pod above started on this node, so its start was observed, and sandboxes were run.
	for _, counted := range []string{`kubelet_pod_start_duration_seconds_count`, `kubelet_runtime_operations_total{operation_type="run_podsandbox"}`} {
		m := regexp.MustCompile(regexp.QuoteMeta(counted) + ` (\d+)`).FindStringSubmatch(metrics)
		if m == nil || m[1] == "0" {
			t.Errorf("%s is %v, want at least 1", counted, m)
		}
	}
	if pods := c.must(t, "get", "--raw", "/api/v1/nodes/"+n.name+"/proxy/pods"); !strings.Contains(pods, `"name":"busy"`) {
		t.Errorf("/pods through nodes/proxy does not list the pod")
	}
}
