package pause

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// ImageName is the name berth gives its sandbox image in the runtime. The registry host is
// not resolvable: the image is always imported, never pulled.
const ImageName = "registry.berth.local/pause:3.10"

// Image is the sandbox image for linux/amd64: one layer holding /pause (mode 0755), with
// Entrypoint ["/pause"]. It is the same, byte for byte, on every call.
func Image() (v1.Image, error) {
	var layerTar bytes.Buffer
	tw := tar.NewWriter(&layerTar)
	bin := Binary()
	if err := tw.WriteHeader(&tar.Header{Name: "pause", Mode: 0o755, Size: int64(len(bin)), Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	data := layerTar.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = []string{"/pause"}
	cfg.Config.WorkingDir = "/"
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("pause image: %w", err)
	}
	return img, nil
}
