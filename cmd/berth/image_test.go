package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/berth-cluster/berth/pkg/cri/containerd/containerdtest"
	"github.com/berth-cluster/berth/pkg/cri/testimage"
)

func TestImageImport(t *testing.T) {
	p := containerdtest.Start(t)
	img, err := testimage.Busybox("cli")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "busybox.tar")
	if err := testimage.WriteArchive(file, "busybox:cli", img); err != nil {
		t.Fatal(err)
	}
	cmd := newImageCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"import", file, "--runtime-endpoint", p.Endpoint()})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "docker.io/library/busybox:cli" {
		t.Errorf("printed %q", got)
	}

	cmd = newImageCommand()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"import", filepath.Join(t.TempDir(), "missing.tar"), "--runtime-endpoint", p.Endpoint()})
	if err := cmd.Execute(); err == nil {
		t.Error("importing a missing file succeeded")
	}
}
