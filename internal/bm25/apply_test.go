package bm25

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
)

// TestParallelApplyMatchesSerial indexes one large Apply (cut into concurrent batches) and
// the same documents in small Applies, and checks that both indexes answer the same ids
// and scores, hold the same count and record the last seq.
func TestParallelApplyMatchesSerial(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	rng := rand.New(rand.NewSource(7))
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu"}
	n := 3*minPartDocs + 17
	docs := make([]Doc, n)
	for i := range docs {
		text := ""
		for range 3 + rng.Intn(20) {
			text += words[rng.Intn(len(words))] + " "
		}
		docs[i] = Doc{ID: fmt.Sprintf("d%05d", i), Text: text}
	}
	big, err := Open(filepath.Join(t.TempDir(), "ix"))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	small, err := Open(filepath.Join(t.TempDir(), "ix"))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	if err := big.Apply(docs, []string{"nothing"}, 42); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 500 {
		if err := small.Apply(docs[i:min(i+500, n)], nil, 42); err != nil {
			t.Fatal(err)
		}
	}
	if big.Seq() != 42 {
		t.Fatalf("seq %d, want 42", big.Seq())
	}
	bn, _ := big.Count()
	sn, _ := small.Count()
	if bn != uint64(n) || sn != uint64(n) {
		t.Fatalf("counts %d and %d, want %d", bn, sn, n)
	}
	for _, q := range []string{"alpha", "beta gamma", "mu lambda kappa", "zeta"} {
		a, err := big.Search(context.Background(), q, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := small.Search(context.Background(), q, 20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: parallel apply %v, serial %v", q, a, b)
		}
	}
}

// TestPrepareThenApply: bodies analysed ahead (Prepare) index as Apply would analyse them;
// a document whose title or text changed since it was prepared is analysed again (its
// prepared terms are not indexed); what Unprepare dropped, and what Apply did not take, is
// not used by a later Apply.
func TestPrepareThenApply(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	n := 2*preparePartDocs + 31
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%05d", i), Title: words[i%3], Text: words[i%len(words)] + " " + words[(i*7)%len(words)]}
	}
	plain, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	ix, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	// Prepared with other words: d00001's text and d00002's title changed before Apply.
	prep := append([]Doc(nil), docs...)
	prep[1].Text = "stalea"
	prep[2].Title = "staleb"
	ix.Prepare(prep)
	if len(ix.prepared) != n {
		t.Fatalf("%d bodies prepared, want %d", len(ix.prepared), n)
	}
	if err := ix.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	if ix.prepared != nil {
		t.Fatal("Apply kept prepared bodies")
	}
	// Prepared, then dropped: never indexed.
	ix.Prepare([]Doc{{ID: "x1", Text: "stalec"}})
	ix.Unprepare()
	ix.Prepare([]Doc{{ID: "x2", Text: "staled"}}) // left for an Apply that does not index x2
	if err := ix.Apply([]Doc{{ID: "x1", Text: "fresh one"}}, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := plain.Apply([]Doc{{ID: "x1", Text: "fresh one"}}, nil, 2); err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]Doc{{ID: "x2", Text: "fresh two"}}, nil, 3); err != nil {
		t.Fatal(err)
	}
	if err := plain.Apply([]Doc{{ID: "x2", Text: "fresh two"}}, nil, 3); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"alpha", "beta gamma", "theta eta", "zeta", "fresh", "stalea", "staleb", "stalec", "staled"} {
		want, err := plain.Search(context.Background(), q, 50, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ix.Search(context.Background(), q, 50, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: prepared index %v, plain %v", q, got, want)
		}
		if strings.HasPrefix(q, "stale") && len(got) > 0 {
			t.Fatalf("%q: a stale prepared body was indexed: %v", q, got)
		}
	}
}

// TestAsyncPersist: with AsyncPersist, small Applies return before they are persisted,
// yet Close persists them all: a reopened index holds every document and the last seq.
// More unpersisted Applies than asyncMaxPending, and an Apply of asyncMaxDocs documents,
// wait (they return with every earlier batch persisted).
func TestAsyncPersist(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ix")
	b, err := OpenWith(path, Options{AsyncPersist: true})
	if err != nil {
		t.Fatal(err)
	}
	if !b.async() {
		t.Fatal("an on-disk writable index with AsyncPersist is not async")
	}
	seq := uint64(0)
	for i := range asyncMaxPending + 40 {
		seq++
		if err := b.Apply([]Doc{{ID: fmt.Sprintf("s%04d", i), Text: fmt.Sprintf("small word%d", i)}}, nil, seq); err != nil {
			t.Fatal(err)
		}
		if p := b.pending.Load(); p > asyncMaxPending+1 {
			t.Fatalf("%d batches unpersisted, bound %d", p, asyncMaxPending)
		}
	}
	big := make([]Doc, asyncMaxDocs)
	for i := range big {
		big[i] = Doc{ID: fmt.Sprintf("b%05d", i), Text: "big batch document"}
	}
	seq++
	if err := b.Apply(big, []string{"s0000"}, seq); err != nil {
		t.Fatal(err)
	}
	if p := b.pending.Load(); p != 0 {
		t.Errorf("a large Apply returned with %d batches unpersisted", p)
	}
	seq++
	if err := b.Apply([]Doc{{ID: "last", Text: "the lastword"}}, nil, seq); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = OpenWith(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Seq() != seq {
		t.Fatalf("reopened at seq %d, want %d", b.Seq(), seq)
	}
	want := uint64(asyncMaxPending + 40 - 1 + asyncMaxDocs + 1)
	if n, err := b.Count(); err != nil || n != want {
		t.Fatalf("reopened with %d documents (%v), want %d", n, err, want)
	}
	hits, err := b.Search(context.Background(), "lastword", 5, nil)
	if err != nil || len(hits) != 1 || hits[0].ID != "last" {
		t.Fatalf("lastword: %v %v", hits, err)
	}
}

// TestAsyncPersistNotRecorded: AsyncPersist is a runtime setting, never recorded with the
// index: a writer opened without it after one with it waits for its Applies to be
// persisted, so what it applied is on disk after Close. (Scorch records the configuration
// an index is created with and uses it at every later open; a recorded unsafe_batch lost
// a later plain writer's last Apply at Close, 12 times in 20.)
func TestAsyncPersistNotRecorded(t *testing.T) {
	for round := range 5 {
		path := filepath.Join(t.TempDir(), "ix")
		b, err := OpenWith(path, Options{AsyncPersist: true})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			if err := b.Apply([]Doc{{ID: fmt.Sprintf("d%d", i), Text: "x y"}}, nil, uint64(i+1)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if b, err = OpenWith(path, Options{}); err != nil {
			t.Fatal(err)
		}
		if b.async() || b.pending.Load() != 0 {
			t.Fatal("a plain writer runs async")
		}
		if err := b.Apply(nil, []string{"d3"}, 11); err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if b, err = OpenWith(path, Options{ReadOnly: true}); err != nil {
			t.Fatal(err)
		}
		n, err := b.Count()
		seq := b.Seq()
		b.Close()
		if err != nil || n != 9 || seq != 11 {
			t.Fatalf("round %d: reopened with %d documents at seq %d (%v), want 9 at 11", round, n, seq, err)
		}
	}
}
