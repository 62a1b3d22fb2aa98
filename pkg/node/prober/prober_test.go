package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/record"

	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/prober/results"
)

// redirectServer answers /redirect?loc=URL with a 302 to URL (as agnhost's liveness server
// does), /ok with 200 and anything else with 404.
func redirectServer(t *testing.T) (host string, port int) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/redirect":
			http.Redirect(w, r, r.URL.Query().Get("loc"), http.StatusFound)
		case "/ok":
			_, _ = w.Write([]byte("ok"))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	h, p, err := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	port, _ = strconv.Atoi(p)
	return h, port
}

func httpLiveness(host string, port int, path string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Host: host, Port: intstr.FromInt32(int32(port)), Path: path}}}
}

func events(r *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-r.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func TestHTTPProbeRedirects(t *testing.T) {
	host, port := redirectServer(t)
	for _, tc := range []struct {
		name   string
		path   string
		want   results.Result
		events []string
	}{{
		name: "a redirect to another host is not followed: a success with a ProbeWarning",
		path: "/redirect?loc=" + "http%3A%2F%2F0.0.0.0%2F",
		want: results.Success,
		events: []string{"Warning ProbeWarning Liveness probe warning: Probe terminated redirects, Response body: " +
			"<a href=\"http://0.0.0.0/\">Found</a>.\n\n"},
	}, {
		name: "a redirect to the same host is followed",
		path: "/redirect?loc=%2Fok",
		want: results.Success,
	}, {
		name:   "a redirect on the same host to a missing page fails",
		path:   "/redirect?loc=%2Fmissing",
		want:   results.Failure,
		events: []string{"Warning Unhealthy Liveness probe failed: HTTP probe failed with statuscode: 404"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			recorder := record.NewFakeRecorder(10)
			pb := newProber(&fakeRunner{}, recorder)
			c := v1.Container{Name: "c", LivenessProbe: httpLiveness(host, port, tc.path)}
			got := pb.probe(context.Background(), liveness, probePod(c), runningStatus("a", true), &c, container.ParseContainerID("containerd://a"))
			if got != tc.want {
				t.Errorf("result %v, want %v", got, tc.want)
			}
			if ev := events(recorder); strings.Join(ev, "|") != strings.Join(tc.events, "|") {
				t.Errorf("events %q, want %q", ev, tc.events)
			}
		})
	}
}

// A probe that cannot run (here: a port name the container does not have) is retried, says
// so in one event, and its result is thrown away: it neither fails nor passes the container.
func TestErroredProbeIsThrownAway(t *testing.T) {
	status := &fakeStatus{runningStatus("a", true)}
	m, recorder := newTestManager(t, status, &fakeRunner{})
	probe := &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("nope")}}, FailureThreshold: 1}
	c := v1.Container{Name: "c", LivenessProbe: probe}
	w := newWorker(m, liveness, probePod(c), c)
	for i := 0; i < 3; i++ {
		w.doProbe(context.Background())
	}
	mustResult(t, m.liveness, "a", results.Success) // the initial verdict, untouched
	ev := events(recorder)
	if len(ev) != 3 || !strings.HasPrefix(ev[0], "Warning Unhealthy Liveness probe errored and resulted in unknown state: ") {
		t.Errorf("events %q, want one errored event per probe", ev)
	}
}

// A sidecar's probes follow it across its restarts, whatever the pod's restartPolicy, and
// its events name it as an init container.
func TestSidecarWorkerOutlivesItsContainer(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	c := v1.Container{Name: "side", RestartPolicy: &always, ReadinessProbe: execProbe(1, 1)}
	pod := probePod(v1.Container{Name: "app"})
	pod.Spec.InitContainers = []v1.Container{c}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	status := &fakeStatus{v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{{
		Name: "side", ContainerID: "containerd://a",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}},
	}}}}
	m, _ := newTestManager(t, status, &fakeRunner{})
	w := newWorker(m, readiness, pod, c)
	if !w.doProbe(context.Background()) {
		t.Error("the worker of a sidecar that exited stopped, though the sidecar restarts")
	}
	mustResult(t, m.readiness, "a", results.Failure)

	if got := containerRef(pod, "side").FieldPath; got != "spec.initContainers{side}" {
		t.Errorf("a sidecar's events refer to %q, want spec.initContainers{side}", got)
	}
	if got := containerRef(pod, "app").FieldPath; got != "spec.containers{app}" {
		t.Errorf("an app container's events refer to %q, want spec.containers{app}", got)
	}
}
