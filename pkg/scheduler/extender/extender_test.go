package extender

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	v1 "k8s.io/api/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/berth-cluster/berth/pkg/scheduler/framework"
	st "github.com/berth-cluster/berth/pkg/scheduler/testing"
)

func nodeInfos(names ...string) []*framework.NodeInfo {
	var out []*framework.NodeInfo
	for _, n := range names {
		ni := framework.NewNodeInfo()
		ni.SetNode(st.MakeNode().Name(n).Obj())
		out = append(out, ni)
	}
	return out
}

// fakeExtender keeps nodes whose name is in keep, scores by name length, records bindings.
func fakeExtender(t *testing.T, keep map[string]bool, bound *extenderv1.ExtenderBindingArgs) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/filter":
			var args extenderv1.ExtenderArgs
			if err := json.NewDecoder(r.Body).Decode(&args); err != nil {
				t.Error(err)
			}
			res := extenderv1.ExtenderFilterResult{FailedNodes: map[string]string{}}
			var names []string
			if args.NodeNames != nil {
				names = *args.NodeNames
			} else {
				for _, n := range args.Nodes.Items {
					names = append(names, n.Name)
				}
			}
			var kept []string
			res.Nodes = &v1.NodeList{}
			for _, n := range names {
				if keep[n] {
					kept = append(kept, n)
					res.Nodes.Items = append(res.Nodes.Items, v1.Node{})
					res.Nodes.Items[len(res.Nodes.Items)-1].Name = n
				} else {
					res.FailedNodes[n] = "extender says no"
				}
			}
			res.NodeNames = &kept
			_ = json.NewEncoder(w).Encode(res)
		case "/prioritize":
			var args extenderv1.ExtenderArgs
			_ = json.NewDecoder(r.Body).Decode(&args)
			var out extenderv1.HostPriorityList
			for _, n := range args.Nodes.Items {
				out = append(out, extenderv1.HostPriority{Host: n.Name, Score: int64(len(n.Name))})
			}
			_ = json.NewEncoder(w).Encode(out)
		case "/bind":
			_ = json.NewDecoder(r.Body).Decode(bound)
			_ = json.NewEncoder(w).Encode(extenderv1.ExtenderBindingResult{})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
}

func TestHTTPExtender(t *testing.T) {
	var bound extenderv1.ExtenderBindingArgs
	srv := fakeExtender(t, map[string]bool{"a": true, "ccc": true}, &bound)
	defer srv.Close()
	ctx := context.Background()
	pod := st.MakePod().Name("p").Obj()

	for _, cacheCapable := range []bool{false, true} {
		e, err := New(configv1.Extender{URLPrefix: srv.URL, FilterVerb: "filter", PrioritizeVerb: "prioritize", BindVerb: "bind", Weight: 2, NodeCacheCapable: cacheCapable})
		if err != nil {
			t.Fatal(err)
		}
		fit, failed, _, err := e.Filter(ctx, pod, nodeInfos("a", "bb", "ccc"))
		if err != nil {
			t.Fatal(err)
		}
		if len(fit) != 2 || fit[0].Node().Name != "a" || fit[1].Node().Name != "ccc" || failed["bb"] != "extender says no" {
			t.Errorf("cacheCapable=%v: fit %d failed %v", cacheCapable, len(fit), failed)
		}
	}
	e, _ := New(configv1.Extender{URLPrefix: srv.URL, PrioritizeVerb: "prioritize", BindVerb: "bind", Weight: 2})
	scores, err := e.Prioritize(ctx, pod, nodeInfos("a", "ccc"))
	if err != nil || len(scores) != 2 || scores[1].Score != 3 {
		t.Errorf("prioritize: %v %v", scores, err)
	}
	if err := e.Bind(ctx, pod, "ccc"); err != nil || bound.Node != "ccc" || bound.PodName != "p" {
		t.Errorf("bind: %v %+v", err, bound)
	}
	bad, _ := New(configv1.Extender{URLPrefix: srv.URL + "/missing", FilterVerb: "filter"})
	if _, _, _, err := bad.Filter(ctx, pod, nodeInfos("a")); err == nil {
		t.Error("a 404 from the extender must be an error")
	}
}

func TestIsInterested(t *testing.T) {
	e, _ := New(configv1.Extender{URLPrefix: "http://x", ManagedResources: []configv1.ExtenderManagedResource{{Name: "example.com/gpu"}}})
	plain := st.MakePod().Name("p").Obj()
	gpu := st.MakePod().Name("g").Req(map[v1.ResourceName]string{"example.com/gpu": "1"}).Obj()
	if e.IsInterested(plain) || !e.IsInterested(gpu) {
		t.Errorf("interested in plain %v, gpu %v; want false, true", e.IsInterested(plain), e.IsInterested(gpu))
	}
	all, _ := New(configv1.Extender{URLPrefix: "http://x"})
	if !all.IsInterested(plain) {
		t.Error("an extender without managed resources wants every pod")
	}
}
