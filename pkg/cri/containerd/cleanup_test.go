package containerd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNetworkRecord: what Cleanup reads back from the files Start wrote names the socket,
// the bridge and the pod CIDR Start was given.
func TestNetworkRecord(t *testing.T) {
	for _, podCIDR := range []string{"10.99.1.0/24", ""} {
		dir := t.TempDir()
		c, err := (Config{StateDir: dir, Bridge: "bt12345678", PodCIDR: podCIDR, Endpoint: "/run/x y/c.sock"}).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if err := writeConfigs(c); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(filepath.Join(dir, configFile))
		if err != nil {
			t.Fatal(err)
		}
		if got := grpcAddress(string(data)); got != "/run/x y/c.sock" {
			t.Errorf("grpcAddress = %q", got)
		}
		bridge, cidr := networkOf(dir)
		if bridge != "bt12345678" || cidr != podCIDR {
			t.Errorf("pod CIDR %q: networkOf = %q, %q", podCIDR, bridge, cidr)
		}
	}
	if b, _ := networkOf(t.TempDir()); b != "" {
		t.Errorf("networkOf of an empty dir = %q", b)
	}
}

// TestRemoveCNIResults removes the cache entries of berth's network on one bridge and keeps
// those of other bridges and other networks.
func TestRemoveCNIResults(t *testing.T) {
	saved := cniResultsDir
	t.Cleanup(func() { cniResultsDir = saved })
	cniResultsDir = t.TempDir()
	entry := func(file, network string, c Config) {
		conf, err := cniConfList(c, "10.99.1.0/24")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(map[string]any{"kind": "cniCacheV1", "containerId": "abc", "config": conf, "ifName": "eth0", "networkName": network})
		if err := os.WriteFile(filepath.Join(cniResultsDir, file), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mine := Config{StateDir: "/tmp/a", Bridge: "bmine"}
	entry("berth-aaa-eth0", NetworkName, mine)
	entry("berth-bbb-eth0", NetworkName, Config{StateDir: "/tmp/b", Bridge: "bother"})
	entry("other-ccc-eth0", "other", mine)
	if err := os.WriteFile(filepath.Join(cniResultsDir, "berth-garbage-eth0"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := removeCNIResults("bmine"); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(cniResultsDir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	if got, want := strings.Join(left, " "), "berth-bbb-eth0 berth-garbage-eth0 other-ccc-eth0"; got != want {
		t.Errorf("left %s, want %s", got, want)
	}
}

func TestHasComment(t *testing.T) {
	rule := splitQuoted(`POSTROUTING -s 10.1.0.0/24 ! -d 10.1.0.0/24 -m comment --comment "berth be2e1: pods leaving 10.1.0.0/24" -j MASQUERADE`)
	if !hasComment(rule, masqueradeComment("be2e1")) {
		t.Errorf("rule %q has no comment of be2e1", rule)
	}
	if hasComment(rule, masqueradeComment("be2e")) {
		t.Error("a bridge whose name starts another's matched its rule")
	}
}
