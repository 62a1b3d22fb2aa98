package dns

import (
	"io/fs"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func files(m map[string]string) func(string) ([]byte, error) {
	return func(path string) ([]byte, error) {
		if s, ok := m[path]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func TestConfigUpstreams(t *testing.T) {
	const resolved = "nameserver 192.0.2.53\nnameserver 2001:db8::53\n"
	tests := []struct {
		name  string
		cfg   Config
		files map[string]string
		want  []string
	}{
		{"the node's resolv.conf", Config{}, map[string]string{resolvConf: "search example.com\nnameserver 192.0.2.1\n# nameserver 192.0.2.9\nnameserver 192.0.2.2 \noptions ndots:1\n"},
			[]string{"192.0.2.1:53", "192.0.2.2:53"}},
		{"loopback ones are skipped", Config{}, map[string]string{resolvConf: "nameserver 127.0.0.1\nnameserver 192.0.2.1\nnameserver ::1\n"}, []string{"192.0.2.1:53"}},
		{"systemd-resolved's stub: its uplinks", Config{}, map[string]string{resolvConf: "nameserver 127.0.0.53\noptions edns0 trust-ad\n", resolvedResolvConf: resolved},
			[]string{"192.0.2.53:53", "[2001:db8::53]:53"}},
		{"systemd-resolved's file is read only for a loopback stub", Config{}, map[string]string{resolvConf: "nameserver 192.0.2.1\n", resolvedResolvConf: resolved}, []string{"192.0.2.1:53"}},
		{"no resolv.conf", Config{}, nil, nil},
		{"given upstreams win", Config{Upstreams: []string{"192.0.2.7", "192.0.2.8:5353", "[2001:db8::8]:53"}}, map[string]string{resolvConf: "nameserver 192.0.2.1\n"},
			[]string{"192.0.2.7:53", "192.0.2.8:5353", "[2001:db8::8]:53"}},
		{"the server itself is no upstream", Config{Listen: []string{"192.0.2.10:53"}, Upstreams: []string{"192.0.2.10", "192.0.2.11"}}, nil, []string{"192.0.2.11:53"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.complete(files(tt.files))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.upstreams); diff != "" {
				t.Errorf("upstreams (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c, err := Config{}.complete(files(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.zone != "cluster.local." || c.ttl != 5 || len(c.listen) != 1 || c.listen[0] != DefaultListen {
		t.Errorf("defaults: %+v", c)
	}
	c, err = Config{Zone: "Berth.Example.", TTL: 30 * time.Second}.complete(files(nil))
	if err != nil || c.zone != "berth.example." || c.ttl != 30 {
		t.Errorf("%+v, %v", c, err)
	}
	for _, bad := range []Config{{Zone: "a..b"}, {Listen: []string{"192.0.2.1"}}, {Upstreams: []string{"dns.example.com"}}, {Upstreams: []string{"dns.example.com:53"}}} {
		if _, err := bad.complete(files(nil)); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
