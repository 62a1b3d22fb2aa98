// Package subpath resolves a container's volume subPath to the host directory startContainer
// mounts (seed 003's startContainer, making the container's mounts). A subPath that does not
// exist yet is created by the node agent, as the kubelet creates it, rather than left to the
// runtime: the runtime would create it with its own mode and owner, and a pod's fsGroup could
// not write it. Nothing a container planted in its volume (a symlink out of it) may take the
// node agent outside the volume.
package subpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Prepare returns the host path of subPath in the volume at volumePath, creating its missing
// directories (see MakeDir). subPath must be relative, must not climb with "..", and must not
// lead out of the volume through a symlink.
func Prepare(volumePath, subPath string) (string, error) {
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	for _, part := range strings.Split(filepath.ToSlash(subPath), "/") {
		if part == ".." {
			return "", fmt.Errorf("error SubPath `%s` must not contain '..'", subPath)
		}
	}
	path := filepath.Join(volumePath, subPath)
	if _, err := os.Lstat(path); os.IsNotExist(err) {
		if err := MakeDir(volumePath, subPath); err != nil {
			return "", fmt.Errorf("creating subPath %s: %w", subPath, err)
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	base, err := filepath.EvalSymlinks(volumePath)
	if err != nil {
		return "", err
	}
	if !within(real, base) {
		return "", fmt.Errorf("subpath %q not within volume path %q", real, base)
	}
	return real, nil
}

// MakeDir creates the directories of rel under base that do not exist. Each new directory
// gets the mode of base itself, permission bits and the setuid, setgid and sticky bits alike,
// whatever the node agent's umask; its group is the kernel's choice (a setgid parent's, so
// an fsGroup volume's). The part of rel that exists may pass through symlinks that stay inside
// base; the directories are then created through file descriptors opened without following
// links, so that a link swapped in meanwhile fails the creation rather than redirecting it.
func MakeDir(base, rel string) error {
	info, err := os.Stat(base)
	if err != nil {
		return err
	}
	mode := kernelMode(info.Mode())
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return err
	}
	existing, missing, err := existingPrefix(base, rel)
	if err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	realExisting, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return err
	}
	if !within(realExisting, realBase) {
		return fmt.Errorf("path %s is outside of the volume %s", realExisting, realBase)
	}
	fd, err := openNoFollow(realBase, realExisting)
	if err != nil {
		return err
	}
	defer func() { syscall.Close(fd) }()
	for _, name := range missing {
		if err := syscall.Mkdirat(fd, name, mode); err != nil && !errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("cannot create directory %s: %w", name, err)
		}
		child, err := syscall.Openat(fd, name, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot open directory %s: %w", name, err)
		}
		syscall.Close(fd)
		fd = child
		// mkdirat applied the umask and drops the special bits; set them all.
		if err := syscall.Fchmod(fd, mode); err != nil {
			return fmt.Errorf("chmod %s: %w", name, err)
		}
	}
	return nil
}

// existingPrefix splits base/rel into its longest existing part and the names below it that
// do not exist.
func existingPrefix(base, rel string) (string, []string, error) {
	parts := strings.Split(filepath.Clean(filepath.ToSlash(rel)), "/")
	existing := base
	for i, p := range parts {
		if p == "" || p == "." {
			continue
		}
		next := filepath.Join(existing, p)
		if _, err := os.Lstat(next); err != nil {
			if os.IsNotExist(err) {
				var missing []string
				for _, q := range parts[i:] {
					if q != "" && q != "." {
						missing = append(missing, q)
					}
				}
				return existing, missing, nil
			}
			return "", nil, err
		}
		existing = next
	}
	return existing, nil, nil
}

// openNoFollow opens the directory path, which has no symlink in it below base, one component
// at a time without following links.
func openNoFollow(base, path string) (int, error) {
	const flags = syscall.O_RDONLY | syscall.O_DIRECTORY | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	fd, err := syscall.Open(base, flags, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot open %s: %w", base, err)
	}
	rel, err := filepath.Rel(base, path)
	if err != nil {
		syscall.Close(fd)
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	for _, name := range strings.Split(rel, string(filepath.Separator)) {
		child, err := syscall.Openat(fd, name, flags, 0)
		syscall.Close(fd)
		if err != nil {
			return -1, fmt.Errorf("cannot open %s in %s: %w", name, path, err)
		}
		fd = child
	}
	return fd, nil
}

// kernelMode is the chmod mode of a Go file mode: permission bits and the special ones.
func kernelMode(m os.FileMode) uint32 {
	mode := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		mode |= syscall.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		mode |= syscall.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		mode |= syscall.S_ISVTX
	}
	return mode
}

func within(path, base string) bool {
	return path == base || strings.HasPrefix(path, base+string(filepath.Separator))
}
