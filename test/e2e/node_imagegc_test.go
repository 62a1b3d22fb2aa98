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
	dir := filepath.Join(workDir, "imagegc")
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

	// An image nobody uses, loaded from an archive.
	img, err := testimage.Busybox("unused")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(dir, "unused.tar")
	if err := testimage.WriteArchive(archive, "example.com/unused:1", img); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cri.ImportArchive(ctx, a.node.runtimeEndpoint(), archive); err != nil {
		t.Fatal(err)
	}
	_, is, err := cri.Connect(ctx, a.node.runtimeEndpoint())
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close(ctx)
	tags := func() string {
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
	if got := tags(); !strings.Contains(got, "example.com/unused:1") {
		t.Fatalf("the imported image is not on the node: %s", got)
	}
	eventually(t, time.Minute, "the image GC to remove the unused image", func() bool {
		if !strings.Contains(tags(), "example.com/unused:1") {
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
