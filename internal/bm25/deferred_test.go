package bm25

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestDeferredWrites: an AsyncPersist index holds small writes (Seq moves at once, Bleve
// gets nothing yet) and every reader sees them: a search, Count, Missing; for one id held
// several times the last change wins (an upsert then a delete, a delete then an add); a
// large write after held ones applies in order; held writes reach Bleve by themselves
// after deferDelay or at deferMaxDocs; Close keeps them, with their sequence number.
func TestDeferredWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ix")
	b, err := OpenWith(path, Options{AsyncPersist: true})
	if err != nil {
		t.Fatal(err)
	}
	bleveCount := func() uint64 { n, _ := b.idx.DocCount(); return n } // what Bleve holds, not flushing
	held := func() int { b.held.mu.Lock(); defer b.held.mu.Unlock(); return len(b.held.ops) }

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Apply([]Doc{{ID: "a", Text: "otters hold hands"}, {ID: "b", Text: "walrus tusks"}}, nil, 1))
	must(b.Apply([]Doc{{ID: "c", Text: "sea otters sleep"}}, nil, 2))
	if b.Seq() != 2 || held() == 0 {
		t.Fatalf("seq %d, %d held: want 2 and the writes held", b.Seq(), held())
	}
	hits, err := b.Search(ctx, "otters", 10, nil)
	if err != nil || len(hits) != 2 {
		t.Fatalf("a search right after the writes: %v, %v", hits, err)
	}
	if held() != 0 || bleveCount() != 3 {
		t.Fatalf("after a search: %d held, Bleve has %d", held(), bleveCount())
	}

	// Last change wins: "a" upserted then deleted, "d" deleted then added, "b" replaced.
	must(b.Apply([]Doc{{ID: "a", Text: "otters again"}}, nil, 3))
	must(b.Apply(nil, []string{"a", "d"}, 4))
	must(b.Apply([]Doc{{ID: "d", Text: "a new otters note"}, {ID: "b", Text: "penguins"}}, nil, 5))
	if n, err := b.Count(); err != nil || n != 3 {
		t.Fatalf("count %d, %v; want 3 (b, c, d)", n, err)
	}
	if miss, err := b.Missing([]string{"a", "b", "c", "d"}); err != nil || !slices.Equal(miss, []string{"a"}) {
		t.Fatalf("missing %v, %v; want [a]", miss, err)
	}
	hits, _ = b.Search(ctx, "otters", 10, nil)
	if ids := hitIDs(hits); !slices.Equal(ids, []string{"c", "d"}) && !slices.Equal(ids, []string{"d", "c"}) {
		t.Fatalf("otters after the held changes: %v, want c and d", ids)
	}

	// A large write after held ones: both, in order (it re-adds "a", deleted by a held one).
	must(b.Apply(nil, []string{"c"}, 6))
	big := []Doc{{ID: "a", Text: "otters return"}}
	for i := range deferMaxDocs {
		big = append(big, Doc{ID: fmt.Sprintf("x%03d", i), Text: "filler"})
	}
	must(b.Apply(big, nil, 7))
	if miss, _ := b.Missing([]string{"a", "c"}); !slices.Equal(miss, []string{"c"}) {
		t.Fatalf("after a held delete and a large write: missing %v, want [c]", miss)
	}

	// deferMaxDocs held changes go to Bleve at once; fewer go after deferDelay (polled:
	// nothing reads the index meanwhile).
	var many []string
	for i := range deferMaxDocs {
		must(b.Apply([]Doc{{ID: fmt.Sprintf("m%03d", i), Text: "many"}}, nil, uint64(8+i)))
		many = append(many, fmt.Sprintf("m%03d", i))
	}
	if held() >= deferMaxDocs {
		t.Fatalf("%d held, the bound is %d", held(), deferMaxDocs)
	}
	before := bleveCount() // (the 256th held change flushed them all)
	must(b.Apply([]Doc{{ID: "late", Text: "late note"}}, nil, 8+deferMaxDocs))
	// (held() is 0 as soon as a flush takes the changes; Bleve has them when it is done)
	for deadline := time.Now().Add(time.Minute); bleveCount() != before+1 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if held() != 0 || bleveCount() != before+1 {
		t.Fatalf("held writes not flushed by themselves: %d held, Bleve %d (was %d before one more)", held(), bleveCount(), before)
	}
	// One more held at Close: kept, and the sequence number with it.
	must(b.Apply([]Doc{{ID: "last", Text: "last note"}}, nil, 9+deferMaxDocs))
	must(b.Close())
	r, err := OpenWith(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Seq() != 9+deferMaxDocs {
		t.Fatalf("reopened seq %d, want %d", r.Seq(), 9+deferMaxDocs)
	}
	if miss, _ := r.Missing(append([]string{"last", "late", "a", "b", "d"}, many...)); len(miss) != 0 {
		t.Fatalf("reopened, missing %v", miss)
	}
}

// A non-AsyncPersist index holds nothing: Bleve has each write when Apply returns.
func TestNoDeferralWithoutAsync(t *testing.T) {
	b, err := OpenWith(filepath.Join(t.TempDir(), "ix"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Apply([]Doc{{ID: "a", Text: "otters"}}, nil, 1); err != nil {
		t.Fatal(err)
	}
	if n, _ := b.idx.DocCount(); n != 1 {
		t.Fatalf("Bleve holds %d after a synchronous Apply", n)
	}
}

func hitIDs(hits []Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}
