package volume

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestWritePayloadSwapsAtomically(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	read := func(p string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		return string(b)
	}
	if err := writePayload(dir, map[string]FileProjection{
		"a":     {Data: []byte("one"), Mode: 0o644},
		"sub/b": {Data: []byte("two"), Mode: 0o600},
	}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "one" || read("sub/b") != "two" {
		t.Fatalf("first payload: a=%q sub/b=%q", read("a"), read("sub/b"))
	}
	if info, _ := os.Stat(filepath.Join(dir, "sub/b")); info.Mode().Perm() != 0o600 {
		t.Errorf("sub/b mode %v, want 0600", info.Mode().Perm())
	}
	if target, _ := os.Readlink(filepath.Join(dir, "a")); target != "..data/a" {
		t.Errorf("a links to %q, want ..data/a", target)
	}
	first, _ := os.Readlink(filepath.Join(dir, dataDirName))

	// The same payload again writes nothing.
	if err := writePayload(dir, map[string]FileProjection{"a": {Data: []byte("one"), Mode: 0o644}, "sub/b": {Data: []byte("two"), Mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, dataDirName)); again != first {
		t.Errorf("an unchanged payload was rewritten (%s → %s)", first, again)
	}

	// A new payload: a changes, sub goes, c comes; the old version is removed.
	if err := writePayload(dir, map[string]FileProjection{"a": {Data: []byte("uno"), Mode: 0o644}, "c": {Data: []byte("three"), Mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "uno" || read("c") != "three" {
		t.Errorf("second payload: a=%q c=%q", read("a"), read("c"))
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 4 || !strings.HasPrefix(names[0], "..20") || names[1] != dataDirName || names[2] != "a" || names[3] != "c" {
		t.Errorf("entries after the swap: %v, want one timestamped dir, ..data, a, c", names)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("the old version %s is still there", first)
	}
}

func TestWritePayloadRefusesEscapes(t *testing.T) {
	for _, p := range []string{"/abs", "../up", "a/../../b", "..data"} {
		if err := writePayload(t.TempDir(), map[string]FileProjection{p: {Data: []byte("x"), Mode: 0o644}}); err == nil {
			t.Errorf("path %q was accepted", p)
		}
	}
}
