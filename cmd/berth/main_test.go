package main

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/klog/v2"
)

// run executes berth with args in process and returns its output.
func run(t *testing.T, args ...string) string {
	t.Helper()
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	if err := root.Execute(); err != nil {
		t.Fatalf("berth %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// TestHelpListsOwnFlags: a command's help lists its own flags, not klog's, and points to
// `berth options`, which lists those.
func TestHelpListsOwnFlags(t *testing.T) {
	klogFlags := []string{"--log_file", "--skip_headers", "--logtostderr", "--vmodule", "-v, --v"}
	for _, cmd := range newRootCommand().Commands() {
		if cmd.Hidden {
			continue
		}
		help := run(t, cmd.Name(), "--help")
		for _, f := range klogFlags {
			if strings.Contains(help, f) {
				t.Errorf("berth %s --help lists klog's %s:\n%s", cmd.Name(), f, help)
			}
		}
		if cmd.Name() != "options" && !strings.Contains(help, `Use "berth options" for a list of global command-line options`) {
			t.Errorf("berth %s --help does not point to berth options:\n%s", cmd.Name(), help)
		}
	}
	up := run(t, "up", "--help")
	for _, f := range []string{"--data-dir", "--pod-cidr", "--bridge", "--scheduler-config", "--node-name"} {
		if !strings.Contains(up, f) {
			t.Errorf("berth up --help does not list %s:\n%s", f, up)
		}
	}
	down := run(t, "down", "--help")
	for _, f := range []string{"--data-dir", "--cleanup", "--timeout"} {
		if !strings.Contains(down, f) {
			t.Errorf("berth down --help does not list %s:\n%s", f, down)
		}
	}
	options := run(t, "options")
	for _, f := range klogFlags {
		if !strings.Contains(options, f) {
			t.Errorf("berth options does not list %s:\n%s", f, options)
		}
	}
}

// TestVerbosityOnEveryCommand: -v still sets klog's verbosity, wherever it is given.
func TestVerbosityOnEveryCommand(t *testing.T) {
	t.Cleanup(func() { run(t, "options", "-v", "0") })
	run(t, "options", "-v", "5")
	if !klog.V(5).Enabled() {
		t.Error("berth options -v 5 did not set the verbosity")
	}
	run(t, "-v", "2", "options")
	if !klog.V(2).Enabled() || klog.V(3).Enabled() {
		t.Error("berth -v 2 options did not set the verbosity to 2")
	}
}
