package scheduler

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

const zoneKey = "topology.kubernetes.io/zone"

// TestPlacement: pods land where Kubernetes would put them.
func TestPlacement(t *testing.T) {
	c := startWithScheduler(t, nil)
	ctx := testContext(t)
	client := c.Client

	t.Run("resource fit", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client, node("fit-small", "2").Label("test", "fit").Obj(), node("fit-big", "4").Label("test", "fit").Obj())
		createPod(t, ctx, client, ns, st.MakePod().Name("three-cpus").NodeSelector(map[string]string{"test": "fit"}).
			Req(map[v1.ResourceName]string{v1.ResourceCPU: "3"}).Obj())
		if got := waitForNode(t, ctx, client, ns, "three-cpus", 10*time.Second); got != "fit-big" {
			t.Errorf("3-cpu pod on %s, want fit-big", got)
		}
	})

	t.Run("node selector and affinity", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client,
			node("sel-a", "4").Label("test", "sel").Label("disk", "hdd").Obj(),
			node("sel-b", "4").Label("test", "sel").Label("disk", "ssd").Obj(),
			node("sel-c", "4").Label("test", "sel").Label("disk", "nvme").Obj())
		createPod(t, ctx, client, ns, st.MakePod().Name("ssd").NodeSelector(map[string]string{"test": "sel", "disk": "ssd"}).Obj())
		createPod(t, ctx, client, ns, st.MakePod().Name("fast").NodeSelector(map[string]string{"test": "sel"}).NodeAffinityIn("disk", "nvme").Obj())
		createPod(t, ctx, client, ns, st.MakePod().Name("prefers-hdd").NodeSelector(map[string]string{"test": "sel"}).PreferredNodeAffinityIn(100, "disk", "hdd").Obj())
		for pod, want := range map[string]string{"ssd": "sel-b", "fast": "sel-c", "prefers-hdd": "sel-a"} {
			if got := waitForNode(t, ctx, client, ns, pod, 10*time.Second); got != want {
				t.Errorf("%s on %s, want %s", pod, got, want)
			}
		}
		createPod(t, ctx, client, ns, st.MakePod().Name("nowhere").NodeSelector(map[string]string{"disk": "tape"}).Obj())
		msg := waitUnschedulable(t, ctx, client, ns, "nowhere")
		if !strings.Contains(msg, "node(s) didn't match Pod's node affinity/selector") {
			t.Errorf("message %q", msg)
		}
	})

	t.Run("taints and tolerations", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client, node("taint-gpu", "4").Label("test", "taint").
			Taints(v1.Taint{Key: "gpu", Value: "true", Effect: v1.TaintEffectNoSchedule}).Obj())
		createPod(t, ctx, client, ns, st.MakePod().Name("intolerant").NodeSelector(map[string]string{"test": "taint"}).Obj())
		msg := waitUnschedulable(t, ctx, client, ns, "intolerant")
		if !strings.Contains(msg, "0/") || !strings.Contains(msg, "node(s) had untolerated taint {gpu: true}") {
			t.Errorf("message %q, want the untolerated taint named", msg)
		}
		createPod(t, ctx, client, ns, st.MakePod().Name("tolerant").NodeSelector(map[string]string{"test": "taint"}).
			Toleration(v1.Toleration{Key: "gpu", Operator: v1.TolerationOpEqual, Value: "true", Effect: v1.TaintEffectNoSchedule}).Obj())
		if got := waitForNode(t, ctx, client, ns, "tolerant", 10*time.Second); got != "taint-gpu" {
			t.Errorf("tolerant pod on %s", got)
		}
	})

	t.Run("host ports", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client, node("port-a", "4").Label("test", "ports").Obj(), node("port-b", "4").Label("test", "ports").Obj())
		seen := map[string]bool{}
		for _, name := range []string{"web-1", "web-2"} {
			createPod(t, ctx, client, ns, st.MakePod().Name(name).NodeSelector(map[string]string{"test": "ports"}).HostPort(8080, v1.ProtocolTCP, "").Obj())
			seen[waitForNode(t, ctx, client, ns, name, 10*time.Second)] = true
		}
		if len(seen) != 2 {
			t.Errorf("two pods with host port 8080 share a node: %v", seen)
		}
		createPod(t, ctx, client, ns, st.MakePod().Name("web-3").NodeSelector(map[string]string{"test": "ports"}).HostPort(8080, v1.ProtocolTCP, "").Obj())
		if msg := waitUnschedulable(t, ctx, client, ns, "web-3"); !strings.Contains(msg, "node(s) didn't have free ports for the requested pod ports") {
			t.Errorf("message %q", msg)
		}
	})

	t.Run("topology spread across zones", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client,
			node("zone-a1", "8").Label("test", "spread").Label(zoneKey, "a").Obj(),
			node("zone-a2", "8").Label("test", "spread").Label(zoneKey, "a").Obj(),
			node("zone-b1", "8").Label("test", "spread").Label(zoneKey, "b").Obj())
		perZone := map[string]int{"a": 0, "b": 0}
		zoneOf := map[string]string{"zone-a1": "a", "zone-a2": "a", "zone-b1": "b"}
		for i := 0; i < 6; i++ {
			name := "spread-" + string(rune('0'+i))
			createPod(t, ctx, client, ns, st.MakePod().Name(name).Label("app", "spread").NodeSelector(map[string]string{"test": "spread"}).
				SpreadConstraint(1, zoneKey, v1.DoNotSchedule, "app", "spread").Obj())
			perZone[zoneOf[waitForNode(t, ctx, client, ns, name, 10*time.Second)]]++
			if d := perZone["a"] - perZone["b"]; d > 1 || d < -1 {
				t.Fatalf("after %d pods: %v, skew above 1", i+1, perZone)
			}
		}
		if perZone["a"] != 3 || perZone["b"] != 3 {
			t.Errorf("pods per zone %v, want 3 and 3", perZone)
		}
	})

	t.Run("anti-affinity one per node", func(t *testing.T) {
		ns := newNamespace(t, ctx, client)
		createNodes(t, ctx, client, node("anti-1", "4").Label("test", "anti").Obj(), node("anti-2", "4").Label("test", "anti").Obj(), node("anti-3", "4").Label("test", "anti").Obj())
		seen := map[string]bool{}
		for i := 0; i < 3; i++ {
			name := "solo-" + string(rune('0'+i))
			createPod(t, ctx, client, ns, st.MakePod().Name(name).Label("app", "solo").NodeSelector(map[string]string{"test": "anti"}).
				PodAntiAffinity(v1.LabelHostname, "app", "solo").Obj())
			seen[waitForNode(t, ctx, client, ns, name, 10*time.Second)] = true
		}
		if len(seen) != 3 {
			t.Errorf("anti-affine pods share nodes: %v", seen)
		}
		createPod(t, ctx, client, ns, st.MakePod().Name("solo-3").Label("app", "solo").NodeSelector(map[string]string{"test": "anti"}).
			PodAntiAffinity(v1.LabelHostname, "app", "solo").Obj())
		if msg := waitUnschedulable(t, ctx, client, ns, "solo-3"); !strings.Contains(msg, "node(s) didn't match pod anti-affinity rules") {
			t.Errorf("message %q", msg)
		}
		// Affinity: a pod that wants to be with solo-0 lands on its node.
		p0, _ := client.CoreV1().Pods(ns).Get(ctx, "solo-0", metav1.GetOptions{})
		createPod(t, ctx, client, ns, st.MakePod().Name("friend").Label("app", "friend").NodeSelector(map[string]string{"test": "anti"}).
			PodAffinity(v1.LabelHostname, "app", "solo").Obj())
		if got := waitForNode(t, ctx, client, ns, "friend", 10*time.Second); got == "" || !seen[got] {
			t.Errorf("friend on %q", got)
		}
		_ = p0
	})
}
