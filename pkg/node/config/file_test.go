package config

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/berth-cluster/berth/pkg/node/types"
)

func manifest(name, image string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "\nspec:\n  containers:\n  - name: c\n    image: " + image + "\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// podSet renders a SET as "name=image,..." sorted by name.
func podSet(t *testing.T, u types.PodUpdate) string {
	t.Helper()
	if u.Op != types.SET || u.Source != types.FileSource && u.Source != types.HTTPSource {
		t.Fatalf("got %s from %q, want a SET from a static source", u.Op, u.Source)
	}
	var parts []string
	for _, p := range u.Pods {
		parts = append(parts, p.Name+"="+p.Spec.Containers[0].Image)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// waitForSet reads SETs from updates until one renders as want.
func waitForSet(t *testing.T, updates <-chan interface{}, want string) types.PodUpdate {
	t.Helper()
	deadline := time.After(testTimeout)
	last := "<none>"
	for {
		select {
		case obj := <-updates:
			u := obj.(types.PodUpdate)
			if last = podSet(t, u); last == want {
				return u
			}
		case <-deadline:
			t.Fatalf("no SET of %q; the last was %q", want, last)
		}
	}
}

func TestSourceFileDirectoryWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "web.yaml"), manifest("web", "nginx:1"))
	writeFile(t, filepath.Join(dir, ".hidden.yaml"), manifest("hidden", "busybox"))
	writeFile(t, filepath.Join(dir, "README"), "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "x.yaml"), manifest("x", "busybox"))

	updates := make(chan interface{})
	// A long period: every change below must come through inotify.
	NewSourceFile(ctx, dir+"/", "node-1", time.Hour, updates)
	first := waitForSet(t, updates, "web-node-1=nginx:1")
	pod := first.Pods[0]
	if pod.Spec.NodeName != "node-1" || pod.Annotations[types.ConfigHashAnnotationKey] != string(pod.UID) {
		t.Errorf("not a static pod of node-1: %+v", pod.ObjectMeta)
	}

	writeFile(t, filepath.Join(dir, "db.json"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"db"},"spec":{"containers":[{"name":"c","image":"postgres"}]}}`)
	waitForSet(t, updates, "db-node-1=postgres,web-node-1=nginx:1")

	writeFile(t, filepath.Join(dir, "web.yaml"), manifest("web", "nginx:2"))
	changed := waitForSet(t, updates, "db-node-1=postgres,web-node-1=nginx:2")
	for _, p := range changed.Pods {
		if p.Name == "web-node-1" && p.UID == pod.UID {
			t.Error("a changed manifest kept its UID")
		}
	}

	// A broken write leaves the pod until the next relist.
	writeFile(t, filepath.Join(dir, "web.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {}\n")
	waitForSet(t, updates, "db-node-1=postgres,web-node-1=nginx:2")

	// An atomic replace through a dotfile.
	tmp := filepath.Join(dir, ".web.yaml.tmp")
	writeFile(t, tmp, manifest("web", "nginx:3"))
	if err := os.Rename(tmp, filepath.Join(dir, "web.yaml")); err != nil {
		t.Fatal(err)
	}
	waitForSet(t, updates, "db-node-1=postgres,web-node-1=nginx:3")

	if err := os.Remove(filepath.Join(dir, "db.json")); err != nil {
		t.Fatal(err)
	}
	waitForSet(t, updates, "web-node-1=nginx:3")

	// The directory goes away and comes back: the watch is set up again.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	waitForSet(t, updates, "")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "back.yaml"), manifest("back", "busybox"))
	waitForSet(t, updates, "back-node-1=busybox")
}

func TestSourceFileRelist(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox"))

	// No watch: only the periodic relist sees changes.
	updates := make(chan interface{})
	s := newSourceFile(dir, "node-1", updates)
	go s.run(ctx, 20*time.Millisecond, nil)
	waitForSet(t, updates, "a-node-1=busybox,b-node-1=busybox")

	writeFile(t, filepath.Join(dir, "b.yaml"), manifest("b", "busybox:2"))
	waitForSet(t, updates, "a-node-1=busybox,b-node-1=busybox:2")

	// On a relist an invalid manifest is dropped, and its pod with it.
	writeFile(t, filepath.Join(dir, "a.yaml"), "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {}\n")
	waitForSet(t, updates, "b-node-1=busybox:2")

	// Two manifests of the same pod name both reach the merge, which keeps the first.
	writeFile(t, filepath.Join(dir, "c.yaml"), manifest("b", "busybox:3"))
	waitForSet(t, updates, "b-node-1=busybox:2,b-node-1=busybox:3")
}

func TestSourceFileSingleFile(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	path := filepath.Join(dir, "web.yaml")
	other := filepath.Join(dir, "other.yaml")
	writeFile(t, other, manifest("other", "busybox"))

	updates := make(chan interface{})
	NewSourceFile(ctx, path, "node-1", time.Hour, updates)
	waitForSet(t, updates, "") // not there yet

	writeFile(t, path, manifest("web", "nginx:1"))
	waitForSet(t, updates, "web-node-1=nginx:1")

	// An editor's save: a new file renamed over the old.
	writeFile(t, path+".swp", manifest("web", "nginx:2"))
	if err := os.Rename(path+".swp", path); err != nil {
		t.Fatal(err)
	}
	waitForSet(t, updates, "web-node-1=nginx:2")

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitForSet(t, updates, "")
}

func TestSourceFileMissingPath(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	updates := make(chan interface{})
	dir := filepath.Join(t.TempDir(), "manifests")
	NewSourceFile(ctx, dir, "node-1", time.Hour, updates)
	// An empty SET at once, so the source counts as seen.
	waitForSet(t, updates, "")

	// The directory appears: the watch, retried every second, finds it.
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.yaml"), manifest("a", "busybox"))
	u := waitForSet(t, updates, "a-node-1=busybox")
	if u.Pods[0].Spec.Tolerations[0].Effect != v1.TaintEffectNoExecute {
		t.Errorf("file pod without the NoExecute toleration: %v", u.Pods[0].Spec.Tolerations)
	}
}
