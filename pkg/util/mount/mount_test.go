package mount

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestUnescape(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/berth`:        "/var/lib/berth",
		`/tmp/a\040b`:           "/tmp/a b",
		`/tmp/tab\011and\134bs`: "/tmp/tab\tand\\bs",
		`/tmp/trailing\04`:      `/tmp/trailing\04`,
	} {
		if got := unescape(in); got != want {
			t.Errorf("unescape(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestUnmountUnder mounts tmpfs nested under a directory (one with a space in its name) and
// unmounts them all.
func TestUnmountUnder(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test mounts tmpfs and needs root")
	}
	dir := filepath.Join(t.TempDir(), "data dir")
	inner := filepath.Join(dir, "pods", "x")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	if err := os.MkdirAll(inner, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", inner, "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	points, err := PointsUnder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || points[0] != inner || points[1] != dir {
		t.Fatalf("PointsUnder = %q, want the inner mount, then the outer", points)
	}
	if err := UnmountUnder(dir); err != nil {
		t.Fatal(err)
	}
	if points, _ := PointsUnder(dir); len(points) != 0 {
		t.Errorf("left mounted: %q", points)
	}
}
