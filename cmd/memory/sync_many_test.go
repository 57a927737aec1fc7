package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/memtest"
)

// TestSyncManyVanishedSources: --sync removes more vanished sources than one filter may name
// (maxReplaceSources a transaction), rather than failing on the filter caps.
func TestSyncManyVanishedSources(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	store := filepath.Join(dir, "store")
	n := maxReplaceSources + 150
	for i := range n {
		writeFile(t, filepath.Join(docs, fmt.Sprintf("f%05d.md", i)), fmt.Sprintf("# note %d\nbody of note %d", i, i))
	}
	mustCLI(t, 0, "index", "--store", store, docs)
	for i := 1; i < n; i++ { // all but f00000.md vanish
		if err := os.Remove(filepath.Join(docs, fmt.Sprintf("f%05d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	out, errs := mustCLI(t, 0, "index", "--store", store, "--sync", docs)
	if want := fmt.Sprintf("removed %d documents of %d vanished sources", n-1, n-1); !strings.Contains(out, want) {
		t.Fatalf("want %q in\n%s\n%s", want, out, errs)
	}
	m := openTest(t, store)
	defer m.Close()
	if c := memtest.Count(t, m); c != 1 {
		t.Fatalf("after sync: %d documents, want 1", c)
	}
}
