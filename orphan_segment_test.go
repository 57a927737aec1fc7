package memory

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOrphanSegmentIgnored leaves segment files that no snapshot of the BM25 index names
// (a kill during a segment write leaves an empty one) beside a healthy index: a read-only
// open must neither distrust nor rebuild the index, check must be clean, and the next
// writable open removes the orphans (issue 21, point 6).
func TestOrphanSegmentIgnored(t *testing.T) {
	dir := t.TempDir()
	m := openT(t, dir)
	for i := range 40 {
		if err := m.Add(bg, crashDoc(i)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := m.Search(bg, "crashword7", WithMode(BM25), TopK(3))
	if err != nil || len(want) == 0 {
		t.Fatalf("search: %v, %d results", err, len(want))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	segDir := filepath.Join(m.dx.colPath(bm25Dir, DefaultCollection), "store")
	orphans := map[string][]byte{
		"000000000abc.zap": nil,                                   // killed before any byte
		"000000000abd.zap": []byte(strings.Repeat("partial", 40)), // killed mid-write
	}
	for name, data := range orphans {
		if err := os.WriteFile(filepath.Join(segDir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	for round := range 2 { // the second open must not have been changed by the first
		var logs strings.Builder
		ro, err := Open(dir, ReadOnly(), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := ro.Check(bg, false) // first: it checks the index on disk before opening it
		if err != nil {
			t.Fatal(err)
		}
		if !rep.OK() {
			t.Fatalf("round %d: check of a store with orphan segments is not clean:\n%s", round, fmt.Sprint(rep.Indexes))
		}
		got, err := ro.Search(bg, "crashword7", WithMode(BM25), TopK(3))
		if err != nil || !slices.Equal(ids(got), ids(want)) {
			t.Fatalf("round %d: read-only search: %v, %v (want %v)", round, err, ids(got), ids(want))
		}
		if err := ro.Close(); err != nil {
			t.Fatal(err)
		}
		if l := logs.String(); strings.Contains(l, "rebuild") || strings.Contains(l, "cannot be trusted") {
			t.Fatalf("round %d: a read-only open distrusted the index for an orphan segment:\n%s", round, l)
		}
		for name := range orphans {
			if !fileExists(filepath.Join(segDir, name)) {
				t.Fatalf("round %d: a read-only open removed %s", round, name)
			}
		}
	}

	var logs strings.Builder
	m = openT(t, dir, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	got, err := m.Search(bg, "crashword7", WithMode(BM25), TopK(3)) // opens the indexes
	if err != nil || !slices.Equal(ids(got), ids(want)) {
		t.Fatalf("writable search: %v, %v (want %v)", err, ids(got), ids(want))
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); strings.Contains(l, "rebuild") {
		t.Fatalf("a writable open rebuilt the index for an orphan segment:\n%s", l)
	}
	for name := range orphans {
		if fileExists(filepath.Join(segDir, name)) {
			t.Fatalf("the writable open left the orphan %s", name)
		}
	}
	live, _ := filepath.Glob(filepath.Join(segDir, "*.zap"))
	if len(live) == 0 {
		t.Fatal("the writable open removed the live segments")
	}
}
