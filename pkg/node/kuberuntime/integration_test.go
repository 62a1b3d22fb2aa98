package kuberuntime_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/berth-cluster/berth/pkg/node/allocation"
	"github.com/berth-cluster/berth/pkg/node/container"
	"github.com/berth-cluster/berth/pkg/node/kuberuntime"
)

// testNode is a Manager over a private containerd, with its own log, pod and cgroup dirs.
type testNode struct {
	t        *testing.T
	cd       *testContainerd
	m        *kuberuntime.Manager
	cfg      kuberuntime.Config
	recorder *record.FakeRecorder
	backOff  *flowcontrol.Backoff
}

func newTestNode(t *testing.T) *testNode {
	cgroupRoot := "/berth-h2-" + randomHex(t, 6)
	// Registered first, so that it runs last: after containerd removed the pods.
	t.Cleanup(func() { removeCgroupTree(t, cgroupRoot) })
	cd := startContainerd(t)
	n := &testNode{t: t, cd: cd, recorder: record.NewFakeRecorder(1000), backOff: flowcontrol.NewBackOff(10*time.Second, 300*time.Second)}
	n.cfg = kuberuntime.Config{
		PodLogsDir: filepath.Join(cd.dir, "pods-logs"),
		RootDir:    filepath.Join(cd.dir, "node"),
		CgroupRoot: cgroupRoot,
		NodeName:   "node-h2",
		NodeIPs:    []net.IP{net.ParseIP("127.0.0.1")},
	}
	n.m = n.newManager()
	return n
}

// removeCgroupTree removes a cgroup and the cgroups below it from every v1 hierarchy.
func removeCgroupTree(t *testing.T, root string) {
	hierarchies, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, h := range hierarchies {
		top := filepath.Join(h, root)
		var dirs []string
		filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				t.Errorf("removing cgroup %s: %v", dirs[i], err)
			}
		}
	}
}

// newManager is a Manager as a restarted node agent makes it.
func (n *testNode) newManager() *kuberuntime.Manager {
	m, err := kuberuntime.NewManager(n.cfg, n.cd.runtime, n.cd.images, n.recorder)
	if err != nil {
		n.t.Fatal(err)
	}
	return m
}

func (n *testNode) status(pod *v1.Pod) *container.PodStatus {
	n.t.Helper()
	s, err := n.m.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		n.t.Fatalf("GetPodStatus: %v", err)
	}
	return s
}

// sync runs SyncPod with the runtime's current status and fails the test on errors other
// than the allowed ones.
func (n *testNode) sync(pod *v1.Pod, allowed ...error) container.PodSyncResult {
	n.t.Helper()
	result := n.m.SyncPod(context.Background(), pod, n.status(pod), nil, n.backOff)
	for _, r := range result.SyncResults {
		if r.Error == nil {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || r.Error == a
		}
		if !ok {
			n.t.Fatalf("SyncPod: %v", result.Error())
		}
	}
	if result.SyncError != nil {
		n.t.Fatalf("SyncPod: %v", result.SyncError)
	}
	return result
}

// waitFor polls the pod's status until cond holds.
func (n *testNode) waitFor(pod *v1.Pod, what string, cond func(*container.PodStatus) bool) *container.PodStatus {
	n.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := n.status(pod)
		if cond(s) {
			return s
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("timed out waiting for %s; status: %s", what, describe(s))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func describe(s *container.PodStatus) string {
	var b strings.Builder
	for _, ss := range s.SandboxStatuses {
		b.WriteString("sandbox " + ss.Id[:12] + " " + ss.State.String() + "; ")
	}
	for _, c := range s.ContainerStatuses {
		b.WriteString(c.Name + " " + string(c.State) + " " + c.Reason + " " + c.Message + "; ")
	}
	return b.String()
}

func (n *testNode) events() []string {
	var out []string
	for {
		select {
		case e := <-n.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, prefix string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func (n *testNode) busybox(name string, script string) v1.Container {
	return v1.Container{
		Name:                     name,
		Image:                    n.cd.busybox,
		ImagePullPolicy:          v1.PullIfNotPresent,
		Command:                  []string{"sh", "-c", script},
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: v1.TerminationMessageReadFile,
		VolumeMounts:             []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
	}
}

func testPod(name string) *v1.Pod {
	grace := int64(10)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uuid.NewUUID())},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyAlways,
			DNSPolicy:                     v1.DNSClusterFirst,
			TerminationGracePeriodSeconds: &grace,
			Volumes:                       []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}
}

// TestPodLifecycle runs a pod with an init container and an app container on a real
// containerd: the seven steps of SyncPod, the emptyDir they share, env expansion, hooks, log
// files, GetPodStatus (also from a fresh Manager, as after a node agent restart), GetPods,
// GetContainerLogs, then KillPod.
func TestPodLifecycle(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()
	pod := testPod("lifecycle")
	pod.Spec.InitContainers = []v1.Container{n.busybox("init", "echo init-ran > /data/init; echo init says hi")}
	app := n.busybox("app", `trap 'echo stopping; exit 0' TERM
cat /data/init > /data/app-saw-init
echo "$(GREETING) from $(POD_NAME) at $(POD_IP)" '$$(LITERAL)' > /data/app
echo app says $(GREETING)
echo oops >&2
echo done > /dev/termination-log
while true; do sleep 0.1; done`)
	app.Env = []v1.EnvVar{
		{Name: "GREETING", Value: "hello"},
		{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
	}
	app.Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo started > /data/poststart"}}},
		PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo stopping > /data/prestop"}}},
	}
	pod.Spec.Containers = []v1.Container{app}

	// First sync: sandbox and the init container.
	n.sync(pod)
	s := n.waitFor(pod, "the init container to complete", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("init")
		return c != nil && c.State == container.ContainerStateExited
	})
	if len(s.SandboxStatuses) != 1 || s.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes: %s", describe(s))
	}
	if len(s.IPs) != 1 || !n.cd.podCIDR.Contains(net.ParseIP(s.IPs[0])) {
		t.Fatalf("pod IPs %v, want one in %s", s.IPs, n.cd.podCIDR)
	}
	sb := s.SandboxStatuses[0]
	if sb.Metadata.Name != pod.Name || sb.Metadata.Uid != string(pod.UID) || sb.Metadata.Attempt != 0 {
		t.Errorf("sandbox metadata = %v", sb.Metadata)
	}
	if init := s.FindContainerStatusByName("init"); init.ExitCode != 0 || init.Reason != "Completed" || init.RestartCount != 0 {
		t.Errorf("init status = %+v", init)
	}
	if s.FindContainerStatusByName("app") != nil {
		t.Fatalf("the app container started before the init container completed")
	}

	// Second sync: the app container.
	n.sync(pod)
	s = n.waitFor(pod, "the app container to run", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("app")
		return c != nil && c.State == container.ContainerStateRunning
	})
	podIP := s.IPs[0]
	appStatus := s.FindContainerStatusByName("app")
	if appStatus.Hash != kuberuntime.HashContainer(&pod.Spec.Containers[0]) || appStatus.RestartCount != 0 {
		t.Errorf("app status = %+v", appStatus)
	}
	volume := filepath.Join(n.cfg.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~empty-dir", "data")
	if info, err := os.Stat(volume); err != nil || info.Mode().Perm() != 0o777 {
		t.Errorf("emptyDir %s: %v %v", volume, info, err)
	}
	readVolume := func(name string) string {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			data, err := os.ReadFile(filepath.Join(volume, name))
			if err == nil && len(data) > 0 {
				return string(data)
			}
			if time.Now().After(deadline) {
				t.Fatalf("reading %s from the emptyDir: %v", name, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := readVolume("app-saw-init"); got != "init-ran\n" {
		t.Errorf("the app saw %q of the init container's file", got)
	}
	if got, want := readVolume("app"), "hello from lifecycle at "+podIP+" $(LITERAL)\n"; got != want {
		t.Errorf("the app wrote %q, want %q", got, want)
	}
	if got := readVolume("poststart"); got != "started\n" {
		t.Errorf("postStart hook wrote %q", got)
	}

	// The log files: <PodLogsDir>/<ns>_<name>_<uid>/<container>/<restart>.log.
	logDir := filepath.Join(n.cfg.PodLogsDir, pod.Namespace+"_"+pod.Name+"_"+string(pod.UID))
	for _, f := range []string{"init/0.log", "app/0.log"} {
		if _, err := os.Stat(filepath.Join(logDir, f)); err != nil {
			t.Errorf("log file: %v", err)
		}
	}
	var stdout, stderr bytes.Buffer
	waitLogs := time.Now().Add(10 * time.Second)
	for stdout.String() != "app says hello\n" && time.Now().Before(waitLogs) {
		stdout.Reset()
		stderr.Reset()
		if err := n.m.GetContainerLogs(ctx, pod, appStatus.ID, &v1.PodLogOptions{}, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stdout.String() != "app says hello\n" || stderr.String() != "oops\n" {
		t.Errorf("logs: stdout %q, stderr %q", stdout.String(), stderr.String())
	}
	initLog, _ := os.ReadFile(filepath.Join(logDir, "init/0.log"))
	if !strings.Contains(string(initLog), " stdout F init says hi\n") {
		t.Errorf("init log = %q", initLog)
	}

	// A sync with nothing to do does nothing.
	if result := n.sync(pod); len(result.SyncResults) != 0 {
		t.Errorf("steady-state sync did %v", result.SyncResults)
	}

	// A restarted node agent rebuilds the same view from the runtime alone.
	fresh := n.newManager()
	again, err := fresh.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	if a := again.FindContainerStatusByName("app"); a.ID != appStatus.ID || a.Hash != appStatus.Hash || a.RestartCount != 0 || again.IPs[0] != podIP {
		t.Errorf("after a restart: %+v", a)
	}
	pods, err := fresh.GetPods(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	var running *container.Pod
	for _, p := range pods {
		if p.ID == pod.UID {
			running = p
		}
	}
	if running == nil || running.Name != pod.Name || len(running.Containers) != 1 || running.Containers[0].Name != "app" || len(running.Sandboxes) != 1 {
		t.Fatalf("GetPods = %+v", running)
	}

	events := n.events()
	for _, want := range []string{
		`Normal Pulling Pulling image "` + n.cd.busybox + `"`,
		`Normal Pulled Successfully pulled image "` + n.cd.busybox + `" in `,
		`Normal Pulled Container image "` + n.cd.busybox + `" already present on machine`,
		"Normal Created Container created",
		"Normal Started Container started",
		"Warning MissingClusterDNS pod: ",
	} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %q", want, events)
		}
	}

	// KillPod: the preStop hook, then SIGTERM; the sandbox stops.
	start := time.Now()
	if err := fresh.KillPod(ctx, pod, *running, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("KillPod took %v: the container did not stop on SIGTERM", took)
	}
	s = n.status(pod)
	app0 := s.FindContainerStatusByName("app")
	if app0.State != container.ContainerStateExited || app0.ExitCode != 0 || app0.Reason != "Completed" {
		t.Errorf("app after KillPod: %+v", app0)
	}
	if app0.Message != "done\n" {
		t.Errorf("termination message = %q", app0.Message)
	}
	if s.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox after KillPod: %s", describe(s))
	}
	if got := readVolume("prestop"); got != "stopping\n" {
		t.Errorf("preStop hook wrote %q", got)
	}
	stdout.Reset()
	if err := n.m.GetContainerLogs(ctx, pod, app0.ID, &v1.PodLogOptions{Follow: true}, &stdout, nil); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != "app says hello\nstopping\n" {
		t.Errorf("followed log of the stopped container = %q", stdout.String())
	}
	if !hasEvent(n.events(), "Normal Killing Stopping container app") {
		t.Errorf("no Killing event")
	}

	// The cgroup of this BestEffort pod.
	cg := filepath.Join("/sys/fs/cgroup/memory", n.cfg.CgroupRoot, "kubepods/besteffort", "pod"+string(pod.UID))
	if _, err := os.Stat(cg); err != nil {
		t.Errorf("pod cgroup: %v", err)
	}
}

func findResult(result container.PodSyncResult, action container.SyncAction, target string) *container.SyncResult {
	for _, r := range result.SyncResults {
		if r.Action == action && r.Target == target {
			return r
		}
	}
	return nil
}

// TestCrashLoopBackOff restarts a failing container with the crash-loop back-off: the
// first restart at once, then ErrCrashLoopBackOff until 10 s passed, then 20 s; restart
// counts, log files per restart and --previous follow.
func TestCrashLoopBackOff(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()
	clock := testingclock.NewFakeClock(time.Now())
	n.backOff = flowcontrol.NewFakeBackOff(10*time.Second, 300*time.Second, clock)
	pod := testPod("crashloop")
	crash := n.busybox("crash", "echo run; echo failing now; exit 3")
	crash.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	pod.Spec.Containers = []v1.Container{crash}

	exitedWith := func(restart int) func(*container.PodStatus) bool {
		return func(s *container.PodStatus) bool {
			c := s.FindContainerStatusByName("crash")
			return c != nil && c.State == container.ContainerStateExited && c.RestartCount == restart
		}
	}
	n.sync(pod)
	s := n.waitFor(pod, "the first run to fail", exitedWith(0))
	c := s.FindContainerStatusByName("crash")
	if c.ExitCode != 3 || c.Reason != "Error" || c.Message != "run\nfailing now\n" {
		t.Errorf("failed container: %+v", c)
	}

	// The first restart is immediate.
	n.sync(pod)
	n.waitFor(pod, "the second run to fail", exitedWith(1))

	// Then the back-off holds it.
	result := n.sync(pod, container.ErrCrashLoopBackOff)
	r := findResult(result, container.StartContainer, "crash")
	want := "back-off 10s restarting failed container=crash pod=crashloop_default(" + string(pod.UID) + ")"
	if r == nil || r.Error != container.ErrCrashLoopBackOff || r.Message != want {
		t.Fatalf("in back-off: %+v, want message %q", r, want)
	}
	if !hasEvent(n.events(), "Warning BackOff Back-off restarting failed container crash in pod crashloop_default("+string(pod.UID)+")") {
		t.Errorf("no BackOff event")
	}

	// Once the back-off passed, it restarts, and the next back-off doubles.
	clock.SetTime(n.status(pod).FindContainerStatusByName("crash").FinishedAt.Add(11 * time.Second))
	n.sync(pod)
	s = n.waitFor(pod, "the third run to fail", exitedWith(2))
	result = n.sync(pod, container.ErrCrashLoopBackOff)
	if r := findResult(result, container.StartContainer, "crash"); r == nil || !strings.HasPrefix(r.Message, "back-off 20s restarting failed container=crash") {
		t.Errorf("second back-off: %+v", r)
	}

	// A log file per run; --previous reads the instance before (the caller picks it).
	logDir := filepath.Join(n.cfg.PodLogsDir, "default_crashloop_"+string(pod.UID), "crash")
	for _, f := range []string{"0.log", "1.log", "2.log"} {
		if _, err := os.Stat(filepath.Join(logDir, f)); err != nil {
			t.Errorf("log %s: %v", f, err)
		}
	}
	newest := s.FindContainerStatusByName("crash")
	var previous *container.Status
	for _, cs := range s.ContainerStatuses {
		if cs.Name == "crash" && cs.RestartCount == newest.RestartCount-1 {
			previous = cs
		}
	}
	if previous == nil {
		t.Fatalf("no instance before the newest (restart %d)", newest.RestartCount)
	}
	os.WriteFile(filepath.Join(logDir, "1.log"), []byte("2024-01-01T00:00:00Z stdout F the previous run\n"), 0o644)
	var out bytes.Buffer
	if err := n.m.GetContainerLogs(ctx, pod, previous.ID, &v1.PodLogOptions{Previous: true}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if out.String() != "the previous run\n" {
		t.Errorf("previous log = %q", out.String())
	}
	out.Reset()
	tail := int64(1)
	if err := n.m.GetContainerLogs(ctx, pod, newest.ID, &v1.PodLogOptions{TailLines: &tail, Timestamps: true}, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(out.String(), "Z failing now\n") || len(out.String()) != len("2024-01-01T00:00:00.000000000Z failing now\n") {
		t.Errorf("tail 1 with timestamps = %q", out.String())
	}
}

// TestPostStartHookFailure kills a container whose postStart hook fails.
func TestPostStartHookFailure(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("poststart")
	c := n.busybox("app", "trap 'exit 0' TERM; while true; do sleep 0.1; done")
	c.Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo nope; exit 3"}}}}
	pod.Spec.Containers = []v1.Container{c}
	result := n.sync(pod, container.ErrPostStartHook)
	r := findResult(result, container.StartContainer, "app")
	if r == nil || r.Error != container.ErrPostStartHook || !strings.HasPrefix(r.Message, `Exec lifecycle hook ([sh -c echo nope; exit 3]) for Container "app" in Pod "poststart_default(`) {
		t.Fatalf("result: %+v", r)
	}
	s := n.status(pod)
	if app := s.FindContainerStatusByName("app"); app == nil || app.State != container.ContainerStateExited {
		t.Errorf("the container still runs: %s", describe(s))
	}
	events := n.events()
	for _, want := range []string{"Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook"} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %q", want, events)
		}
	}
}

// TestImagePullErrors: Never with an absent image, and a failed pull then its back-off.
func TestImagePullErrors(t *testing.T) {
	n := newTestNode(t)
	pod := testPod("images")
	never := n.busybox("never", "true")
	never.Image, never.ImagePullPolicy = "berth.test/absent:1", v1.PullNever
	pull := n.busybox("pull", "true")
	pull.Image, pull.ImagePullPolicy = "127.0.0.1:1/absent:1", v1.PullIfNotPresent
	nonRoot := n.busybox("nonroot", "true")
	yes := true
	nonRoot.SecurityContext = &v1.SecurityContext{RunAsNonRoot: &yes}
	pod.Spec.Containers = []v1.Container{never, pull, nonRoot}

	result := n.sync(pod, container.ErrImageNeverPull, container.ErrImagePull, container.ErrCreateContainerConfig)
	if r := findResult(result, container.StartContainer, "nonroot"); r == nil || r.Error != container.ErrCreateContainerConfig ||
		r.Message != `container has runAsNonRoot and image will run as root (pod: "images_default(`+string(pod.UID)+`)", container: nonroot)` {
		t.Errorf("nonroot: %+v", r)
	}
	if r := findResult(result, container.StartContainer, "never"); r == nil || r.Error != container.ErrImageNeverPull ||
		r.Message != `Container image "berth.test/absent:1" is not present with pull policy of Never` {
		t.Errorf("never: %+v", r)
	}
	if r := findResult(result, container.StartContainer, "pull"); r == nil || r.Error != container.ErrImagePull {
		t.Errorf("pull: %+v", r)
	}
	events := n.events()
	for _, want := range []string{
		`Warning ErrImageNeverPull Container image "berth.test/absent:1" is not present with pull policy of Never`,
		"Warning Failed Error: ErrImageNeverPull",
		`Normal Pulling Pulling image "127.0.0.1:1/absent:1"`,
		`Warning Failed Failed to pull image "127.0.0.1:1/absent:1": `,
		"Warning Failed Error: ErrImagePull",
	} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %q", want, events)
		}
	}
	result = n.sync(pod, container.ErrImageNeverPull, container.ErrImagePullBackOff, container.ErrCreateContainerConfig)
	if r := findResult(result, container.StartContainer, "pull"); r == nil || r.Error != container.ErrImagePullBackOff ||
		!strings.HasPrefix(r.Message, `Back-off pulling image "127.0.0.1:1/absent:1": ErrImagePull: `) {
		t.Errorf("pull in back-off: %+v", r)
	}
	if !hasEvent(n.events(), `Normal BackOff Back-off pulling image "127.0.0.1:1/absent:1"`) {
		t.Errorf("no BackOff event")
	}
}

// TestSandboxRecreated: when the sandbox dies, SyncPod kills the pod, makes a new sandbox
// (attempt 1) and starts over from the init containers.
func TestSandboxRecreated(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()
	pod := testPod("resandbox")
	pod.Spec.InitContainers = []v1.Container{n.busybox("init", "true")}
	pod.Spec.Containers = []v1.Container{n.busybox("app", "trap 'exit 0' TERM; while true; do sleep 0.1; done")}
	appRunning := func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("app")
		return c != nil && c.State == container.ContainerStateRunning
	}
	n.sync(pod)
	n.waitFor(pod, "init", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("init")
		return c != nil && c.State == container.ContainerStateExited
	})
	n.sync(pod)
	first := n.waitFor(pod, "app", appRunning)

	// The sandbox dies under the pod.
	if err := n.cd.runtime.StopPodSandbox(ctx, first.SandboxStatuses[0].Id); err != nil {
		t.Fatal(err)
	}
	n.events()
	n.sync(pod)
	if !hasEvent(n.events(), "Normal SandboxChanged Pod sandbox changed, it will be killed and re-created.") {
		t.Errorf("no SandboxChanged event")
	}
	s := n.waitFor(pod, "the new sandbox's init container", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("init")
		return len(s.SandboxStatuses) == 2 && c != nil && c.State == container.ContainerStateExited
	})
	if s.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_READY || s.SandboxStatuses[0].Metadata.Attempt != 1 {
		t.Errorf("new sandbox: %s attempt %d", describe(s), s.SandboxStatuses[0].Metadata.Attempt)
	}
	inits := 0
	for _, c := range s.ContainerStatuses {
		if c.Name == "init" {
			inits++
		}
	}
	if inits != 1 {
		t.Errorf("%d init containers: the old sandbox's were not purged", inits)
	}
	n.sync(pod)
	s = n.waitFor(pod, "app in the new sandbox", appRunning)
	if app := s.FindContainerStatusByName("app"); app.RestartCount != 1 {
		t.Errorf("app restart count = %d, want 1", app.RestartCount)
	}
}

// TestSidecars runs a sidecar (an init container with restartPolicy Always) before a
// regular init container and the app, keeps it running beside the app, and stops it after
// the app. Then a second pod is killed with no spec at all (as after a node agent restart,
// for a pod the API forgot): its preStop hook comes from the container's annotations.
func TestSidecars(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()
	always := v1.ContainerRestartPolicyAlways
	pod := testPod("sidecars")
	sidecar := n.busybox("proxy", "trap 'sleep 0.3; echo proxy-stopped > /data/proxy; exit 0' TERM; while true; do sleep 0.1; done")
	sidecar.RestartPolicy = &always
	pod.Spec.InitContainers = []v1.Container{sidecar, n.busybox("init", "true")}
	pod.Spec.Containers = []v1.Container{n.busybox("app", "trap 'echo app-stopped > /data/app; exit 0' TERM; while true; do sleep 0.1; done")}
	running := func(name string) func(*container.PodStatus) bool {
		return func(s *container.PodStatus) bool {
			c := s.FindContainerStatusByName(name)
			return c != nil && c.State == container.ContainerStateRunning
		}
	}
	n.sync(pod)
	s := n.waitFor(pod, "the sidecar", running("proxy"))
	if s.FindContainerStatusByName("init") != nil {
		t.Fatalf("the init container started with the sidecar: %s", describe(s))
	}
	n.sync(pod)
	n.waitFor(pod, "the init container", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("init")
		return c != nil && c.State == container.ContainerStateExited
	})
	n.sync(pod)
	s = n.waitFor(pod, "the app", running("app"))
	if !running("proxy")(s) {
		t.Fatalf("the sidecar stopped: %s", describe(s))
	}

	if err := n.m.KillPod(ctx, pod, runningPodFrom(t, n, pod), nil); err != nil {
		t.Fatal(err)
	}
	s = n.status(pod)
	app, proxy := s.FindContainerStatusByName("app"), s.FindContainerStatusByName("proxy")
	if app.State != container.ContainerStateExited || proxy.State != container.ContainerStateExited {
		t.Fatalf("after KillPod: %s", describe(s))
	}
	if !proxy.FinishedAt.After(app.FinishedAt) {
		t.Errorf("the sidecar stopped at %v, before the app at %v", proxy.FinishedAt, app.FinishedAt)
	}

	// A pod killed without its spec.
	orphan := testPod("orphan")
	c := n.busybox("app", "trap 'exit 0' TERM; while true; do sleep 0.1; done")
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo orphan-prestop > /data/prestop"}}}}
	orphan.Spec.Containers = []v1.Container{c}
	n.sync(orphan)
	n.waitFor(orphan, "the orphan", running("app"))
	if err := n.newManager().KillPod(ctx, nil, runningPodFrom(t, n, orphan), nil); err != nil {
		t.Fatal(err)
	}
	if s := n.status(orphan); s.FindContainerStatusByName("app").State != container.ContainerStateExited {
		t.Errorf("orphan after KillPod: %s", describe(s))
	}
	data, _ := os.ReadFile(filepath.Join(n.cfg.RootDir, "pods", string(orphan.UID), "volumes/kubernetes.io~empty-dir/data/prestop"))
	if string(data) != "orphan-prestop\n" {
		t.Errorf("the orphan's preStop hook wrote %q", data)
	}
}

// runningPodFrom is the pod as GetPods lists it.
func runningPodFrom(t *testing.T, n *testNode, pod *v1.Pod) container.Pod {
	t.Helper()
	pods, err := n.m.GetPods(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if p.ID == pod.UID {
			return *p
		}
	}
	t.Fatalf("pod %s not running", pod.Name)
	return container.Pod{}
}

// TestResizeInPlace resizes a running pod's containers on a real containerd: their cgroups
// and the pod's take the new values, nothing restarts, and the actuated record follows; a
// memory change under a RestartContainer policy restarts that container only.
func TestResizeInPlace(t *testing.T) {
	n := newTestNode(t)
	actuated, err := allocation.NewStore("")
	if err != nil {
		t.Fatal(err)
	}
	n.cfg.Actuated = actuated
	n.m = n.newManager()
	pod := testPod("resize")
	a := n.busybox("a", "trap 'exit 0' TERM; while true; do sleep 0.1; done")
	a.Resources = resources("cpu=20m", "lim:cpu=50m", "memory=32Mi", "lim:memory=64Mi")
	b := n.busybox("b", "trap 'exit 0' TERM; while true; do sleep 0.1; done")
	b.Resources = resources("memory=16Mi")
	b.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod.Spec.Containers = []v1.Container{a, b}
	bothRunning := func(s *container.PodStatus) bool {
		for _, name := range []string{"a", "b"} {
			if c := s.FindContainerStatusByName(name); c == nil || c.State != container.ContainerStateRunning {
				return false
			}
		}
		return true
	}
	n.sync(pod)
	before := n.waitFor(pod, "both containers", bothRunning)
	if r, ok := actuated.Container(pod.UID, "a"); !ok || !r.Limits.Cpu().Equal(resource.MustParse("50m")) {
		t.Errorf("actuated at creation: %v %t", r, ok)
	}

	cgroupFile := func(controller, id, file string) string {
		t.Helper()
		dir := filepath.Join("/sys/fs/cgroup", controller, n.cfg.CgroupRoot, "kubepods/burstable", "pod"+string(pod.UID), id)
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(data))
	}
	aID := before.FindContainerStatusByName("a").ID.ID

	// a: cpu limit up, memory limit up, cpu request down; b: a cpu request added (in place).
	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources = resources("cpu=10m", "lim:cpu=80m", "memory=32Mi", "lim:memory=96Mi")
	resized.Spec.Containers[1].Resources = resources("cpu=30m", "memory=16Mi")
	result := n.sync(resized)
	found := false
	for _, r := range result.SyncResults {
		found = found || (r.Action == container.ResizePodInPlace && r.Error == nil)
		if r.Action == container.KillContainer || r.Action == container.StartContainer {
			t.Errorf("the resize did %s %v", r.Action, r.Target)
		}
	}
	if !found {
		t.Fatalf("no resize in %+v", result.SyncResults)
	}
	for file, want := range map[string]string{"cpu.cfs_quota_us": "8000", "cpu.shares": "10"} {
		if got := cgroupFile("cpu", aID, file); got != want {
			t.Errorf("a's %s = %s, want %s", file, got, want)
		}
	}
	if got := cgroupFile("memory", aID, "memory.limit_in_bytes"); got != strconv.Itoa(96<<20) {
		t.Errorf("a's memory limit = %s", got)
	}
	if got := cgroupFile("cpu", before.FindContainerStatusByName("b").ID.ID, "cpu.shares"); got != "30" {
		t.Errorf("b's cpu.shares = %s, want 30", got)
	}
	// The pod's shares are the sum of the requests: 10m + 30m.
	if got := cgroupFile("cpu", "", "cpu.shares"); got != "40" {
		t.Errorf("the pod's cpu.shares = %s, want 40", got)
	}
	if r, _ := actuated.Container(pod.UID, "b"); !r.Requests.Cpu().Equal(resource.MustParse("30m")) || len(r.Limits) != 0 {
		t.Errorf("b's actuated resources: %v", r)
	}
	after := n.status(pod)
	for _, name := range []string{"a", "b"} {
		if after.FindContainerStatusByName(name).ID != before.FindContainerStatusByName(name).ID {
			t.Errorf("%s was replaced by the in-place resize", name)
		}
	}
	// Nothing is left to do.
	if result := n.sync(resized); len(result.SyncResults) != 0 {
		t.Errorf("a second sync did %+v", result.SyncResults)
	}

	// b's memory request under RestartContainer: b restarts, a stays.
	again := resized.DeepCopy()
	again.Spec.Containers[1].Resources = resources("cpu=30m", "memory=24Mi")
	n.sync(again)
	s := n.waitFor(pod, "b to restart", func(s *container.PodStatus) bool {
		c := s.FindContainerStatusByName("b")
		return c != nil && c.State == container.ContainerStateRunning && c.RestartCount == 1
	})
	if s.FindContainerStatusByName("a").ID.ID != aID {
		t.Error("a restarted for b's resize")
	}
	if !hasEvent(n.events(), "Normal Killing Container b resize requires restart") {
		t.Error("no Killing event saying why b restarted")
	}
	if r, _ := actuated.Container(pod.UID, "b"); !r.Requests.Memory().Equal(resource.MustParse("24Mi")) {
		t.Errorf("b's actuated resources after its restart: %v", r)
	}
}

// resources is a ResourceRequirements from "cpu=20m", "lim:memory=50Mi" terms.
func resources(terms ...string) v1.ResourceRequirements {
	var r v1.ResourceRequirements
	for _, t := range terms {
		list := &r.Requests
		if rest, ok := strings.CutPrefix(t, "lim:"); ok {
			list, t = &r.Limits, rest
		}
		name, q, _ := strings.Cut(t, "=")
		if *list == nil {
			*list = v1.ResourceList{}
		}
		(*list)[v1.ResourceName(name)] = resource.MustParse(q)
	}
	return r
}
