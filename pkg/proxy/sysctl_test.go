package proxy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnsureBridgeNetfilter(t *testing.T) {
	dir := t.TempDir()
	old := bridgeNetfilterDir
	bridgeNetfilterDir = filepath.Join(dir, "missing")
	t.Cleanup(func() { bridgeNetfilterDir = old })
	if err := ensureBridgeNetfilter(false); err == nil || !strings.Contains(err.Error(), "br_netfilter") {
		t.Errorf("without the module: %v, want an error naming br_netfilter", err)
	}

	bridgeNetfilterDir = dir
	for _, name := range []string{"bridge-nf-call-iptables", "bridge-nf-call-ip6tables"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := ensureBridgeNetfilter(false); err != nil {
		t.Fatal(err)
	}
	read := func(name string) string {
		b, _ := os.ReadFile(filepath.Join(dir, name))
		return strings.TrimSpace(string(b))
	}
	if v4, v6 := read("bridge-nf-call-iptables"), read("bridge-nf-call-ip6tables"); v4 != "1" || v6 != "0" {
		t.Errorf("IPv4 only: iptables=%s ip6tables=%s, want 1 and 0 (untouched)", v4, v6)
	}
	if err := ensureBridgeNetfilter(true); err != nil {
		t.Fatal(err)
	}
	if v6 := read("bridge-nf-call-ip6tables"); v6 != "1" {
		t.Errorf("dual-stack: ip6tables=%s, want 1", v6)
	}
}
