package scheduler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

// TestExtender: an HTTP extender speaking kube-scheduler's protocol filters out a node and
// prioritizes another; pods go where it says.
func TestExtender(t *testing.T) {
	var filters, priorities atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var args extenderv1.ExtenderArgs
		if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/filter":
			filters.Add(1)
			res := extenderv1.ExtenderFilterResult{Nodes: &v1.NodeList{}, FailedNodes: map[string]string{}}
			for _, n := range args.Nodes.Items {
				if n.Name == "vetoed" {
					res.FailedNodes[n.Name] = "the extender says no"
					continue
				}
				res.Nodes.Items = append(res.Nodes.Items, n)
			}
			_ = json.NewEncoder(w).Encode(res)
		case "/prioritize":
			priorities.Add(1)
			var out extenderv1.HostPriorityList
			for _, n := range args.Nodes.Items {
				score := int64(0)
				if n.Name == "favourite" {
					score = 10
				}
				out = append(out, extenderv1.HostPriority{Host: n.Name, Score: score})
			}
			_ = json.NewEncoder(w).Encode(out)
		}
	}))
	defer srv.Close()
	kc := &configv1.KubeSchedulerConfiguration{Extenders: []configv1.Extender{{
		URLPrefix: srv.URL, FilterVerb: "filter", PrioritizeVerb: "prioritize", Weight: 10,
	}}}
	c := startWithScheduler(t, kc)
	ctx := testContext(t)
	ns := newNamespace(t, ctx, c.Client)
	createNodes(t, ctx, c.Client, node("vetoed", "8").Obj(), node("plain", "8").Obj(), node("favourite", "8").Obj())
	// A pod pinned to the node created last is bound only once the scheduler has seen every
	// node; judging the extender before that races the scheduler's informer.
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("warm-up").NodeSelector(map[string]string{v1.LabelHostname: "favourite"}).Obj())
	if got := waitForNode(t, ctx, c.Client, ns, "warm-up", 10*time.Second); got != "favourite" {
		t.Fatalf("pod warm-up on %q, want favourite", got)
	}
	for _, name := range []string{"a", "b", "c"} {
		createPod(t, ctx, c.Client, ns, st.MakePod().Name(name).Obj())
		if got := waitForNode(t, ctx, c.Client, ns, name, 10*time.Second); got != "favourite" {
			t.Errorf("pod %s on %s, want favourite (the extender's choice)", name, got)
		}
	}
	createPod(t, ctx, c.Client, ns, st.MakePod().Name("only-vetoed").NodeSelector(map[string]string{v1.LabelHostname: "vetoed"}).Obj())
	if msg := waitUnschedulable(t, ctx, c.Client, ns, "only-vetoed"); msg == "" {
		t.Error("no message")
	}
	if filters.Load() == 0 || priorities.Load() == 0 {
		t.Errorf("extender called %d times to filter and %d to prioritize", filters.Load(), priorities.Load())
	}
}
