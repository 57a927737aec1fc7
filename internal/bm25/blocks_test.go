package bm25

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	zap "github.com/blevesearch/zapx/v16"
)

// withChunkMode makes the zap segments written during the test use chunk mode m (a mode
// up to 1,024 is the chunk size in documents), so that small indexes have posting lists of
// many blocks.
func withChunkMode(t *testing.T, m uint32) {
	old := zap.DefaultChunkMode
	zap.DefaultChunkMode = m
	t.Cleanup(func() { zap.DefaultChunkMode = old })
}

// openRandomOnDisk opens an on-disk index in a new folder (returned) holding n random
// documents (randomDoc, seed 3), written in one batch.
func openRandomOnDisk(t *testing.T, n int) (*Index, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "bm25")
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 3))
	var docs []Doc
	for i := range n {
		docs = append(docs, randomDoc(rng, fmt.Sprintf("d%04d", i)))
	}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	return b, dir
}

// multiBlockTerms counts the cached term metadata of more than one block, and the blocks.
func multiBlockTerms(b *Index) (terms, blocks int) {
	c := b.postings
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tb := range c.meta {
		if len(tb.count) > 1 {
			terms++
			blocks += len(tb.count)
		}
	}
	return terms, blocks
}

// TestBlockMaxMatchesExhaustive is the property test of TestMaxScoreMatchesExhaustive over
// segments whose posting lists have many blocks (body-file chunks of 4 and 16 documents):
// block skipping, windows, the decoding of single blocks, single postings looked up without
// decoding their block (blockCursor.lookup), block metadata read from the body files, all
// give exactly what exhaustive evaluation gives. It also checks that blocks were skipped (fewer postings
// decoded than the lists hold).
func TestBlockMaxMatchesExhaustive(t *testing.T) {
	for _, mode := range []uint32{4, 16} {
		// The default cache holds every block of these small indexes, so blocks are decoded
		// and kept; a 1-byte one holds none, so blocks probed for a few documents are read
		// alone.
		for _, cache := range []int{0, 1} {
			t.Run(fmt.Sprintf("chunk=%d/cache=%d", mode, cache), func(t *testing.T) {
				withChunkMode(t, mode)
				seeds := 4
				if testing.Short() {
					seeds = 2
				}
				maxScoreMatches(t, seeds, Options{PostingsCacheBytes: cache}, func(t *testing.T, b *Index) {
					terms, blocks := multiBlockTerms(b)
					if terms == 0 {
						t.Fatalf("no posting list of several blocks (chunk mode %d)", mode)
					}
					lookups := b.postings.lookups.Load()
					if cache == 1 && lookups == 0 {
						t.Fatal("no posting was looked up alone (blockCursor.lookup): the exactness above did not cover it")
					}
					// While every decoded block fits, a block is looked up alone at most
					// warmProbes times over all queries, then decoded and kept.
					if cache == 0 {
						if b.postings.full.Load() {
							t.Fatal("the default cache filled on a small index")
						}
						if over := overProbed(b); over != "" {
							t.Fatal(over)
						}
					}
					t.Logf("%d multi-block lists, %d blocks, %d postings looked up alone", terms, blocks, lookups)
				})
			})
		}
	}
}

// overProbed names a cached list with a block looked up alone more than warmProbes times
// while the cache had room ("" when none is).
func overProbed(b *Index) string {
	c := b.postings
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, tb := range c.meta {
		for i := range tb.probed {
			if n := tb.probed[i].Load(); n > warmProbes {
				return fmt.Sprintf("%v block %d: looked up alone %d times (warmProbes %d) while the cache had room", k, i, n, warmProbes)
			}
		}
	}
	return ""
}

// TestBlockMaxSkipsBlocks: on one large segment whose frequent term spans many blocks, a
// top-10 query decodes only part of its postings, and gives what exhaustive evaluation
// gives.
func TestBlockMaxSkipsBlocks(t *testing.T) {
	withChunkMode(t, 64)
	b := openMemBM25(t)
	rng := rand.New(rand.NewPCG(7, 7))
	var docs []Doc
	for i := range 4000 {
		// "common" in every document, once or (rarely) many times; lengths vary
		n := 5 + rng.IntN(60)
		w := make([]string, n)
		for j := range w {
			w[j] = vocab[rng.IntN(len(vocab))]
		}
		w[0] = "common"
		if rng.IntN(200) == 0 {
			w = append(w, "common", "common", "common")
		}
		docs = append(docs, Doc{ID: fmt.Sprintf("d%04d", i), Text: strings.Join(w, " ")})
	}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	b.SetExhaustive(true)
	want, err := b.Search(ctx, "common", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.SetExhaustive(false)
	before := b.postings.decoded.Load()
	if _, err := b.Search(ctx, "common", 10, nil); err != nil { // reads the metadata: no pass over the list
		t.Fatal(err)
	}
	first := b.postings.decoded.Load() - before
	got, err := b.Search(ctx, "common", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "common", got, want)
	if terms, _ := multiBlockTerms(b); terms == 0 {
		t.Fatal("no multi-block list")
	}
	// a cold block cache: only the blocks that can hold a top-10 document are decoded
	b.postings.mu.Lock()
	for _, r := range b.postings.ring {
		r.tb.slots[r.i].Store(nil)
	}
	b.postings.ring, b.postings.used = nil, 0
	b.postings.mu.Unlock()
	before = b.postings.decoded.Load()
	got, err = b.Search(ctx, "common", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "common, cold blocks", got, want)
	dec := b.postings.decoded.Load() - before
	t.Logf("first query %d postings decoded, cold query %d, of 4000", first, dec)
	// How many blocks can hold a top-10 document depends on how the in-memory index cut
	// its segments (its merges run concurrently): 35-55 % of the postings were decoded over
	// many runs; without block-max it is all of them ("common" is in all 4,000 documents).
	if first*4 > 4000*3 || dec*4 > 4000*3 {
		t.Fatalf("decoded %d and %d postings of 4000: blocks were not skipped", first, dec)
	}
}

// TestBlockMaxShedsMetadata: with a metadata cap far too small, block metadata is dropped
// as soon as it is added (one-block lists first, then the others, read again from the body
// file when next needed), and every answer stays exact.
func TestBlockMaxShedsMetadata(t *testing.T) {
	withChunkMode(t, 16)
	dir := filepath.Join(t.TempDir(), "bm25")
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	b.postings.metaCap = 1
	rng := rand.New(rand.NewPCG(9, 9))
	for batch := range 3 {
		var docs []Doc
		for i := range 500 {
			docs = append(docs, randomDoc(rng, fmt.Sprintf("d%d-%04d", batch, i)))
		}
		if err := b.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for round := range 3 {
		for qi := range 40 {
			q := randomQuery(rng, 6)
			k := []int{1, 10, 100}[qi%3]
			b.SetExhaustive(true)
			want, err := b.Search(ctx, q, k, nil)
			b.SetExhaustive(false)
			if err != nil {
				t.Fatal(err)
			}
			got, err := b.Search(ctx, q, k, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, fmt.Sprintf("round %d %q k=%d", round, q, k), got, want)
		}
	}
	b.postings.mu.Lock()
	n := len(b.postings.meta)
	b.postings.mu.Unlock()
	if n > 2 {
		t.Fatalf("%d metadata entries kept under a cap of 1 byte", n)
	}
}

// TestLookupsWarmThenDecode: a block probed for a few documents has its postings read
// alone on first sight; while the cache has never had to evict, a block looked up
// warmProbes times over all queries is decoded (and kept) instead, so the same queries
// again read fewer postings alone; once the cache is full, blocks probed for a few
// documents in a pass are read alone. Answers are the same every way.
func TestLookupsWarmThenDecode(t *testing.T) {
	withChunkMode(t, 4)
	b := openMemBM25(t)
	rng := rand.New(rand.NewPCG(12, 12))
	var docs []Doc
	for i := range 1500 {
		docs = append(docs, randomDoc(rng, fmt.Sprintf("d%04d", i)))
	}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var queries []string
	var want [][]Hit
	b.SetExhaustive(true)
	for range 40 {
		q := randomQuery(rng, 8)
		hits, err := b.Search(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		queries, want = append(queries, q), append(want, hits)
	}
	b.SetExhaustive(false)
	cold := func() { // every decoded block dropped; full left as it is
		b.postings.mu.Lock()
		defer b.postings.mu.Unlock()
		for _, r := range b.postings.ring {
			r.tb.slots[r.i].Store(nil)
		}
		b.postings.ring, b.postings.used = nil, 0
	}
	run := func(label string) uint64 {
		before := b.postings.lookups.Load()
		for i, q := range queries {
			cold()
			got, err := b.Search(ctx, q, 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkSame(t, label+" "+q, got, want[i])
		}
		return b.postings.lookups.Load() - before
	}
	// With room in the cache, first-seen blocks are probed alone; a block probed
	// warmProbes times over the queries is then decoded (and kept, but cold drops it), so
	// the same queries again look up fewer postings alone, down to the blocks probed
	// rarely.
	first := run("room")
	if first == 0 || b.postings.full.Load() {
		t.Fatalf("%d postings looked up alone on first sight while the cache had room (full %v)", first, b.postings.full.Load())
	}
	last := first
	for range 2 * warmProbes {
		last = run("room again")
	}
	if last >= first || b.postings.full.Load() {
		t.Fatalf("%d postings looked up alone after %d rounds, %d in the first (full %v)", last, 2*warmProbes, first, b.postings.full.Load())
	}
	if over := overProbed(b); over != "" {
		t.Fatal(over)
	}
	b.postings.mu.Lock()
	b.postings.budget = 1 // the next block put evicts: the cache is full from then on
	b.postings.mu.Unlock()
	if n := run("full"); n == 0 || !b.postings.full.Load() {
		t.Fatalf("%d postings looked up alone once the cache was full (full %v)", n, b.postings.full.Load())
	}
}
