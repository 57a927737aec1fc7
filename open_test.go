package memory

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// notesStore writes a closed store with three documents in collection "notes" ("alpha" is
// in a and c) and returns its directory.
func notesStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "s")
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Document{{ID: "a", Text: "alpha beta gamma"}, {ID: "b", Text: "beta delta"}, {ID: "c", Text: "gamma epsilon alpha"}}
	if err := m.Collection("notes").Add(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openNotes opens the store at dir (read-only when ro) and returns it with its "notes".
func openNotes(t *testing.T, dir string, ro bool) (*Memory, *Collection) {
	t.Helper()
	var opts []Option
	if ro {
		opts = append(opts, ReadOnly())
	}
	m, err := OpenExisting(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Collection("notes")
}

// TestCollectionOpen: Collection.Open opens a closed collection's indexes (read-only and
// writable stores alike), computes the BM25 statistics of the current snapshot, and
// searches after it answer as without it; a missing collection is ErrCollectionNotFound,
// a closed store ErrClosed.
func TestCollectionOpen(t *testing.T) {
	dir, ctx := notesStore(t), context.Background()
	for _, ro := range []bool{false, true} {
		m, c := openNotes(t, dir, ro)
		if s := m.reg.loadedState("notes"); s != nil && s.Indexes != nil {
			t.Fatalf("read-only %v: the indexes are open before any use", ro)
		}
		if err := c.Open(ctx); err != nil {
			t.Fatalf("read-only %v: Open: %v", ro, err)
		}
		s := m.reg.loadedState("notes")
		if s == nil || s.Indexes == nil || s.bm25 == nil {
			t.Fatalf("read-only %v: Open left the indexes closed", ro)
		}
		if !s.bm25.Warmed() {
			t.Fatalf("read-only %v: Open did not compute the BM25 statistics", ro)
		}
		if err := c.Open(ctx); err != nil { // (again: nothing to do)
			t.Fatal(err)
		}
		res, err := c.Search(ctx, "alpha", WithMode(BM25))
		if err != nil || len(res) != 2 || res[0].ID != "a" && res[0].ID != "c" {
			t.Fatalf("read-only %v: search after Open: %v, %v", ro, res, err)
		}
		if err := m.Collection("nothing").Open(ctx); !errors.Is(err, ErrCollectionNotFound) {
			t.Fatalf("read-only %v: a missing collection: %v", ro, err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := c.Open(cctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("read-only %v: a cancelled context: %v", ro, err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Open(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("read-only %v: a closed store: %v", ro, err)
		}
	}
}

// TestCollectionOpenDamagedBM25: Collection.Open on a collection whose BM25 body postings
// file was damaged (bytes flipped in its lists and footer) rebuilds the index from the
// store of record, read-only and writable alike, and the search after it answers as
// before the damage.
func TestCollectionOpenDamagedBM25(t *testing.T) {
	dir, ctx := notesStore(t), context.Background()
	for _, ro := range []bool{false, true} {
		files, _ := filepath.Glob(filepath.Join(dir, "bm25", "*", "store", "*.zap.post"))
		if len(files) == 0 {
			t.Fatal("no body postings file to damage")
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			b[len(b)-90] ^= 0xff
			if err := os.WriteFile(f, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		m, c := openNotes(t, dir, ro)
		if err := c.Open(ctx); err != nil {
			t.Fatalf("read-only %v: Open on a damaged index: %v", ro, err)
		}
		res, err := c.Search(ctx, "alpha", WithMode(BM25))
		if got := ids(res); err != nil || len(got) != 2 || !slices.Contains(got, "a") || !slices.Contains(got, "c") {
			t.Fatalf("read-only %v: search after Open: %v, %v", ro, got, err)
		}
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
