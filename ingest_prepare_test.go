package memory

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestLargeWritesIndexWhatIsStored: writes large enough that their BM25 analysis runs
// ahead of the store's transaction index the text that was stored: a second Add of the same
// ids fails (ErrDuplicateID) and leaves nothing of its text in the index (nor does a small
// write of some of those ids, which Apply analyses itself), an Upsert that
// changes the text replaces the indexed words, and searches find each document by its
// own word.
func TestLargeWritesIndexWhatIsStored(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := prepareMinUnits + 37
	docs := func(word string) []Document {
		out := make([]Document, n)
		for i := range out {
			out[i] = Document{ID: fmt.Sprintf("d%05d", i), Title: "common", Text: fmt.Sprintf("%s tok%dx", word, i)}
		}
		return out
	}
	search := func(q string) []Result {
		t.Helper()
		res, err := m.Search(ctx, q, WithMode(BM25), TopK(n+10))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if err := m.Add(ctx, docs("first")...); err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, docs("second")...); !errors.Is(err, ErrDuplicateID) {
		t.Fatalf("second Add: %v, want ErrDuplicateID", err)
	}
	if got := search("second"); len(got) != 0 {
		t.Fatalf("the failed Add's text is indexed: %d hits", len(got))
	}
	if got := search("first"); len(got) != n {
		t.Fatalf("first: %d hits, want %d", len(got), n)
	}
	// A small write (analysed by Apply itself) of ids the failed Add had analysed ahead.
	if err := m.Upsert(ctx, docs("fourth")[:10]...); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"first": n - 10, "second": 0, "fourth": 10} {
		if got := search(q); len(got) != want {
			t.Fatalf("%q after a small Upsert: %d hits, want %d", q, len(got), want)
		}
	}
	if err := m.Upsert(ctx, docs("third")...); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"first": 0, "second": 0, "fourth": 0, "third": n, "tok17x": 1} {
		if got := search(q); len(got) != want {
			t.Fatalf("%q after Upsert: %d hits, want %d", q, len(got), want)
		}
	}
	if got := search("tok1029x"); len(got) != 1 || got[0].ID != "d01029" {
		t.Fatalf("tok1029x: %+v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopened, the index agrees with the store of record.
	if m, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if got := search("third"); len(got) != n {
		t.Fatalf("third after reopen: %d hits, want %d", len(got), n)
	}
}
