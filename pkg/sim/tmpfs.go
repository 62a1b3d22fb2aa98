package sim

import (
	"fmt"
	"os"
	"syscall"

	"github.com/berth-cluster/berth/pkg/util/mount"
)

// tmpfsMagic is statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// mountSharedTmpfs puts one tmpfs on dir, for every simulated node under it. A node agent
// keeps a pod's secret and token volumes on a tmpfs, as the kubelet does, and mounts one per
// pod unless its directory is on a tmpfs already. Under this one, 10,000 simulated pods add
// one mount to the machine's table, not 10,000 (runc and containerd read the whole table
// at each real container, and a long table made this machine's real pods start 4× slower).
// The returned func unmounts it, with anything mounted below; a tmpfs that was there before
// is left alone.
func mountSharedTmpfs(dir string) (unmount func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %w", dir, err)
	}
	if st.Type == tmpfsMagic {
		return func() {}, nil
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return nil, fmt.Errorf("mounting a tmpfs on %s: %w", dir, err)
	}
	return func() { _ = mount.UnmountUnder(dir) }, nil
}
