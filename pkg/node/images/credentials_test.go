package images

import (
	"encoding/base64"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func dockerConfigJSONSecret(name, json string) v1.Secret {
	s := v1.Secret{Type: v1.SecretTypeDockerConfigJson, Data: map[string][]byte{v1.DockerConfigJsonKey: []byte(json)}}
	s.Name, s.Namespace = name, "ns"
	return s
}

func dockercfgSecret(name, json string) v1.Secret {
	s := v1.Secret{Type: v1.SecretTypeDockercfg, Data: map[string][]byte{v1.DockerConfigKey: []byte(json)}}
	s.Name, s.Namespace = name, "ns"
	return s
}

func auth(user, pass string) *runtimeapi.AuthConfig {
	return &runtimeapi.AuthConfig{Username: user, Password: pass}
}

func TestKeyringLookup(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	raw := func(s string) string { return base64.RawStdEncoding.EncodeToString([]byte(s)) }
	secrets := []v1.Secret{
		dockerConfigJSONSecret("json", `{"auths": {
			"https://registry.example.com/v1/": {"auth": "`+b64("host:pw1")+`"},
			"registry.example.com/team": {"username": "team", "password": "pw2"},
			"*.wild.io": {"auth": "`+raw("wild:pw3")+`"},
			"127.0.0.1:5000": {"username": "local", "password": "pw4"},
			"https://index.docker.io/v1/": {"username": "hub", "password": "pw5"}
		}}`),
		dockercfgSecret("cfg", `{"registry.example.com": {"username": "old", "password": "pw6"}}`),
		{Type: v1.SecretTypeOpaque, Data: map[string][]byte{"x": []byte("not docker")}},
	}
	k, err := newKeyring(secrets)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		repo string
		want []*runtimeapi.AuthConfig
	}{
		{"registry.example.com/team/app", []*runtimeapi.AuthConfig{auth("team", "pw2"), auth("host", "pw1"), auth("old", "pw6")}},
		{"registry.example.com/other/app", []*runtimeapi.AuthConfig{auth("host", "pw1"), auth("old", "pw6")}},
		{"a.wild.io/app", []*runtimeapi.AuthConfig{auth("wild", "pw3")}},
		{"a.b.wild.io/app", nil},
		{"127.0.0.1:5000/app", []*runtimeapi.AuthConfig{auth("local", "pw4")}},
		{"127.0.0.1:5001/app", nil},
		{"docker.io/library/busybox", []*runtimeapi.AuthConfig{auth("hub", "pw5")}},
		{"unknown.io/app", nil},
	}
	for _, tt := range tests {
		if got := k.lookup(tt.repo); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("lookup(%q) = %v, want %v", tt.repo, got, tt.want)
		}
	}
}

func TestKeyringErrors(t *testing.T) {
	for name, s := range map[string]v1.Secret{
		"bad json":   dockerConfigJSONSecret("a", `{"auths": `),
		"bad base64": dockerConfigJSONSecret("b", `{"auths": {"r.io": {"auth": "!!!"}}}`),
		"no colon":   dockerConfigJSONSecret("c", `{"auths": {"r.io": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("nocolon"))+`"}}}`),
		"bad cfg":    dockercfgSecret("d", `[]`),
	} {
		if _, err := newKeyring([]v1.Secret{s}); err == nil {
			t.Errorf("%s: newKeyring succeeded, want an error", name)
		}
	}
}
