package nodestatus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestReadMachineInfo(t *testing.T) {
	dir := t.TempDir()
	p := machinePaths{
		meminfo:     filepath.Join(dir, "meminfo"),
		hugepages:   filepath.Join(dir, "hugepages"),
		bootID:      filepath.Join(dir, "boot_id"),
		productUUID: filepath.Join(dir, "product_uuid"), // absent: not readable for non-root
		osRelease:   filepath.Join(dir, "os-release"),
		machineID:   []string{filepath.Join(dir, "etc-machine-id"), filepath.Join(dir, "dbus-machine-id")},
	}
	writeFile(t, p.meminfo, "MemTotal:        8152236 kB\nMemFree:          123 kB\n")
	writeFile(t, filepath.Join(p.hugepages, "hugepages-2048kB", "nr_hugepages"), "16\n")
	writeFile(t, filepath.Join(p.hugepages, "hugepages-1048576kB", "nr_hugepages"), "0\n")
	writeFile(t, p.bootID, "b00t\n")
	writeFile(t, p.osRelease, "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	writeFile(t, p.machineID[1], "m4ch1ne\n")

	info, err := p.read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := &MachineInfo{
		NumCores:       info.NumCores,
		MemoryCapacity: 8152236 * 1024,
		HugePages:      map[int64]int64{2 << 20: 16, 1 << 30: 0},
		RootfsCapacity: info.RootfsCapacity,
		MachineID:      "m4ch1ne", BootID: "b00t",
		KernelVersion: info.KernelVersion, OSImage: "Debian GNU/Linux 12 (bookworm)",
	}
	if diff := cmp.Diff(want, info, cmpopts.EquateErrors()); diff != "" {
		t.Errorf("machine info (-want +got):\n%s", diff)
	}
	if info.NumCores < 1 || info.RootfsCapacity <= 0 || info.KernelVersion == "" {
		t.Errorf("cores %d, root fs %d bytes, kernel %q: want them all known", info.NumCores, info.RootfsCapacity, info.KernelVersion)
	}

	// Without os-release the image is "Linux"; a missing root dir has no capacity; a missing
	// meminfo is an error.
	os.Remove(p.osRelease)
	info, err = p.read(filepath.Join(dir, "missing"))
	if err != nil || info.OSImage != "Linux" || info.RootfsErr == nil || info.RootfsCapacity != 0 {
		t.Errorf("got %+v, %v", info, err)
	}
	os.Remove(p.meminfo)
	if _, err := p.read(dir); err == nil {
		t.Error("no meminfo: want an error")
	}
}

func TestReadMachineInfoOfThisHost(t *testing.T) {
	info, err := ReadMachineInfo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if info.MemoryCapacity <= 0 || info.BootID == "" || info.RootfsErr != nil {
		t.Errorf("this host: %+v", info)
	}
}
