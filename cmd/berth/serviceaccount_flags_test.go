package main

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/berth-cluster/berth/pkg/apiserver"
)

// TestServiceAccountFlags: berth up and berth apiserver take kube-apiserver's
// service-account flags, with its defaults, into the API server's configuration.
func TestServiceAccountFlags(t *testing.T) {
	parse := func(args ...string) apiserver.ServiceAccountConfig {
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
		return cfg.ServiceAccounts
	}
	if got, want := parse(), (apiserver.ServiceAccountConfig{Issuers: []string{"https://kubernetes.default.svc.cluster.local"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	got := parse("--service-account-issuer", "https://new.example", "--service-account-issuer", "https://old.example",
		"--service-account-signing-key-file", "/k/new.key", "--service-account-key-file", "/k/old.pub", "--service-account-key-file", "/k/older.pub",
		"--service-account-jwks-uri", "https://new.example/keys", "--api-audiences", "a,b",
		"--service-account-max-token-expiration", "48h", "--service-account-extend-token-expiration=false")
	want := apiserver.ServiceAccountConfig{
		Issuers: []string{"https://new.example", "https://old.example"}, SigningKeyFile: "/k/new.key", KeyFiles: []string{"/k/old.pub", "/k/older.pub"},
		JWKSURI: "https://new.example/keys", APIAudiences: []string{"a", "b"}, MaxTokenExpiration: 48 * time.Hour, NoExtendTokenExpiration: true,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("flags: %+v\nwant %+v", got, want)
	}
	for _, cmd := range []string{"up", "apiserver"} {
		help := run(t, cmd, "--help")
		for _, f := range []string{"--service-account-issuer", "--service-account-signing-key-file", "--service-account-key-file", "--api-audiences", "--service-account-max-token-expiration"} {
			if !strings.Contains(help, f) {
				t.Errorf("berth %s --help does not list %s", cmd, f)
			}
		}
	}
}
