package podgen

import (
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"

	podregistry "github.com/berth-cluster/berth/pkg/apiserver/registry/core/pod"
)

// TestMostGeneratedPodsAreValid keeps the generator honest: most of its pods pass the
// API's defaulting and validation, and a seed gives the same pods every time.
func TestMostGeneratedPodsAreValid(t *testing.T) {
	g := New(1, Options{Script: true, FailPulls: true, HostPathDir: "/tmp/podgen"})
	const n = 2000
	valid := 0
	reasons := map[string]int{}
	for i := range n {
		pod := g.Pod(i, "default", "node-a")
		if again := New(1, Options{Script: true, FailPulls: true, HostPathDir: "/tmp/podgen"}).Pod(i, "default", "node-a"); !equality.Semantic.DeepEqual(pod, again) {
			t.Fatalf("pod %d differs between two generators of one seed", i)
		}
		podregistry.SetDefaults(pod)
		errs := podregistry.ValidatePod(pod)
		if len(errs) == 0 {
			valid++
			continue
		}
		for _, e := range errs {
			reasons[e.Field+": "+strings.SplitN(e.ErrorBody(), ":", 2)[0]]++
		}
	}
	type kv struct {
		k string
		v int
	}
	var top []kv
	for k, v := range reasons {
		top = append(top, kv{k, v})
	}
	sort.Slice(top, func(i, j int) bool { return top[i].v > top[j].v })
	for i := 0; i < len(top) && i < 15; i++ {
		t.Logf("%5d %s", top[i].v, top[i].k)
	}
	t.Logf("%d of %d generated pods are valid", valid, n)
	if valid < n*6/10 {
		t.Errorf("%d of %d generated pods are valid, want at least 60 %%", valid, n)
	}
}
