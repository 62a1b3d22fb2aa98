// Package e2e holds berth's end-to-end tests: the berth binary as users run it, driven by the
// real kubectl on PATH. They cover the whole API server flow (decode → default → validate →
// admit → store) from the outside, as a user sees it: kubectl's output, exit codes and the
// state left in etcd.
//
// TestMain builds the binary once; one `berth up` started on first use serves most tests,
// each in its own namespace; the restart and external-etcd tests run their own processes.
// Every process a test starts is stopped when it ends, and TestMain kills whatever is left.
package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

var (
	// workDir is this run's scratch directory: binaries, kubectl's cache, the shared data dir.
	workDir string
	// berthBin is the berth binary TestMain built.
	berthBin string
	// kubectlBin is the kubectl on PATH.
	kubectlBin string
	// moduleRoot is the directory of berth's go.mod.
	moduleRoot string
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	var err error
	if kubectlBin, err = exec.LookPath("kubectl"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: these tests drive the real kubectl, and none is on PATH: %v\n", err)
		return 1
	}
	if moduleRoot, err = findModuleRoot(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	if workDir, err = os.MkdirTemp("", "berth-e2e-"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	// A panic or an early return must not leave berth or etcd running.
	defer killLeftovers()

	start := time.Now()
	berthBin = filepath.Join(workDir, "bin", "berth")
	if err := goBuild(berthBin, "./cmd/berth"); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s in %s; kubectl is %s\n", berthBin, time.Since(start).Round(time.Millisecond), kubectlBin)

	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the shared cluster: %v\n", err)
		code = 1
	}
	if err := stopNodeShared(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the node tests' cluster: %v\n", err)
		code = 1
	}
	if n := killLeftovers(); n > 0 {
		fmt.Fprintf(os.Stderr, "e2e: killed %d process group(s) that tests left running\n", n)
		code = 1
	}
	return code
}

// findModuleRoot walks up from the working directory (the package's, under go test) to the
// directory holding go.mod.
func findModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			if !bytes.Contains(data, []byte("module github.com/berth-cluster/berth\n")) {
				return "", fmt.Errorf("%s/go.mod is not berth's module", dir)
			}
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// goBuild builds a main package of berth's module (or of a module it requires) into out.
func goBuild(out, pkg string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building %s needs the go command: %w", pkg, err)
	}
	cmd := exec.Command(goBin, "build", "-o", out, pkg)
	cmd.Dir = moduleRoot
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build -o %s %s: %w\n%s", out, pkg, err, output)
	}
	return nil
}
