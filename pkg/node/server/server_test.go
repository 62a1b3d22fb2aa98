package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/utils/ptr"

	"github.com/berth-cluster/berth/pkg/cluster/pki"
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/util/panics"
)

// fakeRuntime serves logs: "log of <id>", or what follow says, and the pod status it is given.
type fakeRuntime struct {
	container.Runtime

	mu        sync.Mutex
	gotID     container.ContainerID
	gotOpts   *v1.PodLogOptions
	podStatus *container.PodStatus
	logErr    error
	// follow, when set, is called for follow requests instead of writing the usual line.
	follow func(ctx context.Context, out io.Writer) error
}

func (f *fakeRuntime) GetContainerLogs(ctx context.Context, pod *v1.Pod, id container.ContainerID, opts *v1.PodLogOptions, stdout, stderr io.Writer) error {
	f.mu.Lock()
	f.gotID, f.gotOpts = id, opts
	follow, logErr := f.follow, f.logErr
	f.mu.Unlock()
	if opts.Follow && follow != nil {
		return follow(ctx, stdout)
	}
	if logErr != nil {
		return logErr
	}
	fmt.Fprintf(stdout, "log of %s\n", id)
	return nil
}

func (f *fakeRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.podStatus == nil {
		return nil, errors.New("no such pod")
	}
	return f.podStatus, nil
}

// fakePods is the node agent's pods, with statuses that may be newer than the pods'.
type fakePods struct {
	pods     []*v1.Pod
	statuses map[types.UID]v1.PodStatus
	// panics makes GetPods panic that many more times.
	panics atomic.Int32
}

func (f *fakePods) GetPods() []*v1.Pod {
	if f.panics.Add(-1) >= 0 {
		var m map[string]int
		m["x"]++ // a nil map write, as an unchecked optional field makes one
	}
	return f.pods
}
func (f *fakePods) GetPodByName(namespace, name string) (*v1.Pod, bool) {
	for _, p := range f.pods {
		if p.Namespace == namespace && p.Name == name {
			return p, true
		}
	}
	return nil, false
}
func (f *fakePods) GetPodStatus(uid types.UID) (v1.PodStatus, bool) {
	s, ok := f.statuses[uid]
	return s, ok
}

// fakeAuthorizer answers as allow says, and remembers what it was asked.
type fakeAuthorizer struct {
	mu    sync.Mutex
	allow func(a authorizer.Attributes) (bool, error)
	asked []authorizer.Attributes
}

func (f *fakeAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked = append(f.asked, a)
	ok, err := f.allow(a)
	if err != nil || !ok {
		return authorizer.DecisionNoOpinion, "", err
	}
	return authorizer.DecisionAllow, "", nil
}

func (f *fakeAuthorizer) set(allow func(a authorizer.Attributes) (bool, error)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allow, f.asked = allow, nil
}

func (f *fakeAuthorizer) questions() []authorizer.Attributes {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked)
}

// allowKubeletClient allows the API server's kubelet client everything, as the API server does.
func allowKubeletClient(a authorizer.Attributes) (bool, error) {
	return a.GetUser().GetName() == kubeletClientUser, nil
}

const kubeletClientUser = "kube-apiserver-kubelet-client"

// testServer is a running node API with clients that present various certificates: trusted
// is the API server's kubelet client, jane a user of the cluster CA in group developers.
type testServer struct {
	url                                 string
	runtime                             *fakeRuntime
	authz                               *fakeAuthorizer
	trusted, jane, foreign, serving, no *http.Client
	logsDir                             string
}

func startServer(t *testing.T, pods PodSource) *testServer {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.EnsureCA(dir, "test-ca")
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := pki.EnsureServing(dir, "node-a", ca, []string{"node-a"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	otherCA, err := pki.EnsureCA(filepath.Join(dir, "other"), "other-ca")
	if err != nil {
		t.Fatal(err)
	}
	logsDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(filepath.Join(logsDir, "pods"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logsDir, "syslog"), []byte("system log\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	roots := x509.NewCertPool()
	roots.AddCert(ca.Cert)
	client := func(signer *pki.CA, serving bool, user string, groups ...string) *http.Client {
		tlsConfig := &tls.Config{RootCAs: roots}
		if signer != nil {
			var certPEM, keyPEM []byte
			var err error
			if serving {
				certPEM, keyPEM, err = signer.IssueServing("not-a-client", []string{"x"}, nil, time.Hour)
			} else {
				certPEM, keyPEM, err = signer.IssueClient(user, groups, time.Hour)
			}
			if err != nil {
				t.Fatal(err)
			}
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				t.Fatal(err)
			}
			tlsConfig.Certificates = []tls.Certificate{pair}
		}
		tr := &http.Transport{TLSClientConfig: tlsConfig}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rt := &fakeRuntime{}
	authz := &fakeAuthorizer{allow: allowKubeletClient}
	cfg := ServerConfig{
		CertFile: certFile, KeyFile: keyFile, ClientCAFile: filepath.Join(dir, "ca.crt"), LogsDir: logsDir,
		NodeName: "node-a", Authorizer: authz,
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, cfg, pods, rt) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("the server did not stop")
		}
	})
	return &testServer{
		url: "https://" + ln.Addr().String(), runtime: rt, authz: authz, logsDir: logsDir,
		trusted: client(ca, false, kubeletClientUser), jane: client(ca, false, "jane", "developers"),
		foreign: client(otherCA, false, kubeletClientUser), serving: client(ca, true, ""), no: client(nil, false, ""),
	}
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func testPod(name string, status v1.PodStatus) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "c"}, {Name: "d"}},
		},
		Status: status,
	}
}

func running(name, id string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, ContainerID: id, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func TestAuthentication(t *testing.T) {
	s := startServer(t, &fakePods{pods: []*v1.Pod{testPod("p", v1.PodStatus{})}})
	for _, tt := range []struct {
		name   string
		client *http.Client
		path   string
		want   int
	}{
		{"healthz needs no certificate", s.no, "/healthz", 200},
		{"healthz checks", s.no, "/healthz/ping", 200},
		{"no certificate", s.no, "/pods", 401},
		{"another CA's certificate", s.foreign, "/pods", 401},
		{"a serving certificate", s.serving, "/containerLogs/ns/p/c", 401},
		{"logs without a certificate", s.no, "/logs/", 401},
		{"the cluster CA's client certificate", s.trusted, "/pods", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, tt.client, s.url+tt.path)
			if code != tt.want {
				t.Fatalf("%s: %d %s, want %d", tt.path, code, body, tt.want)
			}
			if code != 401 {
				return
			}
			var status metav1.Status
			if err := json.Unmarshal([]byte(body), &status); err != nil {
				t.Fatalf("401 body %q is not a Status: %v", body, err)
			}
			if status.Kind != "Status" || status.Code != 401 || status.Reason != metav1.StatusReasonUnauthorized || status.Message != "Unauthorized" {
				t.Errorf("status %+v", status)
			}
		})
	}
	if code, body := get(t, s.no, s.url+"/healthz"); body != "ok" {
		t.Errorf("healthz: %d %q", code, body)
	}
	resp, err := s.trusted.Post(s.url+"/pods", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /pods: %d, want 405", resp.StatusCode)
	}
}

func TestPods(t *testing.T) {
	s := startServer(t, &fakePods{pods: []*v1.Pod{testPod("p", v1.PodStatus{}), testPod("q", v1.PodStatus{})}})
	code, body := get(t, s.trusted, s.url+"/pods")
	if code != 200 {
		t.Fatalf("%d %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 2 || list.Items[1].Name != "q" {
		t.Errorf("pod list %+v", list)
	}
}

func TestContainerLogs(t *testing.T) {
	since := metav1.NewTime(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))
	restarted := v1.ContainerStatus{
		Name: "c", ContainerID: "containerd://new", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://old"}},
	}
	pods := &fakePods{
		pods: []*v1.Pod{
			testPod("running", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running("c", "containerd://abc")}}),
			testPod("restarted", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{restarted}}),
			testPod("pulling", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull"}}}}}),
			testPod("creating", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}}),
			testPod("crashed", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c",
				State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://dead"}}}}}),
			testPod("done", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{Name: "init",
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://init1"}}}}}),
			testPod("fresh", v1.PodStatus{}),
			testPod("tracked", v1.PodStatus{}),
		},
		statuses: map[types.UID]v1.PodStatus{
			"tracked-uid": {ContainerStatuses: []v1.ContainerStatus{running("c", "containerd://tracked")}},
		},
	}
	s := startServer(t, pods)
	s.runtime.podStatus = &container.PodStatus{ContainerStatuses: []*container.Status{
		{Name: "d", ID: container.ContainerID{Type: "containerd", ID: "d2"}},
		{Name: "c", ID: container.ContainerID{Type: "containerd", ID: "rt2"}},
		{Name: "c", ID: container.ContainerID{Type: "containerd", ID: "rt1"}},
	}}
	tests := []struct {
		name     string
		path     string
		wantCode int
		wantBody string
		wantOpts *v1.PodLogOptions
	}{
		{name: "a running container", path: "/containerLogs/ns/running/c", wantCode: 200, wantBody: "log of containerd://abc\n",
			wantOpts: &v1.PodLogOptions{}},
		{name: "every option", path: "/containerLogs/ns/running/c?follow=true&timestamps=1&tailLines=5&limitBytes=100&sinceTime=2026-03-04T05:06:07Z",
			wantCode: 200, wantBody: "log of containerd://abc\n",
			wantOpts: &v1.PodLogOptions{Follow: true, Timestamps: true, TailLines: ptr.To[int64](5), LimitBytes: ptr.To[int64](100), SinceTime: &since}},
		{name: "the old tail parameter", path: "/containerLogs/ns/running/c?tail=7&sinceSeconds=30", wantCode: 200,
			wantBody: "log of containerd://abc\n", wantOpts: &v1.PodLogOptions{TailLines: ptr.To[int64](7), SinceSeconds: ptr.To[int64](30)}},
		{name: "tail=all is no limit", path: "/containerLogs/ns/running/c?tail=all&tailLines=3", wantCode: 200,
			wantBody: "log of containerd://abc\n", wantOpts: &v1.PodLogOptions{}},
		{name: "the current instance of a restarted container", path: "/containerLogs/ns/restarted/c", wantCode: 200, wantBody: "log of containerd://new\n"},
		{name: "the previous instance", path: "/containerLogs/ns/restarted/c?previous=true", wantCode: 200, wantBody: "log of containerd://old\n"},
		{name: "no previous instance", path: "/containerLogs/ns/running/c?previous=true", wantCode: 400,
			wantBody: `previous terminated container "c" in pod "running" not found`},
		{name: "a crash-looping container shows its last run", path: "/containerLogs/ns/crashed/c", wantCode: 200, wantBody: "log of containerd://dead\n"},
		{name: "a finished init container", path: "/containerLogs/ns/done/init", wantCode: 200, wantBody: "log of containerd://init1\n"},
		{name: "an image that cannot be pulled", path: "/containerLogs/ns/pulling/c", wantCode: 400,
			wantBody: `container "c" in pod "pulling" is waiting to start: image can't be pulled`},
		{name: "a container being created", path: "/containerLogs/ns/creating/c", wantCode: 400,
			wantBody: `container "c" in pod "creating" is waiting to start: ContainerCreating`},
		{name: "not in the status yet: the runtime's newest", path: "/containerLogs/ns/fresh/c", wantCode: 200, wantBody: "log of containerd://rt2\n"},
		{name: "not in the status yet: the runtime's previous", path: "/containerLogs/ns/fresh/c?previous=1", wantCode: 200, wantBody: "log of containerd://rt1\n"},
		{name: "not in the status nor the runtime", path: "/containerLogs/ns/fresh/init", wantCode: 400,
			wantBody: `container "init" in pod "fresh" is not available`},
		{name: "the status source is newer than the pod", path: "/containerLogs/ns/tracked/c", wantCode: 200, wantBody: "log of containerd://tracked\n"},
		{name: "an unknown pod", path: "/containerLogs/ns/ghost/c", wantCode: 404, wantBody: `pod "ghost" does not exist`},
		{name: "an unknown container", path: "/containerLogs/ns/running/x", wantCode: 404, wantBody: `container "x" not found in pod "running"`},
		{name: "no container", path: "/containerLogs/ns/running/", wantCode: 400, wantBody: `{"message":"Missing container name."}`},
		{name: "no pod", path: "/containerLogs/ns", wantCode: 400, wantBody: `{"message":"Missing podID."}`},
		{name: "a bad number", path: "/containerLogs/ns/running/c?tailLines=many", wantCode: 400, wantBody: `{"message":"Unable to decode query."}`},
		{name: "a bad time", path: "/containerLogs/ns/running/c?sinceTime=today", wantCode: 400, wantBody: `{"message":"Unable to decode query."}`},
		{name: "negative tail", path: "/containerLogs/ns/running/c?tailLines=-1", wantCode: 422, wantBody: "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{name: "zero limit", path: "/containerLogs/ns/running/c?limitBytes=0", wantCode: 422, wantBody: "limitBytes: Invalid value: 0: must be greater than 0"},
		{name: "zero since", path: "/containerLogs/ns/running/c?sinceSeconds=0", wantCode: 422, wantBody: "sinceSeconds: Invalid value: 0: must be greater than 0"},
		{name: "both since", path: "/containerLogs/ns/running/c?sinceSeconds=5&sinceTime=2026-03-04T05:06:07Z", wantCode: 422,
			wantBody: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{name: "one stream", path: "/containerLogs/ns/running/c?stream=Stdout", wantCode: 400,
			wantBody: `unable to return the given log stream: "Stdout". Please enable PodLogsQuerySplitStreams feature gate in kubelet`},
		{name: "both streams", path: "/containerLogs/ns/running/c?stream=All", wantCode: 200, wantBody: "log of containerd://abc\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := get(t, s.trusted, s.url+tt.path)
			if code != tt.wantCode || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("%d %q, want %d and %q", code, body, tt.wantCode, tt.wantBody)
			}
			if tt.wantOpts != nil {
				s.runtime.mu.Lock()
				got := s.runtime.gotOpts
				s.runtime.mu.Unlock()
				if diff := cmp.Diff(tt.wantOpts, got); diff != "" {
					t.Errorf("options (-want +got):\n%s", diff)
				}
			}
		})
	}

	// A runtime failure after the status line was sent ends up in the body.
	s.runtime.mu.Lock()
	s.runtime.logErr = errors.New("log file is gone")
	s.runtime.mu.Unlock()
	if code, body := get(t, s.trusted, s.url+"/containerLogs/ns/running/c"); code != 200 || body != "log file is gone" {
		t.Errorf("runtime failure: %d %q", code, body)
	}
}

func TestContainerLogsFollow(t *testing.T) {
	s := startServer(t, &fakePods{pods: []*v1.Pod{
		testPod("p", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running("c", "containerd://abc")}}),
	}})
	second := make(chan struct{})
	stopped := make(chan error, 1)
	s.runtime.follow = func(ctx context.Context, out io.Writer) error {
		fmt.Fprintln(out, "first")
		select {
		case <-second:
		case <-ctx.Done():
			stopped <- ctx.Err()
			return ctx.Err()
		}
		fmt.Fprintln(out, "second")
		<-ctx.Done() // a followed log ends when the client goes
		stopped <- ctx.Err()
		return nil
	}
	resp, err := s.trusted.Get(s.url + "/containerLogs/ns/p/c?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	lines := bufio.NewReader(resp.Body)
	// The first line arrives while the runtime still holds the stream open: it was flushed.
	if line, err := lines.ReadString('\n'); err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(second)
	if line, err := lines.ReadString('\n'); err != nil || line != "second\n" {
		t.Fatalf("second line %q, %v", line, err)
	}
	resp.Body.Close()
	select {
	case err := <-stopped:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the runtime's stream ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closing the response did not end the runtime's stream")
	}
}

func TestLogsDir(t *testing.T) {
	s := startServer(t, &fakePods{})
	code, body := get(t, s.trusted, s.url+"/logs/")
	if code != 200 || !strings.Contains(body, `<a href="syslog">syslog</a>`) || !strings.Contains(body, `<a href="pods/">pods/</a>`) {
		t.Errorf("listing: %d %q", code, body)
	}
	if code, body := get(t, s.trusted, s.url+"/logs/syslog"); code != 200 || body != "system log\n" {
		t.Errorf("file: %d %q", code, body)
	}
	if code, _ := get(t, s.trusted, s.url+"/logs/missing"); code != 404 {
		t.Errorf("missing file: %d", code)
	}
	if code, _ := get(t, s.trusted, s.url+"/logs/../../etc/passwd"); code == 200 {
		t.Error("escaped the logs dir")
	}
}

func TestServeFailsWithoutCertificates(t *testing.T) {
	err := Serve(context.Background(), ServerConfig{Address: "127.0.0.1:0", CertFile: "/nonexistent.crt", KeyFile: "/nonexistent.key"}, &fakePods{}, &fakeRuntime{})
	if err == nil || !strings.Contains(err.Error(), "serving certificate") {
		t.Errorf("Serve: %v", err)
	}
}

// A handler that panics answers 500 and counts it; the server serves the next request.
func TestAHandlerPanicIsContained(t *testing.T) {
	pods := &fakePods{pods: []*v1.Pod{testPod("p", v1.PodStatus{})}}
	pods.panics.Store(1)
	s := startServer(t, pods)
	before := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component))
	code, body := get(t, s.trusted, s.url+"/pods")
	if code != http.StatusInternalServerError || !strings.Contains(body, "Internal Error: internal error in nodeapi: recovered from panic: assignment to entry in nil map") {
		t.Errorf("a panicking /pods answered %d %q", code, body)
	}
	if got := testutil.ToFloat64(panics.Recovered.WithLabelValues(Component)); got != before+1 {
		t.Errorf("berth_recovered_panics_total{component=nodeapi} = %v, want %v", got, before+1)
	}
	if code, body := get(t, s.trusted, s.url+"/pods"); code != http.StatusOK {
		t.Errorf("the next /pods answered %d %q", code, body)
	}
}
