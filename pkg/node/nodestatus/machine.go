package nodestatus

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
)

// MachineInfo is what the node's status says about the machine (the kubelet gets it from
// cAdvisor).
type MachineInfo struct {
	NumCores int
	// MemoryCapacity is /proc/meminfo's MemTotal, in bytes.
	MemoryCapacity int64
	// HugePages maps a huge page size in bytes to the number of pages reserved.
	HugePages map[int64]int64
	// RootfsCapacity is the size of the filesystem of the node agent's root dir, in bytes:
	// the ephemeral-storage capacity. Zero when RootfsErr says why it is unknown.
	RootfsCapacity int64
	RootfsErr      error

	MachineID, SystemUUID, BootID string
	KernelVersion, OSImage        string
}

// machinePaths are where ReadMachineInfo looks; tests point them at a temporary dir.
type machinePaths struct {
	meminfo, hugepages, bootID, productUUID, osRelease string
	machineID                                          []string
}

var hostPaths = machinePaths{
	meminfo:     "/proc/meminfo",
	hugepages:   "/sys/kernel/mm/hugepages",
	bootID:      "/proc/sys/kernel/random/boot_id",
	productUUID: "/sys/class/dmi/id/product_uuid",
	osRelease:   "/etc/os-release",
	machineID:   []string{"/etc/machine-id", "/var/lib/dbus/machine-id"},
}

// ReadMachineInfo reads this machine's description; rootDir is the node agent's root dir,
// whose filesystem gives the ephemeral-storage capacity. Only an unreadable memory size is an
// error: the rest is reported empty when the machine does not tell.
func ReadMachineInfo(rootDir string) (*MachineInfo, error) {
	return hostPaths.read(rootDir)
}

func (p machinePaths) read(rootDir string) (*MachineInfo, error) {
	memory, err := memTotal(p.meminfo)
	if err != nil {
		return nil, err
	}
	info := &MachineInfo{
		NumCores:       goruntime.NumCPU(),
		MemoryCapacity: memory,
		HugePages:      hugePages(p.hugepages),
		BootID:         readTrimmed(p.bootID),
		SystemUUID:     readTrimmed(p.productUUID),
		OSImage:        osImage(p.osRelease),
		KernelVersion:  kernelVersion(),
	}
	for _, path := range p.machineID {
		if info.MachineID = readTrimmed(path); info.MachineID != "" {
			break
		}
	}
	info.RootfsCapacity, info.RootfsErr = fsCapacity(rootDir)
	return info, nil
}

// memTotal reads MemTotal from a meminfo file ("MemTotal:  8152236 kB").
func memTotal(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("reading memory size: %w", err)
	}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 2 || fields[0] != "MemTotal:" {
			continue
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing MemTotal in %s: %w", path, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("no MemTotal in %s", path)
}

// hugePages reads the reserved huge pages of every size the kernel supports, from dirs named
// hugepages-<size>kB holding nr_hugepages.
func hugePages(dir string) map[int64]int64 {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	pages := map[int64]int64{}
	for _, e := range entries {
		size, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(size, "kB"), 10, 64)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(readTrimmed(filepath.Join(dir, e.Name(), "nr_hugepages")), 10, 64)
		if err != nil {
			n = 0
		}
		pages[kb*1024] = n
	}
	return pages
}

// osImage is PRETTY_NAME from os-release, as cAdvisor reports it, or "Linux".
func osImage(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "Linux"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
			if unquoted, err := strconv.Unquote(v); err == nil {
				return unquoted
			}
			return strings.Trim(v, `"'`)
		}
	}
	return "Linux"
}

func kernelVersion() string {
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b.WriteByte(byte(c))
	}
	return b.String()
}

// fsCapacity is the size of the filesystem dir is on.
func fsCapacity(dir string) (int64, error) {
	if dir == "" {
		return 0, errors.New("no root dir configured")
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

func readTrimmed(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
