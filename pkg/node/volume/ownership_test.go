package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestSetOwnership(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("changing a file's group to any fsGroup needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub", "f"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/f", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	group := int64(4321)
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: &group}}}
	if err := SetOwnership(dir, pod, false); err != nil {
		t.Fatal(err)
	}
	check := func(p string, want fs.FileMode) {
		info, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		if gid := info.Sys().(*syscall.Stat_t).Gid; gid != 4321 {
			t.Errorf("%s: group %d, want 4321", p, gid)
		}
		if want != 0 && info.Mode()&(fs.ModePerm|fs.ModeSetgid) != want {
			t.Errorf("%s: mode %v, want %v", p, info.Mode(), want)
		}
	}
	check(filepath.Join(dir, "sub"), 0o770|fs.ModeSetgid)
	check(filepath.Join(dir, "sub", "f"), 0o660)
	check(filepath.Join(dir, "link"), 0)
	if !ownedBy(dir, 4321, rwMask) {
		t.Error("the root is not reported owned after SetOwnership")
	}
	if err := SetOwnership(dir, &v1.Pod{}, false); err != nil {
		t.Errorf("no fsGroup: %v", err)
	}
}

// A tmpfs emptyDir's root is 1777: the sticky bit stays, and setgid joins it (dgtrwxrwxrwx,
// what a subPath made in it then inherits).
func TestSetOwnershipKeepsSpecialBits(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	group := int64(123)
	pod := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{FSGroup: &group}}}
	if err := SetOwnership(dir, pod, false); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().String(); got != "dgtrwxrwxrwx" {
		t.Errorf("mode %s, want dgtrwxrwxrwx", got)
	}
}
