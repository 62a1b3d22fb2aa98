package pleg

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/container"
)

// fakeRuntime is a runtime whose pods the test sets; GetPodStatus reports the same pods.
type fakeRuntime struct {
	container.Runtime // unused methods panic
	mu                sync.Mutex
	pods              map[types.UID]*container.Pod
	ips               map[types.UID][]string
	listErr           error
	statusErr         map[types.UID]error
	statusCalls       int
	lists             int
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{pods: map[types.UID]*container.Pod{}, ips: map[types.UID][]string{}, statusErr: map[types.UID]error{}}
}

// set makes the runtime hold pod uid with a sandbox and containers given as "id:state"; the
// first is the sandbox. No specs removes the pod.
func (r *fakeRuntime) set(uid types.UID, specs ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(specs) == 0 {
		delete(r.pods, uid)
		return
	}
	p := &container.Pod{ID: uid, Name: "name-" + string(uid), Namespace: "ns"}
	for i, s := range specs {
		id, state, _ := strings.Cut(s, ":")
		c := &container.Container{ID: container.ContainerID{Type: "containerd", ID: id}, Name: id, State: container.State(state)}
		if i == 0 {
			p.Sandboxes = append(p.Sandboxes, c)
		} else {
			p.Containers = append(p.Containers, c)
		}
	}
	r.pods[uid] = p
}

func (r *fakeRuntime) GetPods(ctx context.Context, all bool) ([]*container.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lists++
	if r.listErr != nil {
		return nil, r.listErr
	}
	var out []*container.Pod
	for _, p := range r.pods {
		out = append(out, p)
	}
	return out, nil
}

func (r *fakeRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statusCalls++
	if err := r.statusErr[uid]; err != nil {
		return nil, err
	}
	st := &container.PodStatus{ID: uid, Name: name, Namespace: namespace, IPs: r.ips[uid]}
	p := r.pods[uid]
	if p == nil {
		return st, nil
	}
	for _, c := range p.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, &container.Status{ID: c.ID, Name: c.Name, State: c.State, ExitCode: 3})
	}
	for _, sb := range p.Sandboxes {
		state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		if sb.State == container.ContainerStateRunning {
			state = runtimeapi.PodSandboxState_SANDBOX_READY
		}
		st.SandboxStatuses = append(st.SandboxStatuses, &runtimeapi.PodSandboxStatus{Id: sb.ID.ID, State: state})
	}
	return st, nil
}

func (r *fakeRuntime) calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statusCalls
}

func newTestPLEG(rt *fakeRuntime, events EventSource) (*GenericPLEG, Cache, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(t0)
	c := NewCache()
	return NewGenericPLEG(rt, c, time.Second, events, clk, nil).(*GenericPLEG), c, clk
}

// drain returns the events waiting in the channel.
func drain(g *GenericPLEG) string {
	var got []*PodLifecycleEvent
	for {
		select {
		case e := <-g.Watch():
			got = append(got, e)
		default:
			return evs(got)
		}
	}
}

func TestRelist(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRuntime()
	g, c, clk := newTestPLEG(rt, nil)

	type step struct {
		name   string
		change func()
		want   string
		// wantStatus names the containers the cache holds for u1 after the step.
		wantStatus string
	}
	steps := []step{
		{"empty runtime", func() {}, "", ""},
		{"pod starts", func() { rt.set("u1", "sb:running", "c1:running", "c2:created") },
			"ContainerStarted/c1 ContainerStarted/sb", "c1 c2"},
		{"nothing changes", func() {}, "", "c1 c2"},
		{"c2 starts, c1 exits", func() { rt.set("u1", "sb:running", "c1:exited", "c2:running") },
			"ContainerDied/c1 ContainerStarted/c2", "c1 c2"},
		{"c1 removed", func() { rt.set("u1", "sb:running", "c2:running") }, "ContainerRemoved/c1", "c2"},
		{"pod vanishes", func() { rt.set("u1") },
			"ContainerDied/c2 ContainerRemoved/c2 ContainerDied/sb ContainerRemoved/sb", ""},
	}
	for _, s := range steps {
		s.change()
		clk.Step(time.Second)
		g.Relist(ctx)
		if got := drain(g); got != s.want {
			t.Errorf("%s: events %q, want %q", s.name, got, s.want)
		}
		st, err := c.Get("u1")
		if err != nil {
			t.Fatalf("%s: cache error %v", s.name, err)
		}
		var names []string
		for _, cs := range st.ContainerStatuses {
			names = append(names, cs.Name)
		}
		if got := strings.Join(names, " "); got != s.wantStatus {
			t.Errorf("%s: cached containers %q, want %q", s.name, got, s.wantStatus)
		}
		// Every relist moves the cache's global time: a reader waiting since before the
		// relist is released.
		if _, err := c.GetNewerThan("u1", clk.Now().Add(-time.Millisecond)); err != nil {
			t.Fatal(err)
		}
	}
	if len(g.pods) != 0 {
		t.Errorf("snapshot keeps %d pods after all vanished", len(g.pods))
	}
}

func TestRelistStatusErrorIsRetried(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRuntime()
	g, c, clk := newTestPLEG(rt, nil)
	boom := errors.New("boom")
	rt.set("u1", "sb:running", "c1:running")
	rt.statusErr["u1"] = boom

	g.Relist(ctx)
	if got := drain(g); got != "" {
		t.Errorf("events %q despite a status error", got)
	}
	if _, err := c.Get("u1"); !errors.Is(err, boom) {
		t.Errorf("cache error = %v, want boom", err)
	}

	// The status is readable again: the change is reported now.
	rt.mu.Lock()
	delete(rt.statusErr, "u1")
	rt.mu.Unlock()
	clk.Step(time.Second)
	g.Relist(ctx)
	if got := drain(g); got != "ContainerStarted/c1 ContainerStarted/sb" {
		t.Errorf("events %q after the error cleared", got)
	}

	// A failure on an unchanged pod is followed by a PodSync once it reads again.
	rt.mu.Lock()
	rt.statusErr["u1"] = boom
	rt.mu.Unlock()
	g.reinspect["u1"] = true
	clk.Step(time.Second)
	g.Relist(ctx)
	rt.mu.Lock()
	delete(rt.statusErr, "u1")
	rt.mu.Unlock()
	clk.Step(time.Second)
	g.Relist(ctx)
	if got := drain(g); got != "PodSync/<nil>" {
		t.Errorf("events %q, want a PodSync after reinspection", got)
	}
}

func TestRelistErrorKeepsHealthUnchanged(t *testing.T) {
	rt := newFakeRuntime()
	g, _, clk := newTestPLEG(rt, nil)
	if ok, err := g.Healthy(); ok || err == nil {
		t.Error("healthy before any relist")
	}
	g.Relist(context.Background())
	if ok, err := g.Healthy(); !ok {
		t.Errorf("unhealthy after a relist: %v", err)
	}
	rt.listErr = errors.New("runtime down")
	clk.Step(2 * time.Minute)
	g.Relist(context.Background())
	if ok, err := g.Healthy(); !ok {
		t.Errorf("unhealthy 2 min after the last relist: %v", err)
	}
	clk.Step(time.Minute + time.Second)
	g.Relist(context.Background())
	if ok, err := g.Healthy(); ok || err == nil || !strings.Contains(err.Error(), "threshold is 3m0s") {
		t.Errorf("Healthy = %v, %v; want unhealthy after 3 min", ok, err)
	}
}

func TestPodIPsKeptAfterSandboxStops(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRuntime()
	g, c, clk := newTestPLEG(rt, nil)
	rt.set("u1", "sb:running", "c1:running")
	rt.ips["u1"] = []string{"10.0.0.5"}
	g.Relist(ctx)
	rt.set("u1", "sb:exited", "c1:exited")
	rt.ips["u1"] = nil
	clk.Step(time.Second)
	g.Relist(ctx)
	st, _ := c.Get("u1")
	if len(st.IPs) != 1 || st.IPs[0] != "10.0.0.5" {
		t.Errorf("IPs = %v, want the old IP kept", st.IPs)
	}
}

func TestEventChannelFullDrops(t *testing.T) {
	rt := newFakeRuntime()
	g, _, _ := newTestPLEG(rt, nil)
	for i := 0; i < eventChannelCapacity+10; i++ {
		rt.set(types.UID(strings.Repeat("x", i+1)), "sb:running")
	}
	done := make(chan struct{})
	go func() {
		g.Relist(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Relist blocked on a full channel")
	}
	if n := len(g.Watch()); n != eventChannelCapacity {
		t.Errorf("%d events queued, want %d", n, eventChannelCapacity)
	}
}

func criEvent(uid types.UID, id string, t runtimeapi.ContainerEventType) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: t,
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: string(uid), Name: "name-" + string(uid), Namespace: "ns"},
		},
	}
}

func TestContainerEventsAndRelistShareOneSnapshot(t *testing.T) {
	ctx := context.Background()
	rt := newFakeRuntime()
	g, c, clk := newTestPLEG(rt, nil)
	g.Relist(ctx)

	type step struct {
		name      string
		change    func()
		event     *runtimeapi.ContainerEventResponse // nil: a relist instead
		want      string
		wantCalls int // GetPodStatus calls the step makes
	}
	steps := []step{
		{"sandbox started (event)", func() { rt.set("u1", "sb:running") },
			criEvent("u1", "sb", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), "ContainerStarted/sb", 1},
		{"container created (event): cache only", func() { rt.set("u1", "sb:running", "c1:created") },
			criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT), "", 1},
		{"container started (event)", func() { rt.set("u1", "sb:running", "c1:running") },
			criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), "ContainerStarted/c1", 1},
		{"the same event again: nothing, no read", func() {},
			criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT), "", 0},
		{"relist after the events: no duplicates", func() {}, nil, "", 0},
		{"container exits, the relist sees it first", func() { rt.set("u1", "sb:running", "c1:exited") }, nil, "ContainerDied/c1", 1},
		{"its late stop event: nothing", func() {},
			criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT), "", 0},
		{"pod removed (event)", func() { rt.set("u1") },
			criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT),
			"ContainerRemoved/c1 ContainerDied/sb ContainerRemoved/sb", 1},
		{"relist: nothing more", func() {}, nil, "", 0},
		{"event without a sandbox: ignored", func() {},
			&runtimeapi.ContainerEventResponse{ContainerId: "zz", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT}, "", 0},
	}
	for _, s := range steps {
		s.change()
		clk.Step(time.Second)
		before := rt.calls()
		if s.event != nil {
			g.HandleContainerEvent(ctx, s.event)
		} else {
			g.Relist(ctx)
		}
		if got := drain(g); got != s.want {
			t.Errorf("%s: events %q, want %q", s.name, got, s.want)
		}
		if got := rt.calls() - before; got != s.wantCalls {
			t.Errorf("%s: %d status reads, want %d", s.name, got, s.wantCalls)
		}
		if s.name == "container created (event): cache only" {
			st, _ := c.Get("u1")
			if st.FindContainerStatusByName("c1") == nil {
				t.Errorf("%s: the cache does not hold the created container", s.name)
			}
		}
	}
}

// fakeEventSource serves subscriptions: each takes the next batch, waits for gate, streams the
// batch and breaks the stream; with no batch left it blocks until ctx ends.
type fakeEventSource struct {
	mu            sync.Mutex
	batches       [][]*runtimeapi.ContainerEventResponse
	gate          chan struct{}
	subscriptions int
}

func (s *fakeEventSource) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	s.mu.Lock()
	s.subscriptions++
	var batch []*runtimeapi.ContainerEventResponse
	if len(s.batches) > 0 {
		batch, s.batches = s.batches[0], s.batches[1:]
	}
	s.mu.Unlock()
	if batch == nil {
		<-ctx.Done()
		return ctx.Err()
	}
	<-s.gate
	for _, e := range batch {
		ch <- e
	}
	return errors.New("stream broke")
}

func (s *fakeEventSource) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subscriptions
}

// receive waits for n events from the PLEG and returns them as "Type/data ...".
func receive(t *testing.T, g *GenericPLEG, n int) string {
	t.Helper()
	var got []string
	waitFor(t, "the streamed events", func() bool {
		select {
		case e := <-g.Watch():
			got = append(got, string(e.Type)+"/"+e.Data.(string))
		default:
		}
		return len(got) == n
	})
	return strings.Join(got, " ")
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestRunFollowsTheEventStream(t *testing.T) {
	startGoroutines := runtime.NumGoroutine()
	rt := newFakeRuntime()
	src := &fakeEventSource{
		batches: [][]*runtimeapi.ContainerEventResponse{{criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)}},
		gate:    make(chan struct{}),
	}
	g, _, clk := newTestPLEG(rt, src)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(stopped)
	}()
	waitFor(t, "the first relist", func() bool { ok, _ := g.Healthy(); return ok })
	waitFor(t, "the first subscription", func() bool { return src.count() == 1 })

	// A container starts and the runtime says so: the PLEG reports it with no relist (the
	// fake clock has not moved).
	rt.set("u1", "sb:running", "c1:running")
	close(src.gate)
	if got := receive(t, g, 2); got != "ContainerStarted/c1 ContainerStarted/sb" {
		t.Errorf("events %v", got)
	}

	// The stream broke: after the back-off (1 s) it is subscribed again; the relist that runs
	// meanwhile reports nothing twice.
	firstRelist := *g.relistTime.Load()
	waitFor(t, "the re-subscription", func() bool {
		if src.count() == 2 {
			return true
		}
		if clk.HasWaiters() {
			clk.Step(time.Second)
		}
		return false
	})
	waitFor(t, "a second relist", func() bool { return g.relistTime.Load().After(firstRelist) })
	g.mu.Lock() // the relist has finished sending
	g.mu.Unlock()
	if got := drain(g); got != "" {
		t.Errorf("the relist reported %q again", got)
	}

	cancel()
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= startGoroutines })
}

// unimplementedSource is containerd 1.6: no event stream.
type unimplementedSource struct{ calls atomic.Int32 }

func (s *unimplementedSource) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	s.calls.Add(1)
	return grpcstatus.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
}

func TestRuntimeWithoutEventStreamIsNotAskedAgain(t *testing.T) {
	startGoroutines := runtime.NumGoroutine()
	src := &unimplementedSource{}
	g, _, clk := newTestPLEG(newFakeRuntime(), src)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(stopped)
	}()
	waitFor(t, "the subscription", func() bool { return src.calls.Load() == 1 })
	for i := 0; i < 5; i++ {
		waitFor(t, "the relist timer", clk.HasWaiters)
		clk.Step(time.Minute)
	}
	if n := src.calls.Load(); n != 1 {
		t.Errorf("subscribed %d times to a runtime without the stream", n)
	}
	cancel()
	<-stopped
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= startGoroutines })
}

// streamingSource is a runtime whose event stream opens at once and stays open, sending what
// is put on events, until broken or ctx ends.
type streamingSource struct {
	events chan *runtimeapi.ContainerEventResponse
	broken chan struct{}
}

func (s *streamingSource) GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse, established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error {
	established(nil)
	for {
		select {
		case e := <-s.events:
			ch <- e
		case <-s.broken:
			return errors.New("stream broke")
		case <-ctx.Done():
			return nil
		}
	}
}

func cacheTime(c Cache) time.Time {
	cc := c.(*cache)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.timestamp == nil {
		return time.Time{}
	}
	return *cc.timestamp
}

// With the stream established the relist runs every 5 minutes, while the cache's time still
// moves on every second; when the stream breaks, the PLEG relists at once.
func TestEventedRelistsRarelyAndKeepsTheCacheFresh(t *testing.T) {
	startGoroutines := runtime.NumGoroutine()
	rt := newFakeRuntime()
	src := &streamingSource{events: make(chan *runtimeapi.ContainerEventResponse), broken: make(chan struct{})}
	g, c, clk := newTestPLEG(rt, src)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		g.Run(ctx)
		close(stopped)
	}()
	waitFor(t, "the stream", g.streaming.Load)
	waitFor(t, "the first relist", func() bool { return g.relistTime.Load() != nil })
	lists := func() int {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		return rt.lists
	}

	for i := 1; i <= 10; i++ {
		waitFor(t, "the timers", func() bool { return clk.Waiters() >= 2 })
		clk.Step(time.Second)
		want := t0.Add(time.Duration(i) * time.Second)
		waitFor(t, fmt.Sprintf("the cache's time at %d s", i), func() bool { return !cacheTime(c).Before(want) })
	}
	// The first relist, and one more if the stream opened after the first wait had begun.
	if n := lists(); n > 2 {
		t.Fatalf("relisted %d times in 10 s while the stream was up", n)
	}
	before := lists()
	if ok, err := g.Healthy(); !ok {
		t.Fatalf("unhealthy while streaming: %v", err)
	}

	rt.set("u1", "sb:running", "c1:running")
	src.events <- criEvent("u1", "c1", runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT)
	if got := receive(t, g, 2); got != "ContainerStarted/c1 ContainerStarted/sb" {
		t.Errorf("events %v", got)
	}

	close(src.broken)
	waitFor(t, "a relist right after the stream broke", func() bool { return lists() > before })
	if g.streaming.Load() {
		t.Error("still streaming after the stream broke")
	}
	cancel()
	<-stopped
	waitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= startGoroutines })
}
