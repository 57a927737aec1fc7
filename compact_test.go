package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestCollectionCompact: a collection written in many Adds compacts its BM25 index to one
// segment that answers every query as before, in this process and in a read-only one after
// it; a read-only store refuses Compact with ErrReadOnly and a missing collection is
// ErrCollectionNotFound; Memory.Compact does every collection.
func TestCollectionCompact(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	ctx := context.Background()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "beta", "gamma", "delta", "compiler", "garbage", "browser", "memory", "language", "network"}
	for batch := range 6 {
		var docs []Document
		for i := range 40 {
			docs = append(docs, Document{ID: fmt.Sprintf("b%d-%02d", batch, i),
				Text: fmt.Sprintf("%s %s note %d %s", words[(batch+i)%len(words)], words[(i*7)%len(words)], i, words[(batch*3+i)%len(words)])})
		}
		if err := m.Collection("notes").Add(ctx, docs...); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Add(ctx, Document{ID: "x", Text: "alpha in the default collection"}); err != nil {
		t.Fatal(err)
	}
	queries := []string{"alpha", "garbage browser", "compiler language memory", "note 7"}
	answer := func(m *Memory) []string {
		var out []string
		for _, q := range queries {
			res, err := m.Collection("notes").Search(ctx, q, WithMode(BM25), TopK(15))
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res {
				out = append(out, fmt.Sprintf("%s %s %.6f", q, r.ID, r.Score))
			}
		}
		return out
	}
	before := answer(m)
	if err := m.Collection("nope").Compact(ctx); !errors.Is(err, ErrCollectionNotFound) {
		t.Fatalf("Compact of a missing collection: %v, want ErrCollectionNotFound", err)
	}
	if err := m.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	if after := answer(m); !slices.Equal(before, after) {
		t.Fatalf("results changed by Compact:\n%v\n%v", before, after)
	}
	for _, col := range []string{"notes", ""} {
		s, err := m.Collection(col).state(false)
		if err != nil || s == nil {
			t.Fatal(col, err)
		}
		if n, err := s.bm25.SegmentCount(); err != nil || n != 1 {
			t.Fatalf("collection %q: %d segments after Compact (%v), want 1", col, n, err)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := answer(r); !slices.Equal(before, got) {
		t.Fatalf("a read-only open after Compact answers otherwise:\n%v\n%v", before, got)
	}
	if err := r.Collection("notes").Compact(ctx); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Compact on a read-only store: %v, want ErrReadOnly", err)
	}
}
