package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// FileProjection is one file of a volume: its contents, mode and, for a token, its owner.
type FileProjection struct {
	Data []byte
	Mode int32
	// FsUser, when set, owns the file (and its visible symlink).
	FsUser *int64
}

// dataDirName is the symlink to the current version of a volume's files; the files the
// container sees are symlinks through it, so that one rename swaps every file at once (the
// kubelet's AtomicWriter).
const dataDirName = "..data"

// writePayload makes dir hold exactly payload (relative path → file), atomically for a reader
// in the container: the new version is written to a fresh "..<timestamp>" directory, "..data"
// is switched to it by a rename, the top-level symlinks are added or removed, and the old
// version goes. An unchanged payload writes nothing.
func writePayload(dir string, payload map[string]FileProjection) error {
	for p := range payload {
		if err := validatePath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	oldTS, _ := os.Readlink(filepath.Join(dir, dataDirName))
	if oldTS != "" && sameContents(filepath.Join(dir, oldTS), payload) {
		return nil
	}
	ts, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	for p, f := range payload {
		full := filepath.Join(ts, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, f.Data, os.FileMode(f.Mode)); err != nil {
			return err
		}
		// WriteFile's mode passes the umask; the volume's mode must not.
		if err := os.Chmod(full, os.FileMode(f.Mode)); err != nil {
			return err
		}
		if f.FsUser != nil {
			if err := os.Lchown(full, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
	}
	if err := os.Chmod(ts, 0o755); err != nil {
		return err
	}
	tmpLink := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(ts), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return err
	}
	// The user-visible paths: one symlink per top-level entry, through ..data.
	top := map[string]bool{}
	for p := range payload {
		top[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			if err := os.Symlink(filepath.Join(dataDirName, name), link); err != nil {
				return err
			}
		}
		if f, ok := payload[name]; ok && f.FsUser != nil {
			if err := os.Lchown(link, int(*f.FsUser), -1); err != nil {
				return err
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == dataDirName || name == filepath.Base(ts):
		case strings.HasPrefix(name, ".."):
			if name == oldTS || e.IsDir() {
				errs = append(errs, os.RemoveAll(filepath.Join(dir, name)))
			}
		case !top[name]:
			errs = append(errs, os.Remove(filepath.Join(dir, name)))
		}
	}
	return errors.Join(errs...)
}

// sameContents reports whether dir holds exactly payload, modes included.
func sameContents(dir string, payload map[string]FileProjection) bool {
	n := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		f, ok := payload[rel]
		if !ok {
			return errors.New("extra file")
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm() != os.FileMode(f.Mode).Perm() {
			return errors.New("mode differs")
		}
		if st, ok := info.Sys().(*syscall.Stat_t); f.FsUser != nil && (!ok || int64(st.Uid) != *f.FsUser) {
			return errors.New("owner differs")
		}
		data, err := os.ReadFile(path)
		if err != nil || string(data) != string(f.Data) {
			return errors.New("data differs")
		}
		n++
		return nil
	})
	return err == nil && n == len(payload)
}

// validatePath refuses absolute paths, "..", and names starting with ".." (the writer's own).
func validatePath(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return fmt.Errorf("invalid path %q: must be relative", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || strings.HasPrefix(part, "..") {
			return fmt.Errorf("invalid path %q: must not contain '..'", p)
		}
	}
	return nil
}
