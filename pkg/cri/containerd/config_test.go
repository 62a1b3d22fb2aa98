package containerd

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithDefaults(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 100)
	tests := []struct {
		name    string
		in      Config
		want    func(Config) string // "" when c is right
		wantErr string
	}{
		{name: "no state dir", in: Config{}, wantErr: "StateDir is required"},
		{name: "defaults", in: Config{StateDir: "/tmp/x"}, want: func(c Config) string {
			switch {
			case c.Endpoint != "/tmp/x/containerd.sock":
				return "endpoint " + c.Endpoint
			case c.CNIBinDir != "/usr/lib/cni":
				return "CNI bin dir " + c.CNIBinDir
			case c.Bridge != "berth0" || c.LogLevel != "info" || c.Binary != "containerd":
				return "bridge/log level/binary"
			case c.SandboxImage != "registry.berth.local/pause:3.10":
				return "sandbox image " + c.SandboxImage
			case c.PodCIDR != "":
				return "pod CIDR " + c.PodCIDR
			}
			return ""
		}},
		{name: "pod CIDR is masked", in: Config{StateDir: "/tmp/x", PodCIDR: "10.1.2.3/24"}, want: func(c Config) string {
			if c.PodCIDR != "10.1.2.0/24" {
				return c.PodCIDR
			}
			return ""
		}},
		{name: "unix URL endpoint", in: Config{StateDir: "/tmp/x", Endpoint: "unix:///tmp/y/c.sock"}, want: func(c Config) string {
			if socketPath(c.Endpoint) != "/tmp/y/c.sock" {
				return c.Endpoint
			}
			return ""
		}},
		{name: "bad pod CIDR", in: Config{StateDir: "/tmp/x", PodCIDR: "10.1.2.3"}, wantErr: "pod CIDR"},
		{name: "relative socket", in: Config{StateDir: "/tmp/x", Endpoint: "c.sock"}, wantErr: "not an absolute"},
		{name: "socket path too long", in: Config{StateDir: long}, wantErr: "longer than"},
		{name: "bridge name too long", in: Config{StateDir: "/tmp/x", Bridge: "berth-bridge-0123"}, wantErr: "longer than 15"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.withDefaults()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.want(got); msg != "" {
				t.Errorf("wrong default: %s (config %+v)", msg, got)
			}
		})
	}
}

func TestNoCNIPlugins(t *testing.T) {
	saved := cniBinDirs
	t.Cleanup(func() { cniBinDirs = saved })
	cniBinDirs = []string{t.TempDir()}
	if _, err := (Config{StateDir: "/tmp/x"}).withDefaults(); err == nil || !strings.Contains(err.Error(), "no CNI plugins") {
		t.Fatalf("err = %v, want no CNI plugins", err)
	}
}

// conflist is the part of a CNI config list the tests look at.
type conflist struct {
	CNIVersion string `json:"cniVersion"`
	Name       string `json:"name"`
	Plugins    []struct {
		Type         string          `json:"type"`
		Bridge       string          `json:"bridge"`
		IsGateway    bool            `json:"isGateway"`
		IPMasq       bool            `json:"ipMasq"`
		Capabilities map[string]bool `json:"capabilities"`
		IPAM         struct {
			Type    string `json:"type"`
			DataDir string `json:"dataDir"`
			Ranges  [][]struct {
				Subnet string `json:"subnet"`
			} `json:"ranges"`
			Routes []struct {
				Dst string `json:"dst"`
			} `json:"routes"`
		} `json:"ipam"`
	} `json:"plugins"`
}

func TestCNIConfList(t *testing.T) {
	tests := []struct{ cidr, subnet, route string }{
		{"10.244.1.0/24", "10.244.1.0/24", "0.0.0.0/0"},
		{"10.244.1.7/24", "10.244.1.0/24", "0.0.0.0/0"},
		{"fd00:10:244:1::/64", "fd00:10:244:1::/64", "::/0"},
	}
	c := Config{StateDir: "/var/lib/berth/containerd", Bridge: "berth0"}
	for _, tt := range tests {
		t.Run(tt.cidr, func(t *testing.T) {
			data, err := cniConfList(c, tt.cidr)
			if err != nil {
				t.Fatal(err)
			}
			var l conflist
			if err := json.Unmarshal(data, &l); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, data)
			}
			if l.Name != "berth" || l.CNIVersion != "1.0.0" || len(l.Plugins) != 2 {
				t.Fatalf("name %q version %q plugins %d", l.Name, l.CNIVersion, len(l.Plugins))
			}
			br, pm := l.Plugins[0], l.Plugins[1]
			if br.Type != "bridge" || br.Bridge != "berth0" || !br.IsGateway || br.IPMasq {
				t.Errorf("bridge plugin: %+v", br)
			}
			if br.IPAM.Type != "host-local" || br.IPAM.DataDir != "/var/lib/berth/containerd/cni/networks" {
				t.Errorf("IPAM: %+v", br.IPAM)
			}
			if len(br.IPAM.Ranges) != 1 || len(br.IPAM.Ranges[0]) != 1 || br.IPAM.Ranges[0][0].Subnet != tt.subnet {
				t.Errorf("ranges %+v, want %s", br.IPAM.Ranges, tt.subnet)
			}
			if len(br.IPAM.Routes) != 1 || br.IPAM.Routes[0].Dst != tt.route {
				t.Errorf("routes %+v, want %s", br.IPAM.Routes, tt.route)
			}
			if pm.Type != "portmap" || !pm.Capabilities["portMappings"] {
				t.Errorf("portmap plugin: %+v", pm)
			}
		})
	}
	if _, err := cniConfList(c, "nonsense"); err == nil {
		t.Error("a bad CIDR renders")
	}
}

// TestContainerdConfig has containerd itself parse the config (config dump merges it with
// its defaults) and checks the settings berth depends on.
func TestContainerdConfig(t *testing.T) {
	dir := t.TempDir()
	c, err := Config{StateDir: dir, PodCIDR: "10.244.0.0/24", SandboxImage: `registry.berth.local/pause:3.10`}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if err := writeConfigs(c); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("containerd", "--config", filepath.Join(dir, configFile), "config", "dump").CombinedOutput()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, out)
	}
	dump := string(out)
	for _, want := range []string{
		`root = "` + dir + `/root"`,
		`state = "` + dir + `/state"`,
		`address = "` + dir + `/containerd.sock"`,
		`sandbox_image = "registry.berth.local/pause:3.10"`,
		`restrict_oom_score_adj = true`,
		`SystemdCgroup = false`,
		`snapshotter = "overlayfs"`,
		`runtime_type = "io.containerd.runc.v2"`,
		`bin_dir = "/usr/lib/cni"`,
		`conf_dir = "` + dir + `/cni/net.d"`,
		`conf_template = "` + dir + `/cni/berth.conflist.template"`,
		`config_path = "` + dir + `/certs.d"`,
		`path = "` + dir + `/opt"`,
		`netns_mounts_under_state_dir = true`,
		`"io.containerd.timeout.bolt.open" = "10s"`,
	} {
		if !strings.Contains(dump, want) {
			t.Errorf("config dump lacks %s", want)
		}
	}
	if t.Failed() {
		t.Logf("config dump:\n%s", dump)
	}
	data, err := os.ReadFile(filepath.Join(dir, cniConfDir, cniConfFile))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := cniConfList(c, c.PodCIDR)
	if string(data) != string(want) {
		t.Errorf("written CNI config differs from the rendered one")
	}

	// Without a pod CIDR, stale CNI configs go and none is written.
	if err := os.WriteFile(filepath.Join(dir, cniConfDir, "05-old.conflist"), []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.PodCIDR = ""
	if err := writeConfigs(c); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, cniConfDir)); len(entries) != 0 {
		t.Errorf("CNI conf dir holds %d files, want none", len(entries))
	}
}
