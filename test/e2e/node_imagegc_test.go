package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/pause"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

// TestNodeImageGC: with the image GC's thresholds set low, the node removes an image no
// container uses, and keeps the one a running pod uses and the sandbox image.
func TestNodeImageGC(t *testing.T) {
	t.Parallel()
	inUse := busyboxImage(t)
	c, a := ownNode(t, "imagegc", "imageGCHighThresholdPercent: 1\nimageGCLowThresholdPercent: 0\nimageMinimumGCAge: 1s\n", "--image-gc-period", "2s")
	ns := c.newNamespace(t)
	c.mustIn(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: user}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: c, image: %s, command: ["sleep", "3600"]}
`, inUse), "apply", "-n", ns, "-f", "-")
	c.waitPhase(t, ns, "user", "Running")

	unused := importUnusedImage(t, a, "imagegc")
	tags := func() string { return imageTags(t, a) }
	eventually(t, time.Minute, "the image GC to remove the unused image", func() bool {
		if !strings.Contains(tags(), unused) {
			return true
		}
		time.Sleep(500 * time.Millisecond)
		return false
	})
	got := tags()
	for _, keep := range []string{inUse, pause.ImageName} {
		if !strings.Contains(got, keep) {
			t.Errorf("the image GC removed %s (left: %s)", keep, got)
		}
	}
	c.waitEvent(t, "default", a.node.name, "FreeDiskSpaceFailed", "Failed to garbage collect required amount of images")
	if got := c.jsonpath(t, ns, "pod/user", "{.status.phase} {.status.containerStatuses[0].restartCount}"); got != "Running 0" {
		t.Errorf("the pod using the kept image: %q, want Running 0", got)
	}
}

// importUnusedImage loads an image no pod uses into the node's runtime from an archive and
// returns its tag.
func importUnusedImage(t *testing.T, a *nodeAgent, dirName string) string {
	t.Helper()
	const tag = "example.com/unused:1"
	img, err := testimage.Busybox("unused")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(workDir, dirName, "unused.tar")
	if err := testimage.WriteArchive(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cri.ImportArchive(ctx, a.node.runtimeEndpoint(), archive); err != nil {
		t.Fatal(err)
	}
	if got := imageTags(t, a); !strings.Contains(got, tag) {
		t.Fatalf("the imported image is not on the node: %s", got)
	}
	return tag
}

// imageTags are the tags of every image in the node's runtime, space-separated.
func imageTags(t *testing.T, a *nodeAgent) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, is, err := cri.Connect(ctx, a.node.runtimeEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close(ctx)
	l, err := is.ListImages(ctx, nil)
	if err != nil {
		t.Fatalf("listing images: %v", err)
	}
	var all []string
	for _, i := range l {
		all = append(all, i.RepoTags...)
	}
	return strings.Join(all, " ")
}
