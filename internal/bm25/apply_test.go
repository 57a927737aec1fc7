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
