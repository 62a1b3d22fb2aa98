package kuberuntime

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/berth-cluster/berth/pkg/node/container"
)

func TestRunHTTPHook(t *testing.T) {
	var mu sync.Mutex
	var got []*http.Request
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r)
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	host, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)

	m, rec := testManager(t, nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"}}
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	ok := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "ready", Port: intstr.FromString("http"),
		HTTPHeaders: []v1.HTTPHeader{{Name: "X-Test", Value: "1"}}}}
	if msg, err := m.runHandler(context.Background(), container.ContainerID{}, pod, c, ok, []string{host}); err != nil {
		t.Fatalf("hook failed: %s", msg)
	}
	mu.Lock()
	if len(got) != 1 || got[0].URL.Path != "/ready" || got[0].Header.Get("X-Test") != "1" || !strings.HasPrefix(got[0].UserAgent(), "kube-lifecycle/") {
		t.Errorf("requests = %+v", got)
	}
	mu.Unlock()

	fail := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: host, Path: "/fail", Port: intstr.FromInt32(int32(port))}}
	msg, err := m.runHandler(context.Background(), container.ContainerID{}, pod, c, fail, nil)
	if err == nil || !strings.HasPrefix(msg, `HTTP lifecycle hook (/fail) for Container "app" in Pod "web_ns(u)" failed - error: `) {
		t.Errorf("failing hook: %q, %v", msg, err)
	}

	// An HTTPS hook answered in HTTP is retried in HTTP.
	tls := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Host: host, Path: "/", Port: intstr.FromInt32(int32(port)), Scheme: v1.URISchemeHTTPS}}
	if msg, err := m.runHandler(context.Background(), container.ContainerID{}, pod, c, tls, nil); err != nil {
		t.Errorf("https fallback: %s", msg)
	}
	if len(rec.Events) == 0 || !strings.HasPrefix(<-rec.Events, "Warning LifecycleHTTPFallback request to HTTPS lifecycle hook") {
		t.Errorf("no LifecycleHTTPFallback event")
	}

	// No pod IP, no host: fail.
	if _, err := m.runHandler(context.Background(), container.ContainerID{}, pod, c, ok, nil); err == nil {
		t.Errorf("a hook with no address succeeded")
	}
}

func TestSleepHook(t *testing.T) {
	m, _ := testManager(t, nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u"}}
	h := &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 30}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	msg, err := m.runHandler(ctx, container.ContainerID{}, pod, &v1.Container{Name: "app"}, h, nil)
	if err == nil || msg != `Sleep lifecycle hook (30) for Container "app" in Pod "web_ns(u)" failed - error: container terminated before sleep hook finished` {
		t.Errorf("sleep hook cut short: %q, %v", msg, err)
	}
}

func TestResolvePort(t *testing.T) {
	c := &v1.Container{Name: "app", Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	for _, tt := range []struct {
		port    intstr.IntOrString
		want    int
		wantErr bool
	}{
		{intstr.FromInt32(80), 80, false},
		{intstr.FromString("http"), 8080, false},
		{intstr.FromString("9090"), 9090, false},
		{intstr.FromString("grpc"), 0, true},
		{intstr.FromInt32(0), 0, true},
		{intstr.FromInt32(70000), 0, true},
	} {
		got, err := container.ResolvePort(tt.port, c)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("container.ResolvePort(%v) = %d, %v", tt.port, got, err)
		}
	}
}

func TestTerminationGracePeriod(t *testing.T) {
	thirty, five, one := int64(30), int64(5), int64(1)
	c := &v1.Container{
		LivenessProbe: &v1.Probe{TerminationGracePeriodSeconds: &one},
		StartupProbe:  &v1.Probe{},
	}
	pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: &thirty}}
	if g := terminationGracePeriod(pod, c, reasonUnknown); g != 30 {
		t.Errorf("pod grace = %d", g)
	}
	if g := terminationGracePeriod(pod, c, reasonLivenessProbe); g != 1 {
		t.Errorf("liveness probe grace = %d", g)
	}
	if g := terminationGracePeriod(pod, c, reasonStartupProbe); g != 30 {
		t.Errorf("startup probe without its own grace = %d", g)
	}
	pod.DeletionGracePeriodSeconds = &five
	if g := terminationGracePeriod(pod, c, reasonLivenessProbe); g != 5 {
		t.Errorf("deletion grace = %d", g)
	}
	if g := terminationGracePeriod(&v1.Pod{}, c, reasonUnknown); g != minimumGracePeriod {
		t.Errorf("no grace = %d", g)
	}
}

func TestTerminationOrdering(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "s1", RestartPolicy: &always}, {Name: "init"}, {Name: "s2", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "a"}, {Name: "b"}},
	}}
	o := newTerminationOrdering(pod, []string{"s1", "s2", "a", "b"})
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	stop := func(name string, delay time.Duration) {
		defer wg.Done()
		o.waitForTurn(name, 10)
		time.Sleep(delay)
		mu.Lock()
		order = append(order, name)
		mu.Unlock()
		o.containerTerminated(name)
	}
	wg.Add(4)
	go stop("s1", 0)
	go stop("s2", 0)
	go stop("a", 30*time.Millisecond)
	go stop("b", 10*time.Millisecond)
	wg.Wait()
	if strings.Join(order, ",") != "b,a,s2,s1" {
		t.Errorf("termination order = %v, want the app containers, then s2, then s1", order)
	}
}
