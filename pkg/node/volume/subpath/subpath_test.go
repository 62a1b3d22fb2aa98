package subpath

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPrepareKeepsTheVolumeMode is the fsGroup case on tmpfs: a root of 1777 plus setgid and
// the pod's group (dgtrwxrwxrwx). The subPath made in it has the same mode, with the umask
// in force, and the group (the kernel's doing, through setgid).
func TestPrepareKeepsTheVolumeMode(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	base := t.TempDir()
	if err := os.Chmod(base, 0o777|os.ModeSetgid|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	const gid = 123
	if err := os.Chown(base, -1, gid); err != nil {
		t.Fatalf("giving the volume to group %d needs root (CI runs as root): %v", gid, err)
	}
	got, err := Prepare(base, "test-sub/deeper")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(base, "test-sub", "deeper"); got != want {
		t.Errorf("Prepare = %q, want %q", got, want)
	}
	for _, dir := range []string{"test-sub", "test-sub/deeper"} {
		info, err := os.Stat(filepath.Join(base, dir))
		if err != nil {
			t.Fatal(err)
		}
		if mode := info.Mode().String(); mode != "dgtrwxrwxrwx" {
			t.Errorf("%s: mode %s, want dgtrwxrwxrwx", dir, mode)
		}
		if st := info.Sys().(*syscall.Stat_t); st.Gid != gid || st.Uid != uint32(os.Getuid()) {
			t.Errorf("%s: owner %d:%d, want %d:%d", dir, st.Uid, st.Gid, os.Getuid(), gid)
		}
	}
}

// A plain directory's mode carries over too: 0777 with a umask of 022 stays 0777.
func TestMakeDirIgnoresTheUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	base := t.TempDir()
	os.Chmod(base, 0o777)
	if err := MakeDir(base, "a/b"); err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(filepath.Join(base, "a/b"))
	if err != nil || info.Mode() != os.ModeDir|0o777 {
		t.Errorf("a/b: %v %v", info.Mode(), err)
	}
	// Existing directories are left as they are.
	os.Chmod(filepath.Join(base, "a"), 0o700)
	if err := MakeDir(base, "a/c"); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(filepath.Join(base, "a")); info.Mode().Perm() != 0o700 {
		t.Errorf("existing a: %v", info.Mode())
	}
}

func TestPrepareStaysInTheVolume(t *testing.T) {
	outside := t.TempDir()
	base := t.TempDir()
	os.Mkdir(filepath.Join(base, "real"), 0o755)
	os.Symlink(outside, filepath.Join(base, "out"))
	os.Symlink("real", filepath.Join(base, "in"))
	for _, sub := range []string{"/etc", "../x", "a/../../x", "out", "out/new", "out/new/deeper"} {
		if got, err := Prepare(base, sub); err == nil {
			t.Errorf("%q: %q, want an error", sub, got)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("created outside the volume: %v", entries)
	}
	// A link that stays inside is followed, as the kubelet follows it.
	got, err := Prepare(base, "in/new")
	if err != nil || got != filepath.Join(base, "real", "new") {
		t.Errorf("in/new: %q, %v", got, err)
	}
	// A subPath that is a file is mounted as a file.
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	if got, err := Prepare(base, "file"); err != nil || got != filepath.Join(base, "file") {
		t.Errorf("file: %q, %v", got, err)
	}
	if _, err := Prepare(base, "file/below"); err == nil {
		t.Error("file/below: created below a file")
	}
}
