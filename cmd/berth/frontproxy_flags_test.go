package main

import (
	"reflect"
	"testing"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/apiserver"
)

// TestFrontProxyFlags: berth up and berth apiserver take kube-apiserver's --requestheader-*
// and --proxy-client-* flags, with kubeadm's headers by default.
func TestFrontProxyFlags(t *testing.T) {
	parse := func(args ...string) apiserver.FrontProxyConfig {
		t.Helper()
		var f controlPlaneFlags
		cmd := &cobra.Command{Use: "x"}
		f.add(cmd)
		if err := cmd.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		cfg, err := f.config()
		if err != nil {
			t.Fatal(err)
		}
		return cfg.FrontProxy
	}
	want := apiserver.FrontProxyConfig{
		RequestHeaderUsernameHeaders:     []string{"X-Remote-User"},
		RequestHeaderGroupHeaders:        []string{"X-Remote-Group"},
		RequestHeaderExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
	}
	if got := parse(); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	got := parse("--requestheader-client-ca-file", "/p/ca.crt", "--requestheader-allowed-names", "a,b",
		"--requestheader-username-headers", "X-User", "--requestheader-group-headers", "X-Group",
		"--requestheader-extra-headers-prefix", "X-Extra-", "--proxy-client-cert-file", "/p/c.crt", "--proxy-client-key-file", "/p/c.key")
	want = apiserver.FrontProxyConfig{
		RequestHeaderClientCAFile: "/p/ca.crt", RequestHeaderAllowedNames: []string{"a", "b"},
		RequestHeaderUsernameHeaders: []string{"X-User"}, RequestHeaderGroupHeaders: []string{"X-Group"},
		RequestHeaderExtraHeaderPrefixes: []string{"X-Extra-"}, ProxyClientCertFile: "/p/c.crt", ProxyClientKeyFile: "/p/c.key",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("set: %+v, want %+v", got, want)
	}
}
