package apiserver

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

// TestKubeletAPIAdmin: the API server's kubelet client may read nodes and use every node
// subresource the node API authorizes, and nothing else; nobody else gets anything from it.
func TestKubeletAPIAdmin(t *testing.T) {
	authz := kubeletAPIAdmin("kube-apiserver-kubelet-client")
	client := &user.DefaultInfo{Name: "kube-apiserver-kubelet-client", Groups: []string{user.AllAuthenticated}}
	jane := &user.DefaultInfo{Name: "jane", Groups: []string{"developers", user.AllAuthenticated}}
	node := func(u user.Info, verb, sub string) authorizer.AttributesRecord {
		return authorizer.AttributesRecord{User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: sub, Name: "n", ResourceRequest: true}
	}
	for _, tt := range []struct {
		name  string
		attrs authorizer.AttributesRecord
		allow bool
	}{
		{"exec through nodes/proxy", node(client, "create", "proxy"), true},
		{"stats", node(client, "get", "stats"), true},
		{"metrics", node(client, "get", "metrics"), true},
		{"the node's logs", node(client, "get", "log"), true},
		{"pods", node(client, "get", "pods"), true},
		{"reading nodes", node(client, "list", ""), true},
		{"the legacy proxy verb", node(client, "proxy", ""), true},
		{"changing nodes", node(client, "update", ""), false},
		{"node status", node(client, "update", "status"), false},
		{"pods of the API", authorizer.AttributesRecord{User: client, Verb: "get", Resource: "pods", ResourceRequest: true}, false},
		{"nodes of another group", authorizer.AttributesRecord{User: client, Verb: "get", APIGroup: "example.com", Resource: "nodes", Subresource: "proxy", ResourceRequest: true}, false},
		{"a path", authorizer.AttributesRecord{User: client, Verb: "get", Path: "/metrics"}, false},
		{"jane", node(jane, "create", "proxy"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			decision, _, err := authz.Authorize(context.Background(), tt.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if got := decision == authorizer.DecisionAllow; got != tt.allow {
				t.Errorf("decision %v, want allowed=%v", decision, tt.allow)
			}
		})
	}
}
