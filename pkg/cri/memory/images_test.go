package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

func TestParseRef(t *testing.T) {
	tests := []struct {
		in, full, repo string
		digest, err    bool
	}{
		{in: "nginx", full: "docker.io/library/nginx:latest", repo: "docker.io/library/nginx"},
		{in: "nginx:1.27", full: "docker.io/library/nginx:1.27", repo: "docker.io/library/nginx"},
		{in: "bitnami/redis:7", full: "docker.io/bitnami/redis:7", repo: "docker.io/bitnami/redis"},
		{in: "index.docker.io/library/nginx", full: "docker.io/library/nginx:latest", repo: "docker.io/library/nginx"},
		{in: "registry.k8s.io/pause:3.10", full: "registry.k8s.io/pause:3.10", repo: "registry.k8s.io/pause"},
		{in: "localhost:5000/app", full: "localhost:5000/app:latest", repo: "localhost:5000/app"},
		{in: "localhost/app:v1", full: "localhost/app:v1", repo: "localhost/app"},
		{in: "nginx:1.27@sha256:abcd", full: "docker.io/library/nginx@sha256:abcd", repo: "docker.io/library/nginx", digest: true},
		{in: "", err: true},
		{in: "Nginx", err: true},
		{in: "nginx:", err: true},
		{in: "nginx@abcd", err: true},
		{in: "a b", err: true},
	}
	for _, tt := range tests {
		got, err := parseRef(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("parseRef(%q): %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if want := (ref{full: tt.full, repo: tt.repo, digest: tt.digest}); !tt.err && got != want {
			t.Errorf("parseRef(%q) = %+v, want %+v", tt.in, got, want)
		}
	}
}

func TestPullImage(t *testing.T) {
	r, _ := newRuntime(t, Options{ImageSize: 7 << 20})
	id, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !isImageID(id) {
		t.Errorf("image ref %q is not sha256:<64 hex>", id)
	}
	again, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "docker.io/library/nginx:1.27"}, nil, nil)
	if err != nil || again != id {
		t.Errorf("pulling the same image again: %q, %v; want %q", again, err, id)
	}
	other, _ := newRuntime(t, Options{})
	if elsewhere, _ := other.PullImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, nil, nil); elsewhere != id {
		t.Errorf("the same image on another node has ref %q, want the stable %q", elsewhere, id)
	}

	for _, name := range []string{"nginx:1.27", "docker.io/library/nginx:1.27", id} {
		resp, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: name}, false)
		if err != nil || resp.Image == nil {
			t.Fatalf("ImageStatus(%q): %v, %v", name, resp, err)
		}
		img := resp.Image
		if img.Id != id || img.Size != 7<<20 || len(img.RepoTags) != 1 || img.RepoTags[0] != "docker.io/library/nginx:1.27" ||
			len(img.RepoDigests) != 1 || !strings.HasPrefix(img.RepoDigests[0], "docker.io/library/nginx@sha256:") || img.Pinned {
			t.Errorf("ImageStatus(%q) = %v", name, img)
		}
	}

	resp, err := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.28"}, false)
	if err != nil || resp.Image != nil {
		t.Errorf("ImageStatus of an absent image: %v, %v; want no image and no error", resp, err)
	}
	_, err = r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "Bad"}, false)
	wantCode(t, err, codes.InvalidArgument)

	list, err := r.ListImages(ctx, nil)
	if err != nil || len(list) != 3 { // pause, busybox, nginx
		t.Fatalf("ListImages: %d images, %v", len(list), err)
	}
	fs, err := r.ImageFsInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.ImageFilesystems[0].UsedBytes.Value; got != 3*(7<<20) {
		t.Errorf("image fs used %d, want the sum of the sizes %d", got, 3*(7<<20))
	}
	if fs.ImageFilesystems[0].FsId.Mountpoint != "/" {
		t.Errorf("mountpoint %q", fs.ImageFilesystems[0].FsId.Mountpoint)
	}

	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: id}); err != nil {
		t.Fatal(err)
	}
	if resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}, false); resp.Image != nil {
		t.Error("image still present after RemoveImage")
	}
	if err := r.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: "nginx:1.27"}); err != nil {
		t.Errorf("RemoveImage of an absent image: %v, want nil", err)
	}
}

func TestPullImageFailures(t *testing.T) {
	uid := int64(65532)
	registry := func(ref string) Pull {
		switch {
		case strings.Contains(ref, "unavailable"):
			return Pull{Err: errors.New("RegistryUnavailable: connection refused")}
		case strings.Contains(ref, "nonroot"):
			return Pull{Size: 1, UID: &uid}
		}
		return DefaultRegistry(0, 1)(ref)
	}
	r, _ := newRuntime(t, Options{Registry: registry})
	tests := []struct {
		image string
		want  codes.Code
	}{
		{"example.com/fail-pull:1", codes.NotFound},
		{"example.com/unavailable:1", codes.Unknown},
		{"sha256:" + strings.Repeat("ab", 32), codes.NotFound}, // an id names nothing to pull
		{"Bad", codes.InvalidArgument},
		{"example.com/nonroot:1", codes.OK},
	}
	for _, tt := range tests {
		_, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: tt.image}, nil, nil)
		wantCode(t, err, tt.want)
	}
	if !strings.Contains(mustPullErr(r, "example.com/fail-pull:1").Error(), "not found") {
		t.Error("a failed pull does not say the image was not found")
	}
	resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "example.com/nonroot:1"}, false)
	if resp.GetImage().GetUid().GetValue() != uid {
		t.Errorf("image uid %v, want %d", resp.GetImage().GetUid(), uid)
	}
}

func mustPullErr(r *Runtime, image string) error {
	_, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: image}, nil, nil)
	return err
}

func TestPullImageDelay(t *testing.T) {
	r, clk := newRuntime(t, Options{PullDelay: 10 * time.Second})
	done := make(chan error, 1)
	go func() {
		_, err := r.PullImage(ctx, &runtimeapi.ImageSpec{Image: "redis"}, nil, nil)
		done <- err
	}()
	waitForWaiter(t, clk)
	clk.Step(9 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("pull finished before its delay: %v", err)
	case <-time.After(10 * time.Millisecond):
	}
	if resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "redis"}, false); resp.Image != nil {
		t.Error("image present while it is being pulled")
	}
	clk.Step(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "redis"}, false); resp.Image == nil {
		t.Error("image absent after its pull")
	}
}

func TestPullImageCancelled(t *testing.T) {
	r, clk := newRuntime(t, Options{PullDelay: time.Minute})
	pullCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := r.PullImage(pullCtx, &runtimeapi.ImageSpec{Image: "redis"}, nil, nil)
		done <- err
	}()
	waitForWaiter(t, clk)
	cancel()
	wantCode(t, <-done, codes.Canceled)
	if clk.HasWaiters() {
		t.Error("the cancelled pull left its timer behind")
	}
	if resp, _ := r.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: "redis"}, false); resp.Image != nil {
		t.Error("a cancelled pull stored the image")
	}
}

func waitForWaiter(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("the pull never waited on the clock")
		}
		time.Sleep(time.Millisecond)
	}
}
