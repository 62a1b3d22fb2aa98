package logs

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeRuntime answers what the log manager asks; reopening creates an empty live file.
type fakeRuntime struct {
	internalapi.RuntimeService
	path    string
	reopens int
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return []*runtimeapi.Container{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING}}, nil
}

func (f *fakeRuntime) ContainerStatus(context.Context, string, bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: "c1", LogPath: f.path}}, nil
}

func (f *fakeRuntime) ReopenContainerLog(context.Context, string) error {
	f.reopens++
	return os.WriteFile(f.path, nil, 0o640)
}

func TestRotationKeepsMaxFilesAndCompresses(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rt := &fakeRuntime{path: path}
	m, err := NewManager(rt, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	m.now = func() time.Time { return clock }
	for i := 0; i < 4; i++ {
		if err := os.WriteFile(path, []byte(strings.Repeat("x", 20)), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := m.rotateLogs(context.Background()); err != nil {
			t.Fatal(err)
		}
		clock = clock.Add(time.Minute)
	}
	if rt.reopens != 4 {
		t.Errorf("%d reopens, want 4", rt.reopens)
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	want := []string{"0.log", "0.log.20261129-120200.gz", "0.log.20261129-120300"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("files %v, want %v (the live file, one compressed, the newest rotated)", names, want)
	}
	// A small log is left alone.
	if err := m.rotateLogs(context.Background()); err != nil || rt.reopens != 4 {
		t.Errorf("a log under the limit was rotated (reopens %d, err %v)", rt.reopens, err)
	}
}

func TestManagerChecksItsLimits(t *testing.T) {
	if _, err := NewManager(nil, 10, 1); err == nil {
		t.Error("maxFiles 1 was accepted")
	}
	if _, err := NewManager(nil, 0, 5); err == nil {
		t.Error("maxSize 0 was accepted")
	}
}
