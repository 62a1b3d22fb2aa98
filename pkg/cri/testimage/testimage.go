// Package testimage builds small container images for tests from the machine's static
// busybox (Debian's busybox-static, /bin/busybox) and serves them from a registry on
// loopback, so that tests exercise the runtime's real pull path (seed 001's startContainer:
// pull image → create → start) with no network.
package testimage

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BusyboxPath is the static busybox the images are made of.
const BusyboxPath = "/bin/busybox"

// TagLabel is the image label holding the tag Busybox was given.
const TagLabel = "berth.test/tag"

// Busybox is a linux/amd64 image of the machine's static busybox: /bin/busybox with a
// /bin/<applet> link for each of its applets (sh, sleep, echo, cat, ...), /etc/passwd and
// /etc/group with root and nobody, /tmp, and Cmd ["sh"]. The tag is written to
// /etc/image-tag and to the label TagLabel, so that different tags make different images
// (different IDs) that share the busybox layer.
func Busybox(tag string) (v1.Image, error) {
	base, err := busyboxLayer()
	if err != nil {
		return nil, err
	}
	tagLayer, err := layer([]file{{name: "etc/image-tag", mode: 0o644, data: []byte(tag + "\n")}})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, base, tagLayer)
	if err != nil {
		return nil, fmt.Errorf("busybox image: %w", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("busybox image: %w", err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Cmd = []string{"sh"}
	cfg.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	cfg.Config.WorkingDir = "/"
	cfg.Config.Labels = map[string]string{TagLabel: tag}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return nil, fmt.Errorf("busybox image: %w", err)
	}
	return img, nil
}

// AddFile returns img with one more layer holding a regular file at path (absolute, in the
// image) with mode: a test's own program on top of busybox.
func AddFile(img v1.Image, path string, mode int64, data []byte) (v1.Image, error) {
	l, err := layer([]file{{name: strings.TrimPrefix(path, "/"), mode: mode, data: data}})
	if err != nil {
		return nil, err
	}
	img, err = mutate.AppendLayers(img, l)
	if err != nil {
		return nil, fmt.Errorf("adding %s to the image: %w", path, err)
	}
	return img, nil
}

var busybox struct {
	once  sync.Once
	layer v1.Layer
	err   error
}

// busyboxLayer is the root file system layer, built once per process.
func busyboxLayer() (v1.Layer, error) {
	busybox.once.Do(func() {
		bin, err := os.ReadFile(BusyboxPath)
		if err != nil {
			busybox.err = fmt.Errorf("busybox image needs busybox-static: %w", err)
			return
		}
		out, err := exec.Command(BusyboxPath, "--list").Output()
		if err != nil {
			busybox.err = fmt.Errorf("busybox --list: %w", err)
			return
		}
		applets := strings.Fields(string(out))
		sort.Strings(applets)
		files := []file{
			{name: "bin/", mode: 0o755},
			{name: "dev/", mode: 0o755},
			{name: "etc/", mode: 0o755},
			{name: "proc/", mode: 0o555},
			{name: "root/", mode: 0o700},
			{name: "sys/", mode: 0o555},
			{name: "tmp/", mode: 0o1777},
			{name: "usr/", mode: 0o755},
			{name: "usr/bin/", mode: 0o755},
			{name: "var/", mode: 0o755},
			{name: "bin/busybox", mode: 0o755, data: bin},
			{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
			{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnogroup:x:65534:\n")},
		}
		for _, a := range applets {
			if a != "busybox" {
				files = append(files, file{name: "bin/" + a, link: "busybox"})
			}
		}
		busybox.layer, busybox.err = layer(files)
	})
	return busybox.layer, busybox.err
}

// file is one entry of a layer: a directory (name ends in "/"), a symlink (link set) or a
// regular file.
type file struct {
	name string
	mode int64
	data []byte
	link string
}

// layer makes a layer of files, owned by root, with zero times.
func layer(files []file) (v1.Layer, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Format: tar.FormatPAX}
		switch {
		case strings.HasSuffix(f.name, "/"):
			h.Typeflag = tar.TypeDir
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("image layer: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	data := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	return l, nil
}

// Serve starts a registry on 127.0.0.1 holding images (keyed by repository:tag, e.g.
// "busybox:1" or "team/app:v2") and returns its host ("127.0.0.1:PORT"): pull
// host+"/busybox:1". Runtimes reach loopback registries over plain HTTP. The registry stops
// when the test ends.
func Serve(t testing.TB, images map[string]v1.Image) (host string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host = strings.TrimPrefix(srv.URL, "http://")
	for ref, img := range images {
		if err := Push(host, ref, img); err != nil {
			t.Fatal(err)
		}
	}
	return host
}

// ServeForever is Serve for a registry that lives as long as the process (one that several
// tests share).
func ServeForever(images map[string]v1.Image) (host string, err error) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	host = strings.TrimPrefix(srv.URL, "http://")
	for ref, img := range images {
		if err := Push(host, ref, img); err != nil {
			srv.Close()
			return "", err
		}
	}
	return host, nil
}

// Push puts img into the registry at host as ref (repository:tag).
func Push(host, ref string, img v1.Image) error {
	tag, err := name.NewTag(host+"/"+ref, name.Insecure)
	if err != nil {
		return fmt.Errorf("push %s: %w", ref, err)
	}
	if err := remote.Write(tag, img); err != nil {
		return fmt.Errorf("push %s: %w", tag, err)
	}
	return nil
}

// WriteArchive writes img as a docker archive (the format of `docker save`) named ref.
func WriteArchive(path, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteOCIArchive writes img as a tar of an OCI image layout whose index names it ref (the
// org.opencontainers.image.ref.name annotation; containerd takes a full reference there as
// the image's name).
func WriteOCIArchive(path, ref string, img v1.Image) error {
	dir, err := os.MkdirTemp("", "berth-oci-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := l.AppendImage(img, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref})); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return tarDir(path, dir)
}

// tarDir writes the regular files and directories under dir to a tar at path.
func tarDir(path, dir string) error {
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(out)
	err = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			h.Name += "/"
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if closeErr := out.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
