package memory

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	utilexec "k8s.io/utils/exec"
)

const (
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

func TestContainerLifecycle(t *testing.T) {
	type want struct {
		state    runtimeapi.ContainerState
		exitCode int32
		reason   string
		message  string
		finished time.Duration // FinishedAt - t0 (the start), when exited
	}
	stopWith := func(timeout int64) *int64 { return &timeout }
	tests := []struct {
		name        string
		annotations map[string]string
		container   string
		after       time.Duration // the clock moves this far after the start...
		stop        *int64        // ...then StopContainer with this timeout, if set
		startErr    bool
		want        want
	}{
		{
			name:      "runs until stopped",
			container: "app",
			after:     time.Hour,
			want:      want{state: running},
		},
		{
			name:      "stop with a grace period: SIGTERM",
			container: "app",
			after:     time.Minute,
			stop:      stopWith(30),
			want:      want{state: exited, exitCode: 143, reason: "Error", finished: time.Minute},
		},
		{
			name:      "stop without grace period: SIGKILL",
			container: "app",
			after:     time.Minute,
			stop:      stopWith(0),
			want:      want{state: exited, exitCode: 137, reason: "Error", finished: time.Minute},
		},
		{
			name:        "scripted stop code",
			annotations: map[string]string{AnnotationStopExitCode: "0"},
			container:   "app",
			after:       time.Minute,
			stop:        stopWith(30),
			want:        want{state: exited, exitCode: 0, reason: "Completed", finished: time.Minute},
		},
		{
			name:        "before its run time",
			annotations: map[string]string{AnnotationRunSeconds: "30"},
			container:   "job",
			after:       30*time.Second - 1,
			want:        want{state: running},
		},
		{
			name:        "exits at its run time, seen later",
			annotations: map[string]string{AnnotationRunSeconds: "30"},
			container:   "job",
			after:       time.Hour,
			want:        want{state: exited, exitCode: 0, reason: "Completed", finished: 30 * time.Second},
		},
		{
			name:        "stopped before its run time",
			annotations: map[string]string{AnnotationRunSeconds: "30", AnnotationExitCode: "5"},
			container:   "job",
			after:       10 * time.Second,
			stop:        stopWith(30),
			want:        want{state: exited, exitCode: 143, reason: "Error", finished: 10 * time.Second},
		},
		{
			name:        "exit code",
			annotations: map[string]string{AnnotationRunSeconds: "10", AnnotationExitCode: "3"},
			container:   "job",
			after:       10 * time.Second,
			want:        want{state: exited, exitCode: 3, reason: "Error", finished: 10 * time.Second},
		},
		{
			name:        "container's key wins",
			annotations: map[string]string{AnnotationRunSeconds: "5", AnnotationRunSeconds + ".job": "20"},
			container:   "job",
			after:       time.Minute,
			want:        want{state: exited, reason: "Completed", finished: 20 * time.Second},
		},
		{
			name:        "another container's key does not apply",
			annotations: map[string]string{AnnotationRunSeconds + ".other": "1"},
			container:   "job",
			after:       time.Minute,
			want:        want{state: running},
		},
		{
			name:        "stop after the scripted exit changes nothing",
			annotations: map[string]string{AnnotationRunSeconds: "1", AnnotationExitCode: "2"},
			container:   "job",
			after:       time.Minute,
			stop:        stopWith(30),
			want:        want{state: exited, exitCode: 2, reason: "Error", finished: time.Second},
		},
		{
			name:        "OOM at its run time",
			annotations: map[string]string{AnnotationRunSeconds: "7", AnnotationOOM: "true"},
			container:   "hog",
			after:       time.Minute,
			want:        want{state: exited, exitCode: 137, reason: "OOMKilled", finished: 7 * time.Second},
		},
		{
			name:        "OOM at once",
			annotations: map[string]string{AnnotationOOM + ".hog": "true"},
			container:   "hog",
			want:        want{state: exited, exitCode: 137, reason: "OOMKilled"},
		},
		{
			name:        "fail start",
			annotations: map[string]string{AnnotationFailStart + ".bad": `exec: "nope": executable file not found in $PATH`},
			container:   "bad",
			startErr:    true,
			after:       time.Minute,
			want:        want{state: exited, exitCode: 128, reason: "StartError", message: `exec: "nope": executable file not found in $PATH`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, clk := newRuntime(t, Options{})
			sb := podSandbox("pod", tt.annotations)
			sbID := runPod(t, r, sb)
			id := create(t, r, sbID, sb, tt.container)
			st := containerStatus(t, r, id)
			if st.State != created || st.CreatedAt != t0.UnixNano() || st.StartedAt != 0 {
				t.Fatalf("after create: %v created %d started %d", st.State, st.CreatedAt, st.StartedAt)
			}
			err := r.StartContainer(ctx, id)
			if (err != nil) != tt.startErr {
				t.Fatalf("StartContainer: %v, want error %v", err, tt.startErr)
			}
			clk.Step(tt.after)
			if tt.stop != nil {
				if err := r.StopContainer(ctx, id, *tt.stop); err != nil {
					t.Fatal(err)
				}
			}
			st = containerStatus(t, r, id)
			got := want{state: st.State, exitCode: st.ExitCode, reason: st.Reason, message: st.Message}
			if st.FinishedAt != 0 {
				got.finished = time.Duration(st.FinishedAt - t0.UnixNano())
			}
			if got != tt.want {
				t.Errorf("status %+v, want %+v", got, tt.want)
			}
			if wantStarted := !tt.startErr; (st.StartedAt == t0.UnixNano()) != wantStarted {
				t.Errorf("StartedAt %d, want started at t0: %v", st.StartedAt, wantStarted)
			}
		})
	}
}

func TestStopAndRemoveSemantics(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	sb := podSandbox("pod", map[string]string{AnnotationRunSeconds + ".job": "1", AnnotationExitCode + ".job": "4"})
	sbID := runPod(t, r, sb)

	c := create(t, r, sbID, sb, "app")
	if err := r.StopContainer(ctx, c, 10); err != nil {
		t.Fatal(err)
	}
	if st := containerStatus(t, r, c); st.State != created {
		t.Errorf("stopped created container is %v, want left CREATED", st.State)
	}
	if err := r.RemoveContainer(ctx, c); err != nil {
		t.Fatal(err)
	}

	job := createAndStart(t, r, sbID, sb, "job")
	clk.Step(time.Minute)
	if err := r.StopContainer(ctx, job, 0); err != nil {
		t.Fatal(err)
	}
	if st := containerStatus(t, r, job); st.ExitCode != 4 {
		t.Errorf("stop of an exited container changed its exit code to %d", st.ExitCode)
	}
	wantCode(t, r.StartContainer(ctx, job), codes.FailedPrecondition)

	app := createAndStart(t, r, sbID, sb, "app")
	if err := r.RemoveContainer(ctx, app); err != nil { // running: killed, then removed
		t.Fatal(err)
	}
	_, err := r.ContainerStatus(ctx, app, false)
	if !crierrors.IsNotFound(err) {
		t.Errorf("status of a removed container: %v, want NotFound", err)
	}
	if err := r.RemoveContainer(ctx, app); err != nil {
		t.Errorf("remove of a removed container: %v, want nil", err)
	}
	wantCode(t, r.StopContainer(ctx, "unknown", 0), codes.NotFound)
	wantCode(t, r.StartContainer(ctx, "unknown"), codes.NotFound)
	if n := r.Counts(); n.Containers != 1 || n.Exited != 1 || n.PendingExits != 0 {
		t.Errorf("counts %+v, want the exited job only", n)
	}
}

func TestCreateContainerErrors(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("pod", map[string]string{AnnotationRunSeconds + ".bad": "soon"})
	sbID := runPod(t, r, sb)
	stopped := podSandbox("stopped", nil)
	stoppedID := runPod(t, r, stopped)
	if err := r.StopPodSandbox(ctx, stoppedID); err != nil {
		t.Fatal(err)
	}
	missingImage := containerConfig(sb, "app")
	missingImage.Image = &runtimeapi.ImageSpec{Image: "nginx:1.27"}

	tests := []struct {
		name    string
		sandbox string
		config  *runtimeapi.ContainerConfig
		want    codes.Code
	}{
		{"unknown sandbox", "unknown", containerConfig(sb, "app"), codes.NotFound},
		{"stopped sandbox", stoppedID, containerConfig(stopped, "app"), codes.FailedPrecondition},
		{"image not present", sbID, missingImage, codes.NotFound},
		{"no metadata", sbID, &runtimeapi.ContainerConfig{Image: &runtimeapi.ImageSpec{Image: testImage}}, codes.InvalidArgument},
		{"no image", sbID, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}, codes.InvalidArgument},
		{"bad script", sbID, containerConfig(sb, "bad"), codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.CreateContainer(ctx, tt.sandbox, tt.config, sb)
			wantCode(t, err, tt.want)
		})
	}

	t.Run("name reserved", func(t *testing.T) {
		create(t, r, sbID, sb, "app")
		_, err := r.CreateContainer(ctx, sbID, containerConfig(sb, "app"), sb)
		wantCode(t, err, codes.AlreadyExists)
		restarted := containerConfig(sb, "app")
		restarted.Metadata.Attempt = 1
		if _, err := r.CreateContainer(ctx, sbID, restarted, sb); err != nil {
			t.Errorf("the next attempt: %v", err)
		}
	})

	t.Run("start after the sandbox stopped", func(t *testing.T) {
		other := podSandbox("other", nil)
		otherID := runPod(t, r, other)
		id := create(t, r, otherID, other, "app")
		if err := r.StopPodSandbox(ctx, otherID); err != nil {
			t.Fatal(err)
		}
		if err := r.StartContainer(ctx, id); err == nil {
			t.Fatal("started a container of a stopped sandbox")
		}
		if st := containerStatus(t, r, id); st.State != exited || st.Reason != "StartError" || st.ExitCode != 128 {
			t.Errorf("status %v %s %d, want EXITED StartError 128", st.State, st.Reason, st.ExitCode)
		}
	})
}

func TestListContainersFilters(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sbA, sbB := podSandbox("a", nil), podSandbox("b", nil)
	a := runPod(t, r, sbA)
	b := runPod(t, r, sbB)
	aRun := createAndStart(t, r, a, sbA, "run")
	aNew := create(t, r, a, sbA, "new")
	bRun := createAndStart(t, r, b, sbB, "run")
	bDone := createAndStart(t, r, b, sbB, "done")
	if err := r.StopContainer(ctx, bDone, 1); err != nil {
		t.Fatal(err)
	}
	state := func(s runtimeapi.ContainerState) *runtimeapi.ContainerStateValue {
		return &runtimeapi.ContainerStateValue{State: s}
	}
	tests := []struct {
		name   string
		filter *runtimeapi.ContainerFilter
		want   []string
	}{
		{"none", nil, []string{aRun, aNew, bRun, bDone}},
		{"id", &runtimeapi.ContainerFilter{Id: aNew}, []string{aNew}},
		{"unknown id", &runtimeapi.ContainerFilter{Id: "nope"}, nil},
		{"sandbox", &runtimeapi.ContainerFilter{PodSandboxId: b}, []string{bRun, bDone}},
		{"unknown sandbox", &runtimeapi.ContainerFilter{PodSandboxId: "nope"}, nil},
		{"id of another sandbox", &runtimeapi.ContainerFilter{Id: aRun, PodSandboxId: b}, nil},
		{"running", &runtimeapi.ContainerFilter{State: state(running)}, []string{aRun, bRun}},
		{"created", &runtimeapi.ContainerFilter{State: state(created)}, []string{aNew}},
		{"exited in b", &runtimeapi.ContainerFilter{State: state(exited), PodSandboxId: b}, []string{bDone}},
		{"pod label", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": "uid-a"}}, []string{aRun, aNew}},
		{"labels ANDed", &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": "uid-a", "io.kubernetes.container.name": "run"}}, []string{aRun}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := r.ListContainers(ctx, tt.filter)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.Id)
			}
			if !sameSet(ids, tt.want) {
				t.Errorf("got %v, want %v", ids, tt.want)
			}
		})
	}
}

func TestContainerStatusFields(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("pod", nil)
	sbID := runPod(t, r, sb)
	imageID, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx"}, nil, sb)
	if err != nil {
		t.Fatal(err)
	}
	cfg := containerConfig(sb, "web")
	cfg.Image = &runtimeapi.ImageSpec{Image: imageID, UserSpecifiedImage: "nginx"} // as the node agent passes it
	id, err := r.CreateContainer(ctx, sbID, cfg, sb)
	if err != nil {
		t.Fatal(err)
	}
	st := containerStatus(t, r, id)
	checks := []struct {
		what      string
		got, want any
	}{
		{"id", st.Id, id},
		{"name", st.Metadata.Name, "web"},
		{"image", st.Image.Image, "docker.io/library/nginx:latest"},
		{"image ref", st.ImageRef[:len("docker.io/library/nginx@sha256:")], "docker.io/library/nginx@sha256:"},
		{"image id", st.ImageId, imageID},
		{"label", st.Labels["io.kubernetes.container.name"], "web"},
		{"annotation", st.Annotations["io.kubernetes.container.restartCount"], "0"},
		{"mount", st.Mounts[0].ContainerPath, "/dev/termination-log"},
		{"log path", st.LogPath, sb.LogDirectory + "/web/0.log"},
		{"memory limit", st.GetResources().GetLinux().GetMemoryLimitInBytes(), int64(64 << 20)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	list, err := r.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: id})
	if err != nil || len(list) != 1 || list[0].Image.Image != imageID || list[0].ImageRef != imageID || list[0].PodSandboxId != sbID {
		t.Errorf("ListContainers names the image as the config did: %v, %v", list, err)
	}

	if err := r.UpdateContainerResources(ctx, id, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 128 << 20}}); err != nil {
		t.Fatal(err)
	}
	if got := containerStatus(t, r, id).GetResources().GetLinux().GetMemoryLimitInBytes(); got != 128<<20 {
		t.Errorf("memory limit after update %d", got)
	}

	// The image removed, the status names what the config named, as containerd's does.
	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:latest"}); err != nil {
		t.Fatal(err)
	}
	if st := containerStatus(t, r, id); st.Image.Image != imageID || st.ImageRef != imageID {
		t.Errorf("status without the image: %s %s", st.Image.Image, st.ImageRef)
	}
}

func TestExecSync(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("pod", map[string]string{AnnotationExecExitCode + ".sick": "1"})
	sbID := runPod(t, r, sb)
	ok := createAndStart(t, r, sbID, sb, "ok")
	sick := createAndStart(t, r, sbID, sb, "sick")
	idle := create(t, r, sbID, sb, "idle")

	if out, errOut, err := r.ExecSync(ctx, ok, []string{"cat", "/tmp/healthy"}, time.Second); err != nil || len(out) != 0 || len(errOut) != 0 {
		t.Errorf("ExecSync of a running container: %q %q %v", out, errOut, err)
	}
	_, _, err := r.ExecSync(ctx, sick, []string{"cat", "/tmp/healthy"}, time.Second)
	var exitErr utilexec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitStatus() != 1 {
		t.Errorf("scripted exec exit code: %v, want an ExitError with 1", err)
	}
	_, _, err = r.ExecSync(ctx, idle, []string{"true"}, time.Second)
	wantCode(t, err, codes.FailedPrecondition)
	_, _, err = r.ExecSync(ctx, "unknown", []string{"true"}, time.Second)
	wantCode(t, err, codes.NotFound)

	_, err = r.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: ok, Cmd: []string{"sh"}})
	wantCode(t, err, codes.Unimplemented)
	_, err = r.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: ok})
	wantCode(t, err, codes.Unimplemented)
	_, err = r.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: sbID})
	wantCode(t, err, codes.Unimplemented)
	wantCode(t, r.ReopenContainerLog(ctx, ok), codes.OK)
	wantCode(t, r.ReopenContainerLog(ctx, idle), codes.FailedPrecondition)
}

func TestContainerStats(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("pod", nil)
	sbID := runPod(t, r, sb)
	run := createAndStart(t, r, sbID, sb, "run")
	create(t, r, sbID, sb, "new")
	stats, err := r.ListContainerStats(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 {
		t.Fatalf("%d stats, want the running container's only", len(stats))
	}
	s := stats[0]
	if s.Attributes.Id != run || s.Attributes.Metadata.Name != "run" || s.Attributes.Labels["io.kubernetes.pod.uid"] != "uid-pod" {
		t.Errorf("attributes %v", s.Attributes)
	}
	if s.Cpu.UsageCoreNanoSeconds == nil || s.Memory.WorkingSetBytes == nil || s.WritableLayer.UsedBytes == nil || s.Cpu.Timestamp != t0.UnixNano() {
		t.Errorf("stats %v lack usage", s)
	}
	if _, err := r.ContainerStats(ctx, run); err != nil {
		t.Error(err)
	}
	_, err = r.ContainerStats(ctx, "unknown")
	wantCode(t, err, codes.NotFound)
	_, err = r.ListPodSandboxStats(ctx, nil)
	wantCode(t, err, codes.Unimplemented)
}

// TestListedViewsAreSnapshots: a relist's messages are cached until the state changes, and
// never changed once returned.
func TestListedViewsAreSnapshots(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	sb := podSandbox("pod", map[string]string{AnnotationRunSeconds: "1"})
	sbID := runPod(t, r, sb)
	id := create(t, r, sbID, sb, "job")
	list := func() *runtimeapi.Container {
		cs, err := r.ListContainers(ctx, nil)
		if err != nil || len(cs) != 1 {
			t.Fatalf("ListContainers: %v, %v", cs, err)
		}
		return cs[0]
	}
	before := list()
	if err := r.StartContainer(ctx, id); err != nil {
		t.Fatal(err)
	}
	started := list()
	clk.Step(time.Second)
	ended := list()
	if before.State != created || started.State != running || ended.State != exited {
		t.Errorf("states listed %v, %v, %v; want created, running, exited", before.State, started.State, ended.State)
	}
	if list() != ended {
		t.Error("an unchanged container was listed anew")
	}
	sbs, _ := r.ListPodSandbox(ctx, nil)
	if err := r.StopPodSandbox(ctx, sbID); err != nil {
		t.Fatal(err)
	}
	after, _ := r.ListPodSandbox(ctx, nil)
	if sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY || after[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandbox states listed %v, %v", sbs[0].State, after[0].State)
	}
}

// TestScriptedExitsInOrder: many containers with different run times, some stopped or
// removed early, each exit at its own time.
func TestScriptedExitsInOrder(t *testing.T) {
	r, clk := newRuntime(t, Options{})
	runFor := []int{7, 3, 9, 1, 5, 3, 8, 2, 6, 4} // seconds, per container
	annotations := map[string]string{}
	for i, sec := range runFor {
		annotations[fmt.Sprintf("%s.c%d", AnnotationRunSeconds, i)] = fmt.Sprint(sec)
	}
	sb := podSandbox("pod", annotations)
	sbID := runPod(t, r, sb)
	ids := make([]string, len(runFor))
	for i := range runFor {
		ids[i] = createAndStart(t, r, sbID, sb, fmt.Sprintf("c%d", i))
	}
	clk.Step(1500 * time.Millisecond) // c3 has exited
	if err := r.StopContainer(ctx, ids[2], 0); err != nil {
		t.Fatal(err)
	}
	if err := r.RemoveContainer(ctx, ids[6]); err != nil {
		t.Fatal(err)
	}
	if n := r.Counts(); n.PendingExits != 7 || n.Exited != 2 {
		t.Fatalf("after 1.5 s: %+v, want 7 pending exits and 2 exited", n)
	}
	for sec := 2; sec <= 9; sec++ {
		clk.SetTime(t0.Add(time.Duration(sec) * time.Second))
		for i, want := range runFor {
			if i == 2 || i == 6 {
				continue
			}
			st := containerStatus(t, r, ids[i])
			if gotExited := st.State == exited; gotExited != (want <= sec) {
				t.Fatalf("at %d s: c%d (run %d s) is %v", sec, i, want, st.State)
			}
			if st.State == exited && st.FinishedAt != t0.Add(time.Duration(want)*time.Second).UnixNano() {
				t.Errorf("c%d finished at %v, want its run time %d s", i, time.Duration(st.FinishedAt-t0.UnixNano()), want)
			}
		}
	}
	if st := containerStatus(t, r, ids[2]); st.ExitCode != 137 || st.FinishedAt != t0.Add(1500*time.Millisecond).UnixNano() {
		t.Errorf("the container killed early: exit %d at %d", st.ExitCode, st.FinishedAt)
	}
	if n := r.Counts(); n.PendingExits != 0 || n.Exited != 9 {
		t.Errorf("at the end: %+v", n)
	}
}

func TestMountsEchoed(t *testing.T) {
	r, _ := newRuntime(t, Options{})
	sb := podSandbox("pod", nil)
	sbID := runPod(t, r, sb)
	cfg := containerConfig(sb, "app")
	imageMount := &runtimeapi.Mount{ContainerPath: "/data", Image: &runtimeapi.ImageSpec{Image: testImage}, ImageSubPath: "sub"}
	cfg.Mounts = append(cfg.Mounts,
		&runtimeapi.Mount{ContainerPath: "/ro", HostPath: "/host/ro", Readonly: true, Propagation: runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER},
		imageMount)
	id, err := r.CreateContainer(ctx, sbID, cfg, sb)
	if err != nil {
		t.Fatal(err)
	}
	got := containerStatus(t, r, id).Mounts
	if len(got) != 3 {
		t.Fatalf("%d mounts, want 3", len(got))
	}
	if m := got[1]; m.ContainerPath != "/ro" || m.HostPath != "/host/ro" || !m.Readonly || m.Propagation != runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER {
		t.Errorf("mount %v", m)
	}
	if got[2] != imageMount {
		t.Errorf("image mount %v, want the config's own", got[2])
	}
}
