package bm25

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTopKDoesNotCacheWholeLists (issue 22, points 1 and 2; black box: only the public API):
// a top-10 query over a term found in every one of 16,000 documents (a list of many zap
// chunks; one document in 400 holds it four times) gives exactly what exhaustive
// evaluation gives, while what it keeps cached (in a budget small beside the list) is a
// small part of the 8 bytes a posting that decoding the whole list costs: only the blocks
// that could hold a top-10 document are decoded and kept.
func TestTopKDoesNotCacheWholeLists(t *testing.T) {
	withChunkMode(t, 128)
	b, err := OpenWith("", Options{PostingsCacheBytes: 256 << 10}) // small beside the list

	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rng := rand.New(rand.NewPCG(11, 11))
	const n = 16000
	var docs []Doc
	for i := range n {
		w := make([]string, 5+rng.IntN(60))
		for j := range w {
			w[j] = vocab[rng.IntN(len(vocab))]
		}
		w[0] = "common"
		if i%400 == 0 { // one document in 400 holds it four times
			w = append(w, "common", "common", "common")
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: strings.Join(w, " ")})
	}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	want, got := searchBoth(t, b, "common", 10)
	checkSame(t, "common", got, want)
	bytes, _, _, _ := b.CacheStats()
	if whole := 8 * n; bytes*2 > whole {
		t.Fatalf("the cache holds %d bytes after one top-10 query; the whole list is %d", bytes, whole)
	}
}
