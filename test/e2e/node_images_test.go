package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

// TestNodeStatusImages: an image imported into the node's runtime shows in the Node's
// status.images within the kubelet's bounds: the image list is refreshed every 30 s and sent
// with the next status update (every 10 s).
func TestNodeStatusImages(t *testing.T) {
	t.Parallel()
	c, n := nodeCluster(t)
	const tag = "example.com/status-images:1"
	img, err := testimage.Busybox("status-images")
	if err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(workDir, "status-images.tar")
	if err := testimage.WriteArchive(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := cri.ImportArchive(ctx, n.runtimeEndpoint(), archive); err != nil {
		t.Fatal(err)
	}
	imported := time.Now()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, is, err := cri.Connect(ctx, n.runtimeEndpoint()); err == nil {
			_ = is.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: tag})
			is.Close(ctx)
		}
	})
	names := func() string {
		return c.jsonpath(t, "default", "node/"+n.name, "{.status.images[*].names}")
	}
	eventually(t, 30*time.Second+10*time.Second+20*time.Second, "the imported image in the node's status", func() bool {
		if strings.Contains(names(), tag) {
			return true
		}
		time.Sleep(time.Second)
		return false
	})
	t.Logf("the imported image was in status.images %v after the import", time.Since(imported).Round(time.Second))
}
