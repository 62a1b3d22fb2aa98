package images

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestParseImageName(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := []struct {
		image   string
		want    imageName
		wantErr bool
	}{
		{image: "busybox", want: imageName{Repository: "docker.io/library/busybox", Tag: "latest"}},
		{image: "busybox:1.36", want: imageName{Repository: "docker.io/library/busybox", Tag: "1.36"}},
		{image: "user/app", want: imageName{Repository: "docker.io/user/app", Tag: "latest"}},
		{image: "index.docker.io/user/app:v1", want: imageName{Repository: "docker.io/user/app", Tag: "v1"}},
		{image: "docker.io/busybox", want: imageName{Repository: "docker.io/library/busybox", Tag: "latest"}},
		{image: "localhost/app", want: imageName{Repository: "localhost/app", Tag: "latest"}},
		{image: "127.0.0.1:5000/team/app:dev", want: imageName{Repository: "127.0.0.1:5000/team/app", Tag: "dev"}},
		{image: "registry.k8s.io/pause:3.10", want: imageName{Repository: "registry.k8s.io/pause", Tag: "3.10"}},
		{image: "[::1]:5000/app", want: imageName{Repository: "[::1]:5000/app", Tag: "latest"}},
		{image: "app@" + digest, want: imageName{Repository: "docker.io/library/app", Digest: digest}},
		{image: "app:v1@" + digest, want: imageName{Repository: "docker.io/library/app", Tag: "v1", Digest: digest}},
		{image: "", wantErr: true},
		{image: "Busybox", wantErr: true},
		{image: "app:", wantErr: true},
		{image: "app@sha256:abc", wantErr: true},
		{image: "registry.example.com/", wantErr: true},
		{image: "a//b", wantErr: true},
		{image: "app:tag with space", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseImageName(tt.image)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseImageName(%q) error = %v, wantErr %v", tt.image, err, tt.wantErr)
			continue
		}
		if got != tt.want {
			t.Errorf("parseImageName(%q) = %+v, want %+v", tt.image, got, tt.want)
		}
	}
}

func TestApplyDefaultImageTag(t *testing.T) {
	digest := "sha256:" + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for image, want := range map[string]string{
		"busybox":                   "busybox:latest",
		"busybox:1.36":              "busybox:1.36",
		"127.0.0.1:5000/app":        "127.0.0.1:5000/app:latest",
		"127.0.0.1:5000/app:v2":     "127.0.0.1:5000/app:v2",
		"app@" + digest:             "app@" + digest,
		"berth.local/pause:3.10.1":  "berth.local/pause:3.10.1",
		"docker.io/library/busybox": "docker.io/library/busybox:latest",
	} {
		got, err := applyDefaultImageTag(image)
		if err != nil || got != want {
			t.Errorf("applyDefaultImageTag(%q) = %q, %v; want %q", image, got, err, want)
		}
	}
	if _, err := applyDefaultImageTag("UPPER"); err == nil {
		t.Errorf("applyDefaultImageTag(UPPER) succeeded, want an error")
	}
}

func TestDefaultPullPolicy(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                         v1.PullAlways,
		"busybox:latest":                  v1.PullAlways,
		"busybox:1.36":                    v1.PullIfNotPresent,
		"localhost:5000/app":              v1.PullAlways,
		"localhost:5000/app:v1":           v1.PullIfNotPresent,
		"app@sha256:" + hex64("a"):        v1.PullIfNotPresent,
		"app:latest@sha256:" + hex64("a"): v1.PullAlways,
	} {
		if got := DefaultPullPolicy(image); got != want {
			t.Errorf("DefaultPullPolicy(%q) = %s, want %s", image, got, want)
		}
	}
}

func hex64(c string) string {
	s := ""
	for len(s) < 64 {
		s += c
	}
	return s
}
