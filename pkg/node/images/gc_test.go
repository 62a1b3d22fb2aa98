package images

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/node/container"
)

type fakeGCRuntime struct {
	images  []container.Image
	pods    []*container.Pod
	removed []string
	fsDir   string
}

func (f *fakeGCRuntime) ListImages(context.Context) ([]container.Image, error) { return f.images, nil }
func (f *fakeGCRuntime) GetPods(context.Context, bool) ([]*container.Pod, error) {
	return f.pods, nil
}
func (f *fakeGCRuntime) RemoveImage(_ context.Context, img container.ImageSpec) error {
	f.removed = append(f.removed, img.Image)
	var left []container.Image
	for _, i := range f.images {
		if i.ID != img.Image {
			left = append(left, i)
		}
	}
	f.images = left
	return nil
}
func (f *fakeGCRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: f.fsDir}}}}, nil
}

func TestImageGCRemovesUnusedImagesOnly(t *testing.T) {
	rt := &fakeGCRuntime{
		fsDir: t.TempDir(),
		images: []container.Image{
			{ID: "sha256:used", RepoTags: []string{"app:1"}, Size: 10},
			{ID: "sha256:pause", RepoTags: []string{"registry.berth.local/pause:3.10"}, Size: 1},
			{ID: "sha256:pinned", RepoTags: []string{"pinned:1"}, Size: 1, Pinned: true},
			{ID: "sha256:old", RepoTags: []string{"old:1"}, Size: 5},
			{ID: "sha256:exited", RepoTags: []string{"exited:1"}, Size: 5},
		},
		pods: []*container.Pod{{Containers: []*container.Container{
			{ImageID: "sha256:used", State: container.ContainerStateRunning},
			{ImageID: "sha256:exited", State: container.ContainerStateExited},
		}}},
	}
	m, err := NewGCManager(rt, GCPolicy{HighThresholdPercent: 0, LowThresholdPercent: 0, MinAge: time.Hour}, "registry.berth.local/pause:3.10", record.NewFakeRecorder(10), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Everything is younger than MinAge: nothing goes.
	_ = m.GarbageCollect(context.Background())
	if len(rt.removed) != 0 {
		t.Fatalf("removed %v before MinAge", rt.removed)
	}
	m.policy.MinAge = 0
	_ = m.GarbageCollect(context.Background())
	if len(rt.removed) != 1 || rt.removed[0] != "sha256:old" {
		t.Errorf("removed %v, want only sha256:old (the others are in use, pinned or the sandbox image)", rt.removed)
	}
}

func TestImageGCPolicyIsChecked(t *testing.T) {
	if _, err := NewGCManager(&fakeGCRuntime{}, GCPolicy{HighThresholdPercent: 50, LowThresholdPercent: 60}, "", nil, nil); err == nil {
		t.Error("a low threshold above the high one was accepted")
	}
}
