package pause

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

func TestImage(t *testing.T) {
	img, err := Image()
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("%d layers, %v; want 1", len(layers), err)
	}
	tr := tar.NewReader(mutate.Extract(img))
	var found bool
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name != "pause" {
			t.Errorf("unexpected file %s", h.Name)
			continue
		}
		found = true
		if h.Mode != 0o755 || h.Uid != 0 {
			t.Errorf("pause: mode %o uid %d", h.Mode, h.Uid)
		}
		data, _ := io.ReadAll(tr)
		if !bytes.Equal(data, Binary()) {
			t.Error("pause differs from Binary()")
		}
	}
	if !found {
		t.Fatal("no /pause")
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || len(cfg.Config.Entrypoint) != 1 || cfg.Config.Entrypoint[0] != "/pause" {
		t.Errorf("config: os %s arch %s entrypoint %v", cfg.OS, cfg.Architecture, cfg.Config.Entrypoint)
	}
	again, _ := Image()
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("Image is not deterministic: %s, %s", d1, d2)
	}
}
