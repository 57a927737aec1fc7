package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessagesPointTheRightWay: the hint for a folder that is not a store names a command
// that would work (a new folder inside it, not the folder itself), and a missing PATH is
// named as such, not as a raw lstat error; neither creates a store.
func TestMessagesPointTheRightWay(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "notes")
	writeFile(t, filepath.Join(other, "a.txt"), "hello")
	_, errs := mustCLI(t, 1, "count", "--store", other)
	want := "memory index --store " + filepath.Join(other, "memory-store")
	if !strings.Contains(errs, want) || strings.Contains(errs, "memory index --store "+other+" ") {
		t.Errorf("count on a folder that is not a store: %q, want a hint with %q", errs, want)
	}
	_, errs = mustCLI(t, 1, "count", "--store", filepath.Join(dir, "missing"))
	if !strings.Contains(errs, "create one with `memory index --store "+filepath.Join(dir, "missing")) {
		t.Errorf("count on a missing folder: %q", errs)
	}

	s := filepath.Join(dir, "s")
	missing := filepath.Join(dir, "nope.jsonl")
	_, errs = mustCLI(t, 1, "index", "--store", s, missing)
	if !strings.Contains(errs, missing+": no such file or folder") || strings.Contains(errs, "lstat") {
		t.Errorf("index of a missing path: %q", errs)
	}
	if _, err := os.Stat(filepath.Join(s, "manifest.json")); err == nil {
		t.Errorf("index of a missing path created a store")
	}
}
