package cri_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd"
	"github.com/berth-cluster/berth/pkg/cri/containerd/containerdtest"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

func connect(t *testing.T, endpoint string) (internalapi.RuntimeService, internalapi.ImageManagerService) {
	t.Helper()
	ctx := context.Background()
	rs, is, err := cri.Connect(ctx, endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close(ctx); is.Close(ctx) })
	return rs, is
}

// runToCompletion runs command in a container of image in a new pod and returns its log.
func runToCompletion(t *testing.T, rs internalapi.RuntimeService, image string, command ...string) string {
	t.Helper()
	ctx := context.Background()
	logDir := t.TempDir()
	sbConfig := containerdtest.PodSandboxConfig("run", logDir)
	sb, err := rs.RunPodSandbox(ctx, sbConfig, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	id, err := rs.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
		Image:    &runtimeapi.ImageSpec{Image: image},
		Command:  command,
		LogPath:  "c.log",
	}, sbConfig)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := rs.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := rs.ContainerStatus(ctx, id, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Status.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			if st.Status.ExitCode != 0 {
				t.Errorf("exit code %d, reason %q", st.Status.ExitCode, st.Status.Reason)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("container still %v", st.Status.State)
		}
		time.Sleep(50 * time.Millisecond)
	}
	data, err := os.ReadFile(filepath.Join(logDir, "c.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestEnsureSandboxImage(t *testing.T) {
	// containerdtest imports the sandbox image only when the config names none.
	const name = "registry.berth.local/test/pause:1"
	p := containerdtest.StartWith(t, containerd.Config{PodCIDR: containerdtest.FreePodCIDR(t), SandboxImage: name})
	ctx := context.Background()
	_, is := connect(t, p.Endpoint())
	for i := 0; i < 2; i++ { // the second call finds it
		if err := cri.EnsureSandboxImage(ctx, p.Endpoint(), name); err != nil {
			t.Fatal(err)
		}
		st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: name}, false)
		if err != nil {
			t.Fatal(err)
		}
		if st.Image == nil {
			t.Fatalf("%s missing after EnsureSandboxImage", name)
		}
	}
}

func TestImportAndRunBusybox(t *testing.T) {
	p := containerdtest.Start(t)
	ctx := context.Background()
	rs, is := connect(t, p.Endpoint())
	img, err := testimage.Busybox("1")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "busybox.tar")
	if err := testimage.WriteArchive(file, "busybox:1", img); err != nil {
		t.Fatal(err)
	}
	names, err := cri.ImportArchive(ctx, p.Endpoint(), file)
	if err != nil {
		t.Fatal(err)
	}
	const want = "docker.io/library/busybox:1"
	if len(names) != 1 || names[0] != want {
		t.Fatalf("imported %q, want [%s]", names, want)
	}
	list, err := is.ListImages(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, i := range list {
		for _, tag := range i.RepoTags {
			found = found || tag == want
		}
	}
	if !found {
		t.Fatalf("ListImages lacks %s: %v", want, list)
	}
	if log := runToCompletion(t, rs, "busybox:1", "echo", "hi"); !strings.Contains(log, " stdout F hi\n") {
		t.Errorf("log %q lacks hi", log)
	}
}

func TestPullFromLoopbackRegistry(t *testing.T) {
	p := containerdtest.Start(t)
	ctx := context.Background()
	rs, is := connect(t, p.Endpoint())
	img, err := testimage.Busybox("2")
	if err != nil {
		t.Fatal(err)
	}
	host := testimage.Serve(t, map[string]v1.Image{"busybox:2": img, "team/app:v1": img})
	_, port, _ := net.SplitHostPort(host)
	for _, ref := range []string{host + "/busybox:2", "localhost:" + port + "/team/app:v1"} {
		t.Run(ref, func(t *testing.T) {
			id, err := is.PullImage(ctx, &runtimeapi.ImageSpec{Image: ref}, nil, nil)
			if err != nil {
				t.Fatalf("PullImage: %v", err)
			}
			st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false)
			if err != nil || st.Image == nil || st.Image.Id != id {
				t.Fatalf("ImageStatus(%s) = %v, %v; want id %s", ref, st, err, id)
			}
			if log := runToCompletion(t, rs, ref, "cat", "/etc/image-tag"); !strings.Contains(log, " stdout F 2\n") {
				t.Errorf("log %q lacks the tag", log)
			}
		})
	}
}

func TestImportOCIArchive(t *testing.T) {
	p := containerdtest.Start(t)
	ctx := context.Background()
	_, is := connect(t, p.Endpoint())
	img, err := testimage.Busybox("oci")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "oci.tar")
	const ref = "registry.example/team/busybox:oci"
	if err := testimage.WriteOCIArchive(file, ref, img); err != nil {
		t.Fatal(err)
	}
	names, err := cri.ImportArchive(ctx, p.Endpoint(), file)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != ref {
		t.Fatalf("imported %q, want [%s]", names, ref)
	}
	if st, err := is.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: ref}, false); err != nil || st.Image == nil {
		t.Fatalf("ImageStatus(%s) = %v, %v", ref, st, err)
	}
}

func TestImportArchiveErrors(t *testing.T) {
	ctx := context.Background()
	archive := filepath.Join(t.TempDir(), "a.tar")
	if err := os.WriteFile(archive, []byte("not a tar"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := containerdtest.Start(t)
	sock := p.Socket()
	tests := []struct {
		name, endpoint, file, path, wantErr string
	}{
		{name: "missing file", endpoint: "/nonexistent.sock", file: "/nonexistent.tar", wantErr: "no such file"},
		{name: "not unix", endpoint: "tcp://127.0.0.1:1", file: archive, wantErr: "not a unix socket"},
		{name: "no containerd", endpoint: "/nonexistent.sock", file: archive, wantErr: "no containerd socket"},
		{name: "no ctr", endpoint: sock, file: archive, path: t.TempDir(), wantErr: "ctr command"},
		{name: "not an archive", endpoint: sock, file: archive, wantErr: "ctr images import"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.path != "" {
				t.Setenv("PATH", tt.path)
			}
			_, err := cri.ImportArchive(ctx, tt.endpoint, tt.file)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"/run/containerd/containerd.sock":        "unix:///run/containerd/containerd.sock",
		"unix:///run/containerd/containerd.sock": "unix:///run/containerd/containerd.sock",
		"tcp://127.0.0.1:5000":                   "tcp://127.0.0.1:5000",
	} {
		if got := cri.NormalizeEndpoint(in); got != want {
			t.Errorf("NormalizeEndpoint(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestConnectFailsFast(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	if _, _, err := cri.Connect(ctx, "unix:///nonexistent/containerd.sock"); err == nil {
		t.Fatal("Connect to nothing succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Connect to nothing took %v", d)
	}
}
