package testimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// files lists the flattened file system of img by name.
func files(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = h
	}
}

func TestBusybox(t *testing.T) {
	a, err := Busybox("a")
	if err != nil {
		t.Fatal(err)
	}
	fs := files(t, a)
	if h := fs["bin/busybox"]; h == nil || h.Mode&0o111 == 0 {
		t.Errorf("bin/busybox: %+v", h)
	}
	for _, applet := range []string{"sh", "sleep", "echo", "cat", "wget", "nc", "true"} {
		if h := fs["bin/"+applet]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "busybox" {
			t.Errorf("bin/%s: %+v", applet, h)
		}
	}
	for _, f := range []string{"etc/passwd", "etc/group", "etc/image-tag"} {
		if fs[f] == nil {
			t.Errorf("%s missing", f)
		}
	}
	if h := fs["tmp"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode&0o1777 != 0o1777 {
		t.Errorf("tmp: %+v", h)
	}
	cfg, err := a.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != "amd64" || len(cfg.Config.Cmd) != 1 || cfg.Config.Cmd[0] != "sh" || cfg.Config.Labels[TagLabel] != "a" {
		t.Errorf("config: %+v", cfg)
	}

	// Another tag: another image, the same busybox layer.
	b, err := Busybox("b")
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da == db {
		t.Error("tags a and b give the same image")
	}
	la, _ := a.Layers()
	lb, _ := b.Layers()
	d1, _ := la[0].Digest()
	d2, _ := lb[0].Digest()
	if d1 != d2 {
		t.Error("the busybox layer differs between tags")
	}
	if again, _ := Busybox("a"); again != nil {
		if d, _ := again.Digest(); d != da {
			t.Error("Busybox is not deterministic")
		}
	}
}

func TestServe(t *testing.T) {
	img, err := Busybox("served")
	if err != nil {
		t.Fatal(err)
	}
	host := Serve(t, map[string]v1.Image{"busybox:served": img, "team/app:v1": img})
	want, _ := img.Digest()
	for _, ref := range []string{"busybox:served", "team/app:v1"} {
		r, err := name.ParseReference(host + "/" + ref)
		if err != nil {
			t.Fatal(err)
		}
		got, err := remote.Image(r)
		if err != nil {
			t.Fatalf("pull %s: %v", r, err)
		}
		if d, _ := got.Digest(); d != want {
			t.Errorf("%s: digest %s, want %s", ref, d, want)
		}
	}
}

func TestWriteArchive(t *testing.T) {
	img, err := Busybox("archived")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "img.tar")
	if err := WriteArchive(path, "example.com/busybox:archived", img); err != nil {
		t.Fatal(err)
	}
	tag, _ := name.NewTag("example.com/busybox:archived")
	got, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := got.Digest(); d == (v1.Hash{}) {
		t.Error("no digest")
	}
	oci := filepath.Join(t.TempDir(), "oci.tar")
	if err := WriteOCIArchive(oci, "example.com/busybox:oci", img); err != nil {
		t.Fatal(err)
	}
	var sawIndex bool
	tr := tar.NewReader(mustOpen(t, oci))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		sawIndex = sawIndex || h.Name == "index.json"
	}
	if !sawIndex {
		t.Error("the OCI archive has no index.json at its root")
	}
}

func mustOpen(t *testing.T, path string) io.Reader {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(data)
}
