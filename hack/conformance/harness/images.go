package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The suite's images, built offline under the names `e2e.test --list-images` prints, each
// as close to upstream's as these machines allow:
//
//   - busybox: upstream's busybox 1.37.0, built static by hack/conformance.sh, with an applet
//     link for each applet, as upstream's image has;
//   - agnhost, nonroot, nonewprivs, nginx, glibc-dns-testing: a Debian bookworm root file
//     system (debootstrap, with the tools upstream's images add: dnsutils, curl, netcat,
//     iproute2, socat, nginx) and the upstream binaries built from k8s.io/kubernetes
//     v1.37.2 (agnhost, nnp);
//   - sample-apiserver (the Aggregator test's): that Debian root file system and
//     k8s.io/sample-apiserver v0.37.2, static, at /sample-apiserver as upstream's image has it
//     (upstream's is older, v0.33.7 on Alpine; the test only needs its wardle.example.com API);
//   - nautilus (kubectl's Update Demo): agnhost's image and the module's nautilus data.json;
//   - etcd (beside the sample-apiserver): that Debian root file system and the harness's etcd
//     (upstream v3.7.0) at /usr/local/bin/etcd;
//   - pause: a static pause of our own (hack/conformance/pause).
//
// The images the listed tests do not use (CSI sidecars, the node-perf workloads, kitten, which
// only the image-volume test pulling with Always uses) are not built; CONFORMANCE.md
// says which tests that excludes.

const e2eRegistry = "registry.k8s.io/e2e-test-images/"

var bashPath = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}

func imagesCmd(args []string) error {
	var bookworm, busybox, bin, out, agnhostSrc string
	if err := flags("images", args, func(fs *flag.FlagSet) {
		fs.StringVar(&bookworm, "bookworm", "", "tar of the Debian bookworm root file system")
		fs.StringVar(&busybox, "busybox", "/bin/busybox", "static busybox")
		fs.StringVar(&bin, "bin", "", "directory of agnhost, nonewprivs, sample-apiserver and pause (static) and etcd")
		fs.StringVar(&out, "out", "", "docker archive to write")
		fs.StringVar(&agnhostSrc, "agnhost-src", "", "k8s.io/kubernetes/test/images/agnhost's source (its porter certificate)")
	}); err != nil {
		return err
	}
	debian, err := tarball.LayerFromFile(bookworm)
	if err != nil {
		return fmt.Errorf("bookworm layer: %w", err)
	}
	bb, err := busyboxLayer(busybox)
	if err != nil {
		return err
	}
	agnhost, err := agnhostLayer(bookworm, bin+"/agnhost", agnhostSrc)
	if err != nil {
		return err
	}
	nnp, err := fileLayer(bin+"/nonewprivs", "usr/local/bin/nnp", 0o4755)
	if err != nil {
		return err
	}
	pause, err := fileLayer(bin+"/pause", "pause", 0o755)
	if err != nil {
		return err
	}
	sampleAPIServer, err := fileLayer(bin+"/sample-apiserver", "sample-apiserver", 0o755)
	if err != nil {
		return err
	}
	etcd, err := fileLayer(bin+"/etcd", "usr/local/bin/etcd", 0o755)
	if err != nil {
		return err
	}
	// kubectl's Update Demo tests serve nautilus' /data.json from agnhost's test-webserver;
	// the module's source has the JSON, not the picture, which no test reads.
	nautilus, err := fileLayer(agnhostSrc+"/../nautilus/html/data.json", "data.json", 0o644)
	if err != nil {
		return err
	}
	type spec struct {
		refs   []string
		layers []v1.Layer
		config v1.Config
	}
	specs := []spec{
		{[]string{e2eRegistry + "busybox:1.37.0-2", e2eRegistry + "busybox:1.36.1-1"}, []v1.Layer{bb},
			v1.Config{Cmd: []string{"sh"}, Env: bashPath}},
		{[]string{e2eRegistry + "agnhost:2.66.1", e2eRegistry + "agnhost:2.55"}, []v1.Layer{debian, agnhost},
			v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"pause"}, Env: bashPath}},
		{[]string{"registry.k8s.io/pause:3.10.2"}, []v1.Layer{pause},
			v1.Config{Entrypoint: []string{"/pause"}}},
		{[]string{e2eRegistry + "nonroot:1.5"}, []v1.Layer{debian},
			v1.Config{User: "1234", Cmd: []string{"bash"}, Env: bashPath}},
		{[]string{e2eRegistry + "nonewprivs:1.4"}, []v1.Layer{debian, nnp},
			v1.Config{Cmd: []string{"nnp"}, Env: bashPath}},
		{[]string{e2eRegistry + "nginx:1.27.0-2", e2eRegistry + "nginx:1.28.0-2"}, []v1.Layer{debian},
			v1.Config{Cmd: []string{"nginx", "-g", "daemon off;"}, Env: bashPath, ExposedPorts: map[string]struct{}{"80/tcp": {}}}},
		{[]string{e2eRegistry + "glibc-dns-testing:2.1.1"}, []v1.Layer{debian},
			v1.Config{Cmd: []string{"bash"}, Env: bashPath}},
		{[]string{e2eRegistry + "sample-apiserver:1.29.2"}, []v1.Layer{debian, sampleAPIServer},
			v1.Config{Entrypoint: []string{"/sample-apiserver"}, Env: bashPath}},
		{[]string{e2eRegistry + "nautilus:1.8"}, []v1.Layer{debian, agnhost, nautilus},
			v1.Config{Entrypoint: []string{"/agnhost"}, Cmd: []string{"test-webserver"}, Env: bashPath}},
		{[]string{"registry.k8s.io/etcd:3.7.0-0"}, []v1.Layer{debian, etcd},
			v1.Config{Cmd: []string{"/usr/local/bin/etcd"}, Env: bashPath}},
	}
	refs := map[name.Reference]v1.Image{}
	for _, s := range specs {
		img, err := mutate.AppendLayers(empty.Image, s.layers...)
		if err != nil {
			return err
		}
		cfg, err := img.ConfigFile()
		if err != nil {
			return err
		}
		cfg = cfg.DeepCopy()
		cfg.OS, cfg.Architecture = "linux", "amd64"
		cfg.Config = s.config
		if img, err = mutate.ConfigFile(img, cfg); err != nil {
			return err
		}
		for _, r := range s.refs {
			tag, err := name.NewTag(r)
			if err != nil {
				return err
			}
			refs[tag] = img
		}
	}
	return tarball.MultiRefWriteToFile(out, refs)
}

// busyboxLayer is / of a busybox image: /bin/busybox, a /bin link for each applet,
// /etc/passwd and /etc/group with root and nobody, and the usual directories.
func busyboxLayer(path string) (v1.Layer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("busybox: %w", err)
	}
	list, err := exec.Command(path, "--list").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list: %w", err)
	}
	applets := strings.Fields(string(list))
	sort.Strings(applets)
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, d := range []struct {
		name string
		mode int64
	}{{"bin/", 0o755}, {"dev/", 0o755}, {"etc/", 0o755}, {"home/", 0o755}, {"proc/", 0o555}, {"root/", 0o700},
		{"sys/", 0o555}, {"tmp/", 0o1777}, {"usr/", 0o755}, {"usr/bin/", 0o755}, {"usr/sbin/", 0o755}, {"var/", 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: d.name, Mode: d.mode, Typeflag: tar.TypeDir}); err != nil {
			return nil, err
		}
	}
	files := []struct {
		name string
		mode int64
		data []byte
	}{
		{"bin/busybox", 0o755, data},
		{"etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/home:/bin/false\n")},
		{"etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, a := range applets {
		if a == "busybox" {
			continue
		}
		if err := tw.WriteHeader(&tar.Header{Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, Typeflag: tar.TypeSymlink}); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(b.Bytes())
}

// fileLayer is a layer of one file, at name inside the image, with mode (setuid included).
func fileLayer(path, name string, mode int64) (v1.Layer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(b.Bytes())
}

func bytesLayer(data []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}

// agnhostLayer is what upstream's agnhost Dockerfile adds to its base: /agnhost with the
// /agnhost-2 link, /uploads, porter's localhost certificate, and the user
// user-defined-in-image (1000) in group-defined-in-image (50000).
func agnhostLayer(bookworm, bin, src string) (v1.Layer, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	crt, err := os.ReadFile(src + "/porter/localhost.crt")
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(src + "/porter/localhost.key")
	if err != nil {
		return nil, err
	}
	etc, err := filesOf(bookworm, "./etc/passwd", "./etc/group")
	if err != nil {
		return nil, err
	}
	passwd := string(etc["./etc/passwd"]) + "user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh\n"
	group := string(etc["./etc/group"]) + "user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n"
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range []struct {
		name string
		mode int64
		data []byte
	}{
		{"agnhost", 0o755, data},
		{"localhost.crt", 0o644, crt},
		{"localhost.key", 0o600, key},
		{"etc/passwd", 0o644, []byte(passwd)},
		{"etc/group", 0o644, []byte(group)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.data)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	for _, h := range []*tar.Header{
		{Name: "agnhost-2", Linkname: "agnhost", Mode: 0o777, Typeflag: tar.TypeSymlink},
		{Name: "uploads/", Mode: 0o755, Typeflag: tar.TypeDir},
	} {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return bytesLayer(b.Bytes())
}

// filesOf reads the named regular files out of a tar.
func filesOf(tarFile string, names ...string) (map[string][]byte, error) {
	f, err := os.Open(tarFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	got := map[string][]byte{}
	tr := tar.NewReader(f)
	for len(got) < len(want) {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("%s lacks %v", tarFile, names)
		}
		if err != nil {
			return nil, err
		}
		if want[h.Name] {
			if got[h.Name], err = io.ReadAll(tr); err != nil {
				return nil, err
			}
		}
	}
	return got, nil
}
