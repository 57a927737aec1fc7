package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// randomQuery draws 1..maxTerms words of the test vocabulary (skewed, so frequent and rare
// terms mix, and duplicates occur).
func randomQuery(rng *rand.Rand, maxTerms int) string {
	n := 1 + rng.IntN(maxTerms)
	w := make([]string, n)
	for i := range w {
		w[i] = vocab[int(float64(len(vocab))*math.Pow(rng.Float64(), 1.3))]
	}
	return strings.Join(w, " ")
}

// randomIndexQueries fills b with three random batches (applyRandomBatches, PCG seed
// (s1, s2)) and returns n random queries of up to terms terms drawn after them.
func randomIndexQueries(t *testing.T, b *Index, s1, s2 uint64, n, terms int) []string {
	t.Helper()
	rng := rand.New(rand.NewPCG(s1, s2))
	applyRandomBatches(t, b, newRef(), rng, 3)
	qs := make([]string, n)
	for i := range qs {
		qs[i] = randomQuery(rng, terms)
	}
	return qs
}

// searchBoth returns q's top k by exhaustive evaluation, then by pruned evaluation.
func searchBoth(t *testing.T, b *Index, q string, k int) (exhaustive, pruned []Hit) {
	t.Helper()
	ctx := context.Background()
	b.SetExhaustive(true)
	exhaustive, err := b.Search(ctx, q, k, nil)
	b.SetExhaustive(false)
	if err != nil {
		t.Fatal(err)
	}
	if pruned, err = b.Search(ctx, q, k, nil); err != nil {
		t.Fatal(err)
	}
	return exhaustive, pruned
}

// TestMaxScoreMatchesExhaustive is the property test of the pruned evaluator: over random
// multi-segment indexes (in memory and on disk, with deletes, upserts and exact duplicate
// documents, so scores tie at the cut), random queries, k and allow lists, MaxScore — on one
// goroutine and over several segment workers — returns exactly what exhaustive evaluation
// returns (same ids, same order, bit-equal scores), and that matches the brute-force
// reference.
func TestMaxScoreMatchesExhaustive(t *testing.T) {
	seeds := 6
	if testing.Short() {
		seeds = 2
	}
	maxScoreMatches(t, seeds, Options{}, nil)
}

// maxScoreMatches runs the property test of TestMaxScoreMatchesExhaustive over seeds
// random indexes, opened with opts; check, when not nil, is called on each index after its
// queries.
func maxScoreMatches(t *testing.T, seeds int, opts Options, check func(t *testing.T, b *Index)) {
	ctx := context.Background()
	for seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(seed), 99))
			path := ""
			if seed%2 == 1 {
				path = t.TempDir() + "/bm25"
			}
			b, err := OpenWith(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ref := newRef()
			batches := 2 + rng.IntN(6)
			seq := applyRandomBatches(t, b, ref, rng, batches)
			ndocs := batches * 60
			// exact duplicates of some documents under new ids: tied scores
			var dups []Doc
			for i := 0; i < 25; i++ {
				src := fmt.Sprintf("d%03d", rng.IntN(ndocs))
				d := randomDoc(rand.New(rand.NewPCG(uint64(seed), uint64(i))), "x")
				d.ID = fmt.Sprintf("dup%02d-%s", i, src)
				dups = append(dups, d, Doc{ID: d.ID + "b", Title: d.Title, Text: d.Text}, Doc{ID: d.ID + "c", Title: d.Title, Text: d.Text})
			}
			for _, d := range dups {
				ref.put(t, b, d)
			}
			seq++
			if err := b.Apply(dups, nil, seq); err != nil {
				t.Fatal(err)
			}
			var dels []string
			for i := rng.IntN(5); i < ndocs; i += 3 + rng.IntN(9) {
				id := fmt.Sprintf("d%03d", i)
				dels = append(dels, id)
				delete(ref.docs, id)
			}
			var ups []Doc
			for i := rng.IntN(7); i < ndocs; i += 5 + rng.IntN(13) {
				id := fmt.Sprintf("d%03d", i)
				if _, ok := ref.docs[id]; !ok {
					continue
				}
				d := randomDoc(rng, id)
				ups = append(ups, d)
				ref.put(t, b, d)
			}
			seq++
			if err := b.Apply(ups, dels, seq); err != nil {
				t.Fatal(err)
			}
			if segmentCount(t, b) < 2 && batches > 2 {
				t.Logf("only %d segment(s)", segmentCount(t, b))
			}
			ids := make([]string, 0, len(ref.docs))
			for id := range ref.docs {
				ids = append(ids, id)
			}
			for qi := 0; qi < 60; qi++ {
				q := randomQuery(rng, 12)
				k := []int{1, 2, 3, 5, 10, 37, 1000}[rng.IntN(7)]
				var allow []string
				if rng.IntN(4) == 0 {
					for _, id := range ids {
						if rng.IntN(3) == 0 {
							allow = append(allow, id)
						}
					}
					allow = append(allow, "missing", dels[0])
				}
				label := fmt.Sprintf("q=%q k=%d allow=%d", q, k, len(allow))
				b.SetExhaustive(true)
				want, err := b.Search(ctx, q, k, allow)
				b.SetExhaustive(false)
				if err != nil {
					t.Fatal(err)
				}
				checkSame(t, label+" exhaustive vs reference", want, ref.search(t, b, q, k, allow))
				for _, workers := range []int{1, 3} {
					b.opts.SegmentWorkers = workers
					got, err := b.Search(ctx, q, k, allow)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("%s workers=%d: %d hits, exhaustive %d", label, workers, len(got), len(want))
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s workers=%d rank %d: %v, exhaustive %v\n got %v\nwant %v", label, workers, i, got[i], want[i], got, want)
						}
					}
				}
				b.opts.SegmentWorkers = 0
			}
			if check != nil {
				check(t, b)
			}
		})
	}
}

// TestQueryCaps: a query over the byte cap or the distinct-term cap fails with its typed
// error, quickly, before touching postings; one at the caps is answered.
func TestQueryCaps(t *testing.T) {
	b, err := OpenWith("", Options{MaxQueryTerms: 4, MaxQueryBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Apply([]Doc{{ID: "a", Text: "cell tumor growth protein gene"}}, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		q    string
		want error
	}{
		{"cell tumor growth protein", nil},
		{"cell cell tumor tumor growth protein the of", nil}, // duplicates and stop words do not count
		{"cell tumor growth protein gene", ErrQueryTooManyTerms},
		{strings.Repeat("x", 101), ErrQueryTooLong},
		{strings.Repeat("a", 100), nil},
	} {
		_, err := b.Search(ctx, tc.q, 10, nil)
		if !errors.Is(err, tc.want) {
			t.Errorf("%.40q: err %v, want %v", tc.q, err, tc.want)
		}
	}
	// Bleve's path has the byte cap too.
	b.SetBleveScoring(true)
	if _, err := b.Search(ctx, strings.Repeat("x", 101), 10, nil); !errors.Is(err, ErrQueryTooLong) {
		t.Errorf("bleve path, long query: %v", err)
	}
}

// TestHugeQuery: a 1 MB query (distinct words) is refused by the default caps with a typed
// error before it is analysed (counted: the refusal allocates a handful of objects, where
// analysing its 150,000 words would allocate for each), and one of 60 KB made of 1,024
// distinct terms is answered; its analysis is linear (the earlier quadratic duplicate scan
// took seconds at this size).
func TestHugeQuery(t *testing.T) {
	b := openMemBM25(t)
	if err := b.Apply([]Doc{{ID: "a", Text: "w1 w2 w3 cell"}}, nil, 1); err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for i := 0; sb.Len() < 1<<20; i++ {
		fmt.Fprintf(&sb, "w%d ", i)
	}
	ctx := context.Background()
	huge := sb.String()
	var err error
	allocs := testing.AllocsPerRun(3, func() { _, err = b.Search(ctx, huge, 10, nil) })
	if !errors.Is(err, ErrQueryTooLong) {
		t.Fatalf("1 MB query: err %v", err)
	}
	if allocs > 20 {
		t.Fatalf("refusing a 1 MB query allocated %v objects: it was analysed", allocs)
	}
	sb.Reset()
	for i := 0; i < DefaultMaxQueryTerms; i++ {
		fmt.Fprintf(&sb, "w%d w%d ", i, i)
	}
	hits, err := b.Search(ctx, sb.String(), 10, nil)
	if err != nil || len(hits) != 1 {
		t.Fatalf("1,024-term query: %v, %v", hits, err)
	}
	sb.WriteString(" zz")
	if _, err := b.Search(ctx, sb.String(), 10, nil); !errors.Is(err, ErrQueryTooManyTerms) {
		t.Fatalf("1,025 terms: err %v", err)
	}
}

// TestSearchBatch: results in input order equal single searches; the first failing query
// is named; a cancelled context stops the batch.
func TestSearchBatch(t *testing.T) {
	b := openMemBM25(t)
	ctx := context.Background()
	qs := randomIndexQueries(t, b, 1, 2, 200, 6)
	got, err := b.SearchBatch(ctx, qs, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, q := range qs {
		want, err := b.Search(ctx, q, 5, nil)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Fatalf("query %d %q: batch %v, single %v", i, q, got[i], want)
		}
	}
	bad := append([]string{}, qs...)
	bad[150] = strings.Repeat("x", DefaultMaxQueryBytes+1)
	if _, err := b.SearchBatch(ctx, bad, 5, nil); !errors.Is(err, ErrQueryTooLong) || !strings.Contains(err.Error(), "query 150") {
		t.Fatalf("bad query: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.SearchBatch(cctx, qs, 5, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestMaxScoreCache covers the decoded-postings cache: documents deleted after their
// postings were cached are not returned; a budget too small to hold a query's terms
// (constant eviction) changes nothing; a document longer than 65,535 tokens (the wide
// layout) scores exactly. Every answer equals exhaustive evaluation and the reference.
func TestMaxScoreCache(t *testing.T) {
	ctx := context.Background()
	for _, budget := range []int{0, 1} {
		t.Run(fmt.Sprintf("budget=%d", budget), func(t *testing.T) {
			b, err := OpenWith("", Options{PostingsCacheBytes: budget})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			rng := rand.New(rand.NewPCG(5, 5))
			ref := newRef()
			seq := applyRandomBatches(t, b, ref, rng, 2)
			huge := Doc{ID: "huge", Text: strings.Repeat("tumor cell growth insulin ", 17000) + strings.Repeat("zinc ", 70000)}
			ref.put(t, b, huge)
			seq++
			if err := b.Apply([]Doc{huge}, nil, seq); err != nil {
				t.Fatal(err)
			}
			queries := []string{"tumor cell", "insulin zinc growth", "cell cell protein", "zinc"}
			check := func(stage string) {
				t.Helper()
				for _, q := range queries {
					for _, k := range []int{1, 5, 100} {
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
						if fmt.Sprint(got) != fmt.Sprint(want) {
							t.Fatalf("%s q=%q k=%d:\n got %v\nwant %v", stage, q, k, got, want)
						}
						checkSame(t, stage+" "+q, got, ref.search(t, b, q, k, nil))
					}
				}
			}
			check("cached")
			if bytes, _, _, _ := b.CacheStats(); budget == 0 && bytes == 0 {
				t.Fatal("nothing cached")
			}
			// delete documents of the segments whose postings are cached
			var dels []string
			for i := 0; i < 120; i += 2 {
				id := fmt.Sprintf("d%03d", i)
				dels = append(dels, id)
				delete(ref.docs, id)
			}
			dels = append(dels, "huge")
			delete(ref.docs, "huge")
			seq++
			if err := b.Apply(nil, dels, seq); err != nil {
				t.Fatal(err)
			}
			check("after deletes")
			for _, q := range queries {
				hits, _ := b.Search(ctx, q, 1000, nil)
				for _, h := range hits {
					for _, d := range dels {
						if h.ID == d {
							t.Fatalf("deleted %s returned for %q", d, q)
						}
					}
				}
			}
		})
	}
}
