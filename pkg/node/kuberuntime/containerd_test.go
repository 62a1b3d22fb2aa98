package kuberuntime_test

// The integration tests run a private containerd (pkg/cri/containerd/containerdtest: its
// own state, socket, bridge and /24, restrict_oom_score_adj, cgroupfs, berth's sandbox
// image) and pull a busybox image from a registry on loopback (pkg/cri/testimage), so that
// the real pull path runs.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"testing"
	"time"

	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	internalapi "k8s.io/cri-api/pkg/apis"

	"github.com/berth-cluster/berth/pkg/cri"
	"github.com/berth-cluster/berth/pkg/cri/containerd/containerdtest"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

type testContainerd struct {
	dir     string
	podCIDR *net.IPNet
	runtime internalapi.RuntimeService
	images  internalapi.ImageManagerService
	// busybox is the busybox image in the loopback registry.
	busybox string
}

// startContainerd starts containerd and a registry with busybox for one test; both stop,
// with the pods the test left, when it ends.
func startContainerd(t *testing.T) *testContainerd {
	t.Helper()
	p := containerdtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, is, err := cri.Connect(ctx, p.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rs.Close(context.Background())
		is.Close(context.Background())
	})
	_, podCIDR, err := net.ParseCIDR(p.Config().PodCIDR)
	if err != nil {
		t.Fatal(err)
	}
	img, err := testimage.Busybox("h2")
	if err != nil {
		t.Fatal(err)
	}
	host := testimage.Serve(t, map[string]gcrv1.Image{"busybox:h2": img})
	return &testContainerd{dir: p.Config().StateDir, podCIDR: podCIDR, runtime: rs, images: is, busybox: host + "/busybox:h2"}
}

func randomHex(t *testing.T, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)[:n]
}
