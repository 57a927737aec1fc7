package hybrid

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"reflect"
	"runtime"
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
	docs := make([]BM25Doc, n)
	for i := range docs {
		text := ""
		for range 3 + rng.Intn(20) {
			text += words[rng.Intn(len(words))] + " "
		}
		docs[i] = BM25Doc{ID: fmt.Sprintf("d%05d", i), Text: text}
	}
	big, err := OpenBM25(filepath.Join(t.TempDir(), "ix"))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	small, err := OpenBM25(filepath.Join(t.TempDir(), "ix"))
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
