// Package mount undoes the mounts a node leaves under its data dir when it goes for good:
// the tmpfs of memory emptyDirs, containers' /dev/shm, overlay root filesystems and network
// namespaces that a stopped containerd did not take down (`berth down --cleanup`).
package mount

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// PointsUnder lists the mount points at or under dir, deepest first, as /proc/self/mounts
// names them.
func PointsUnder(dir string) ([]string, error) {
	dir = filepath.Clean(dir)
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 {
			continue
		}
		p := unescape(fields[1])
		if p == dir || strings.HasPrefix(p, dir+"/") {
			points = append(points, p)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("reading /proc/self/mounts: %w", err)
	}
	// Reverse lexical order puts a mount after the ones below it.
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	return points, nil
}

// UnmountUnder lazily unmounts every mount point at or under dir, deepest first.
func UnmountUnder(dir string) error {
	points, err := PointsUnder(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range points {
		// EINVAL: no longer a mount point (a lazy unmount of its parent took it along).
		if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
			errs = append(errs, fmt.Errorf("unmount %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// unescape undoes the octal escapes (\040 for a space) of /proc/self/mounts.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
