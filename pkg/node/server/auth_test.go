package server

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestRequestAttributes: each request is a verb on a subresource of nodes/node-a, as the
// kubelet maps it, with the fine-grained subresource tried before nodes/proxy.
func TestRequestAttributes(t *testing.T) {
	jane := &user.DefaultInfo{Name: "jane", Groups: []string{"developers"}}
	for _, tt := range []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/logs/", "get", []string{"log"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/allocatedPods", "get", []string{"pods", "proxy"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"POST", "/checkpoint/ns/p/c", "create", []string{"checkpoint"}},
		{"GET", "/containerLogs/ns/p/c", "get", []string{"proxy"}},
		{"POST", "/exec/ns/p/c", "create", []string{"proxy"}},
		{"GET", "/exec/ns/p/c", "get", []string{"proxy"}},
		{"POST", "/attach/ns/p/c", "create", []string{"proxy"}},
		{"POST", "/portForward/ns/p", "create", []string{"proxy"}},
		{"POST", "/run/ns/p/c", "create", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		{"HEAD", "/pods", "", []string{"pods", "proxy"}}, // the kubelet maps no verb to HEAD
		{"GET", "/statsfoo", "get", []string{"proxy"}},
		{"GET", "/podsfoo", "get", []string{"proxy"}},
		{"GET", "/", "get", []string{"proxy"}},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			attrs := requestAttributes("node-a", jane, httptest.NewRequest(tt.method, tt.path, nil))
			var subresources []string
			for _, a := range attrs {
				subresources = append(subresources, a.GetSubresource())
				if a.GetVerb() != tt.verb || a.GetResource() != "nodes" || a.GetName() != "node-a" || a.GetAPIGroup() != "" ||
					a.GetAPIVersion() != "v1" || a.GetNamespace() != "" || !a.IsResourceRequest() || a.GetUser() != jane || a.GetPath() != tt.path {
					t.Errorf("attributes %+v, want verb %q on nodes/node-a for jane", a, tt.verb)
				}
			}
			if !slices.Equal(subresources, tt.subresources) {
				t.Errorf("subresources %v, want %v", subresources, tt.subresources)
			}
		})
	}
}

// TestAuthorization: an authenticated user gets 403 in the kubelet's words unless the
// authorizer allows the request's subresource of the node; /pods falls back from nodes/pods to
// nodes/proxy; authorization comes before routing; an authorizer's error is a 500.
func TestAuthorization(t *testing.T) {
	pod := testPod("p", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running("c", "containerd://abc")}})
	s := startServer(t, &fakePods{pods: []*v1.Pod{pod}})
	for _, tt := range []struct {
		name   string
		client *http.Client
		path   string
		want   int
		body   string
	}{
		{"the kubelet client reads logs", s.trusted, "/containerLogs/ns/p/c", 200, "log of containerd://abc\n"},
		{"the kubelet client lists pods", s.trusted, "/pods", 200, ""},
		{"the kubelet client meets a missing path", s.trusted, "/run/ns/p/c", 404, ""},
		{"jane reads logs", s.jane, "/containerLogs/ns/p/c", 403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[proxy])\n"},
		{"jane execs", s.jane, "/exec/ns/p/c?command=ls&output=1", 403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[proxy])\n"},
		{"jane runs", s.jane, "/run/ns/p/c", 403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[proxy])\n"},
		{"jane lists pods", s.jane, "/pods", 403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{"jane reads the node's logs", s.jane, "/logs/syslog", 403, "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[log])\n"},
		{"jane reads health", s.jane, "/healthz", 200, "ok"},
		{"no certificate", s.no, "/run/ns/p/c", 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.client, s.url+tt.path)
			if code != tt.want || (tt.body != "" && body != tt.body) {
				t.Errorf("GET %s: %d %q, want %d %q", tt.path, code, body, tt.want, tt.body)
			}
		})
	}

	// What the authorizer was asked about jane: her groups, as her certificate says, and the
	// fine-grained subresource before the coarse one.
	s.authz.set(allowKubeletClient)
	get(t, s.jane, s.url+"/pods")
	var asked []string
	for _, a := range s.authz.questions() {
		asked = append(asked, a.GetUser().GetName()+" "+strings.Join(a.GetUser().GetGroups(), ",")+" "+a.GetVerb()+" "+a.GetResource()+"/"+a.GetName()+"/"+a.GetSubresource())
	}
	want := []string{
		"jane developers,system:authenticated get nodes/node-a/pods",
		"jane developers,system:authenticated get nodes/node-a/proxy",
	}
	if !slices.Equal(asked, want) {
		t.Errorf("the authorizer was asked\n%s\nwant\n%s", strings.Join(asked, "\n"), strings.Join(want, "\n"))
	}

	// Allowed nodes/pods only: jane lists pods but still may not read logs.
	s.authz.set(func(a authorizer.Attributes) (bool, error) {
		return a.GetUser().GetName() == "jane" && a.GetSubresource() == "pods", nil
	})
	if code, body := get(t, s.jane, s.url+"/pods"); code != 200 {
		t.Errorf("jane with nodes/pods listing pods: %d %s", code, body)
	}
	if code, body := get(t, s.jane, s.url+"/containerLogs/ns/p/c"); code != 403 {
		t.Errorf("jane with nodes/pods reading logs: %d %s", code, body)
	}

	// Allowed nodes/stats and nothing else: the summary is not served by this test server, so
	// the allowed request meets a 404 where a denied one meets a 403.
	s.authz.set(func(a authorizer.Attributes) (bool, error) { return a.GetSubresource() == "stats", nil })
	if code, body := get(t, s.jane, s.url+"/stats/summary"); code != 404 {
		t.Errorf("jane with nodes/stats: %d %s, want 404", code, body)
	}
	s.authz.set(allowKubeletClient)
	if code, body := get(t, s.jane, s.url+"/stats/summary"); code != 403 || body != "Forbidden (user=jane, verb=get, resource=nodes, subresource(s)=[stats])\n" {
		t.Errorf("jane without nodes/stats: %d %q", code, body)
	}

	s.authz.set(func(authorizer.Attributes) (bool, error) { return false, errors.New("the API server is down") })
	if code, body := get(t, s.trusted, s.url+"/pods"); code != 500 ||
		body != "Authorization error (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource=pods)" {
		t.Errorf("authorizer failing: %d %q", code, body)
	}
}

func TestServeFailsWithoutAuthorizer(t *testing.T) {
	_, err := newHandler(ServerConfig{ClientCAFile: "/nonexistent"}, &fakePods{}, &fakeRuntime{})
	if err == nil || !strings.Contains(err.Error(), "no authorizer") {
		t.Errorf("newHandler: %v", err)
	}
}
