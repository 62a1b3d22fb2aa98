package config

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/node/types"
)

// manifestServer serves whatever body and status the test sets.
type manifestServer struct {
	mu     sync.Mutex
	status int
	body   string
	tokens []string // the Authorization headers seen
}

func (m *manifestServer) set(status int, body string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.status, m.body = status, body
}

func (m *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens = append(m.tokens, r.Header.Get("Authorization"))
	w.WriteHeader(m.status)
	w.Write([]byte(m.body))
}

func TestSourceURL(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &manifestServer{status: http.StatusOK, body: manifest("web", "nginx:1")}
	srv := httptest.NewServer(m)
	defer srv.Close()

	updates := make(chan interface{})
	header := http.Header{"Authorization": []string{"Bearer t0ken"}}
	NewSourceURL(ctx, srv.URL+"/pods", header, "node-1", 20*time.Millisecond, updates)

	u := waitForSet(t, updates, "web-node-1=nginx:1")
	if u.Source != types.HTTPSource {
		t.Errorf("source %q", u.Source)
	}
	pod := u.Pods[0]
	if len(pod.Spec.Tolerations) != 0 || pod.Spec.NodeName != "node-1" || pod.Annotations[types.ConfigHashAnnotationKey] != string(pod.UID) {
		t.Errorf("not a URL static pod of node-1: %+v", pod)
	}

	// An unchanged body sends nothing more.
	select {
	case obj := <-updates:
		t.Fatalf("an unchanged body sent %v", obj)
	case <-time.After(100 * time.Millisecond):
	}

	// A PodList.
	m.set(http.StatusOK, `{"apiVersion":"v1","kind":"PodList","items":[
		{"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"busybox"}]}},
		{"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}]}`)
	waitForSet(t, updates, "a-node-1=busybox,b-node-1=busybox")

	// Errors and garbage change nothing.
	m.set(http.StatusInternalServerError, manifest("web", "nginx:9"))
	m.set(http.StatusOK, "this is not a pod")
	select {
	case obj := <-updates:
		t.Fatalf("a bad body sent %v", obj)
	case <-time.After(100 * time.Millisecond):
	}

	// An empty body is no pods; the same manifest again brings the pod back.
	m.set(http.StatusOK, "")
	waitForSet(t, updates, "")
	m.set(http.StatusOK, manifest("web", "nginx:1"))
	waitForSet(t, updates, "web-node-1=nginx:1")

	m.mu.Lock()
	defer m.mu.Unlock()
	for _, tok := range m.tokens {
		if tok != "Bearer t0ken" {
			t.Fatalf("request without the header: %q", tok)
		}
	}
}
