package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// resizeContainer is one container of TestNodeResizeInPlace: its resources before and after,
// as kubectl's JSON writes them, and the cgroup values it must then see.
type resizeContainer struct {
	name                  string
	before, after         string
	quota, shares, memory string // after the resize: cpu.cfs_quota_us, cpu.shares, memory.limit_in_bytes ("" unchecked)
}

// TestNodeResizeInPlace is the conformance test's resize of five burstable containers
// through pods/resize: requests and limits added, raised and lowered. The node accepts it,
// shows PodResizeInProgress until it is actuated, then the container statuses' resources and
// the cgroups inside the containers have the new values, nothing restarted, the status has
// caught up with the new generation, and the events tell the story. A resize beyond the
// node's allocatable is refused by the API.
func TestNodeResizeInPlace(t *testing.T) {
	t.Parallel()
	c, _ := nodeCluster(t)
	ns := c.newNamespace(t)
	image := busyboxImage(t)
	containers := []resizeContainer{
		{name: "c1", before: `{"requests":{"cpu":"20m"}}`, after: `{"limits":{"cpu":"35m"},"requests":{"cpu":"25m"}}`, quota: "3500", shares: "25"},
		{name: "c2", before: `{"requests":{"memory":"35Mi"}}`, after: `{"limits":{"memory":"50Mi"},"requests":{"memory":"30Mi"}}`, quota: "-1", memory: "52428800"},
		{name: "c3", before: `{"requests":{"cpu":"20m","memory":"35Mi"}}`, after: `{"requests":{"cpu":"20m","memory":"30Mi"}}`, quota: "-1", shares: "20"},
		{name: "c4", before: `{"requests":{"cpu":"20m"}}`, after: `{"requests":{"cpu":"15m","memory":"35Mi"}}`, quota: "-1", shares: "15"},
		{name: "c5", before: `{"requests":{"memory":"35Mi"}}`, after: `{"requests":{"cpu":"20m","memory":"40Mi"}}`, quota: "-1", shares: "20"},
	}
	var specs []string
	for _, rc := range containers {
		specs = append(specs, fmt.Sprintf(`{"name":%q,"image":%q,"command":["sh","-c","trap 'exit 0' TERM; while true; do sleep 1; done"],"resources":%s}`,
			rc.name, image, rc.before))
	}
	c.mustIn(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"resize"},
"spec":{"restartPolicy":"OnFailure","terminationGracePeriodSeconds":0,"containers":[%s]}}`, strings.Join(specs, ",")),
		"apply", "-n", ns, "-f", "-")
	c.waitFor(t, ns, "pod/resize", `{.status.conditions[?(@.type=="Ready")].status}`, "to be ready", func(v string) bool { return v == "True" })
	if got := c.jsonpath(t, ns, "pod/resize", `{.status.containerStatuses[?(@.name=="c1")].resources}`); got != `{"requests":{"cpu":"20m"}}` {
		t.Errorf("c1's resources before the resize: %s", got)
	}
	if got := c.jsonpath(t, ns, "pod/resize", "{.metadata.generation} {.status.observedGeneration} {.status.qosClass}"); got != "1 1 Burstable" {
		t.Errorf("generation, observedGeneration, qosClass before: %s", got)
	}

	var patch []string
	for _, rc := range containers {
		patch = append(patch, fmt.Sprintf(`{"name":%q,"resources":%s}`, rc.name, rc.after))
	}
	c.must(t, "patch", "pod", "resize", "-n", ns, "--subresource", "resize", "--type", "strategic",
		"-p", fmt.Sprintf(`{"spec":{"containers":[%s]}}`, strings.Join(patch, ",")))
	if got := c.jsonpath(t, ns, "pod/resize", "{.metadata.generation}"); got != "2" {
		t.Errorf("generation after the resize: %s", got)
	}
	c.waitFor(t, ns, "pod/resize", "{.status.observedGeneration} {.status.conditions[*].type}", "to catch up with the resize",
		func(v string) bool {
			return strings.HasPrefix(v, "2 ") && !strings.Contains(v, "PodResizePending") && !strings.Contains(v, "PodResizeInProgress")
		})

	for _, rc := range containers {
		status := fmt.Sprintf(`{.status.containerStatuses[?(@.name==%q)]}`, rc.name)
		if got := c.jsonpath(t, ns, "pod/resize", strings.TrimSuffix(status, "}")+".resources}"); got != rc.after {
			t.Errorf("%s: status resources %s, want %s", rc.name, got, rc.after)
		}
		if got := c.jsonpath(t, ns, "pod/resize", strings.TrimSuffix(status, "}")+".restartCount}"); got != "0" {
			t.Errorf("%s restarted %s times", rc.name, got)
		}
		for file, want := range map[string]string{
			"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":         rc.quota,
			"/sys/fs/cgroup/cpu/cpu.shares":               rc.shares,
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": rc.memory,
		} {
			if want == "" {
				continue
			}
			if got := strings.TrimSpace(c.must(t, "exec", "resize", "-n", ns, "-c", rc.name, "--", "head", "-n", "1", file)); got != want {
				t.Errorf("%s: %s = %s, want %s", rc.name, file, got, want)
			}
		}
	}
	if got := c.jsonpath(t, ns, "pod/resize", `{.status.containerStatuses[?(@.name=="c4")].allocatedResources}`); got != `{"cpu":"15m","memory":"35Mi"}` {
		t.Errorf("c4's allocatedResources: %s", got)
	}
	c.waitEvent(t, ns, "resize", "ResizeStarted", `Pod resize started: {"containers":[{"name":"c1","resources":{"limits":{"cpu":"35m"},"requests":{"cpu":"25m"}}}`)
	c.waitEvent(t, ns, "resize", "ResizeCompleted", `"generation":2}`)

	// More cpu than the node has: refused before any node sees it.
	r := c.kubectl(t, "patch", "pod", "resize", "-n", ns, "--subresource", "resize", "--type", "strategic",
		"-p", `{"spec":{"containers":[{"name":"c1","resources":{"requests":{"cpu":"1000"},"limits":{"cpu":"1000"}}}]}}`)
	if r.code == 0 || !strings.Contains(r.stderr, `pods "resize" is forbidden: node didn't have enough allocatable resources: cpu, requested: 1000`) {
		t.Errorf("a resize beyond the node's allocatable:\n%s", r)
	}
}
