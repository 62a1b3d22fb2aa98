package cri

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/berth-cluster/berth/pkg/cri/pause"
)

// CRINamespace is the containerd namespace the CRI plugin keeps its images and containers in.
const CRINamespace = "k8s.io"

// ErrNoCtr says that importing needs containerd's ctr command, which is missing.
var ErrNoCtr = errors.New("importing images into containerd needs its ctr command, which is not on PATH (it ships in the containerd package)")

// EnsureSandboxImage makes sure the runtime on endpoint has berth's sandbox image under
// imageName (pause.ImageName unless berth is told otherwise): if the CRI image service
// lacks it, berth writes pause.Image as a docker archive and imports it into containerd's
// k8s.io namespace. The CRI has no import call, so this is containerd-specific (ctr).
func EnsureSandboxImage(ctx context.Context, endpoint, imageName string) error {
	logger := klog.FromContext(ctx)
	runtime, images, err := Connect(ctx, endpoint)
	if err != nil {
		return err
	}
	_ = runtime.Close(ctx)
	defer images.Close(ctx)
	if ok, err := hasImage(ctx, images, imageName); err != nil || ok {
		return err
	}
	img, err := pause.Image()
	if err != nil {
		return err
	}
	tag, err := name.NewTag(imageName)
	if err != nil {
		return fmt.Errorf("sandbox image name: %w", err)
	}
	dir, err := os.MkdirTemp("", "berth-pause-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "pause.tar")
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("write the sandbox image: %w", err)
	}
	if _, err := ImportArchive(ctx, endpoint, file); err != nil {
		return fmt.Errorf("import the sandbox image %s: %w", imageName, err)
	}
	ok, err := hasImage(ctx, images, imageName)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("sandbox image %s imported but the CRI image service does not list it", imageName)
	}
	logger.Info("Imported the sandbox image", "image", imageName, "endpoint", endpoint)
	return nil
}

// imageStatuser is the part of the CRI image service hasImage needs.
type imageStatuser interface {
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
}

func hasImage(ctx context.Context, images imageStatuser, imageName string) (bool, error) {
	resp, err := images.ImageStatus(ctx, &runtimeapi.ImageSpec{Image: imageName}, false)
	if err != nil {
		return false, fmt.Errorf("image status of %s: %w", imageName, err)
	}
	return resp.GetImage() != nil, nil
}

// unpackedLine is how ctr reports each image it imported: "unpacking NAME (DIGEST)...done".
var unpackedLine = regexp.MustCompile(`(?m)^unpacking (\S+) \((sha256:[0-9a-f]{64})\)\.\.\.done`)

// ImportArchive loads an image archive (docker archive as written by `docker save`, or OCI
// image layout tar) into the containerd on endpoint, in its CRI namespace, unpacked for the
// overlayfs snapshotter, and returns the names the images got (short docker names are
// normalized: busybox:1 becomes docker.io/library/busybox:1). It runs
// `ctr --address SOCKET -n k8s.io images import FILE`: the CRI has no import call.
func ImportArchive(ctx context.Context, endpoint, file string) ([]string, error) {
	socket, err := socketPath(endpoint)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(file); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	if _, err := os.Stat(socket); err != nil {
		return nil, fmt.Errorf("import: no containerd socket: %w", err)
	}
	ctr, err := exec.LookPath("ctr")
	if err != nil {
		return nil, ErrNoCtr
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, ctr, "--address", socket, "--namespace", CRINamespace,
		"images", "import", "--snapshotter", "overlayfs", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("ctr images import %s: %w: %s", file, err, strings.TrimSpace(stderr.String()))
	}
	var names []string
	for _, m := range unpackedLine.FindAllStringSubmatch(stdout.String(), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("ctr images import %s imported no named image: %s", file, strings.TrimSpace(stdout.String()+" "+stderr.String()))
	}
	klog.FromContext(ctx).V(2).Info("Imported images", "file", file, "images", names)
	return names, nil
}
