package volume

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// The permission bits a volume's files get for the pod's fsGroup, as the kubelet's
// SetVolumeOwnership gives them.
const (
	rwMask = 0o660
	roMask = 0o440
)

// SetOwnership gives the files under dir to the pod's fsGroup: group fsGroup, group read
// (and write, unless the volume is read-only), and directories setgid so that new files
// inherit the group. Symlinks are re-grouped but not chmod-ed (that would change their
// targets). With fsGroupChangePolicy OnRootMismatch nothing is done when dir already has
// the group and the bits. No fsGroup: nothing to do.
func SetOwnership(dir string, pod *v1.Pod, readOnly bool) error {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil {
		return nil
	}
	gid := int(*sc.FSGroup)
	mask := os.FileMode(rwMask)
	if readOnly {
		mask = roMask
	}
	if sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == v1.FSGroupChangeOnRootMismatch && ownedBy(dir, gid, mask) {
		return nil
	}
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := os.Lchown(path, -1, gid); err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// Every bit the file has stays (a tmpfs root's sticky bit too), as the kubelet's
		// chmod keeps them; the group's bits are only added.
		mode := info.Mode()&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) | mask
		if info.IsDir() {
			mode |= fs.ModeSetgid | 0o110
		}
		return os.Chmod(path, mode)
	})
}

// ownedBy reports dir already has the group, the bits and (being a directory) setgid.
func ownedBy(dir string, gid int, mask os.FileMode) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return false
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == gid && info.Mode()&mask == mask && info.Mode()&fs.ModeSetgid != 0
}
