package bm25

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"
	index "github.com/blevesearch/bleve_index_api"
)

// refBM25 is an independent brute-force textbook BM25 (Lucene's formula) over an in-memory
// corpus, tokenised with the index's analyzer.
type refBM25 struct {
	docs map[string][]string // id -> analysed tokens
}

func newRef() *refBM25 { return &refBM25{docs: map[string][]string{}} }

func analyse(t testing.TB, b *Index, text string) []string {
	t.Helper()
	a := b.idx.Mapping().AnalyzerNamed("en")
	if a == nil {
		t.Fatal("no en analyzer")
	}
	var out []string
	for _, tok := range a.Analyze([]byte(text)) {
		out = append(out, string(tok.Term))
	}
	return out
}

func (r *refBM25) put(t testing.TB, b *Index, d Doc) {
	body := d.Title
	if d.Text != "" {
		if body != "" {
			body += "\n"
		}
		body += d.Text
	}
	r.docs[d.ID] = analyse(t, b, body)
}

func (r *refBM25) search(t testing.TB, b *Index, q string, k int, allow []string) []Hit {
	k1, bb := b.opts.K1, b.opts.B
	n := float64(len(r.docs))
	var total float64
	for _, toks := range r.docs {
		total += float64(len(toks))
	}
	avgdl := total / n
	qterms := analyse(t, b, q)
	df := map[string]float64{}
	for _, toks := range r.docs {
		seen := map[string]bool{}
		for _, tok := range toks {
			if !seen[tok] {
				seen[tok] = true
				df[tok]++
			}
		}
	}
	var ok map[string]bool
	if allow != nil {
		ok = map[string]bool{}
		for _, id := range allow {
			ok[id] = true
		}
	}
	var hits []Hit
	for id, toks := range r.docs {
		if ok != nil && !ok[id] {
			continue
		}
		tf := map[string]float64{}
		for _, tok := range toks {
			tf[tok]++
		}
		dl := float64(len(toks))
		s, matched := 0.0, false
		for _, qt := range qterms { // one clause per query token: duplicates add up
			f := tf[qt]
			if f == 0 {
				continue
			}
			matched = true
			idf := math.Log(1 + (n-df[qt]+0.5)/(df[qt]+0.5))
			s += idf * f * (k1 + 1) / (f + k1*(1-bb+bb*dl/avgdl))
		}
		if matched {
			hits = append(hits, Hit{ID: id, Score: s})
		}
	}
	sort.Slice(hits, func(i, j int) bool {
		if hits[i].Score != hits[j].Score {
			return hits[i].Score > hits[j].Score
		}
		return hits[i].ID < hits[j].ID
	})
	if len(hits) > k {
		hits = hits[:k]
	}
	return hits
}

var vocab = strings.Fields(`cell cells tumor tumour protein proteins gene genes expression
mouse mice human patients patient therapy treatment drug drugs cancer risk disease
infection virus viral bacteria immune response receptor binding pathway signaling
blood brain heart liver kidney lung muscle bone skin neuron neurons synapse memory
learning sleep diet obesity insulin glucose diabetes vitamin calcium iron zinc
study studies trial trials analysis data results increase decrease effect effects
model models mechanism mechanisms level levels rate rates age aging children women
men population mortality survival growth factor factors stem differentiation
the of and in to with for on by is are was were a an this that these`)

// applyRandomBatches applies batches batches of 60 random documents (ids d000, d001, ...),
// one Apply each with seq 1, 2, ..., recording them in ref; it returns the last seq.
func applyRandomBatches(t *testing.T, b *Index, ref *refBM25, rng *rand.Rand, batches int) uint64 {
	t.Helper()
	for batch := 0; batch < batches; batch++ {
		docs := make([]Doc, 0, 60)
		for i := 0; i < 60; i++ {
			d := randomDoc(rng, fmt.Sprintf("d%03d", batch*60+i))
			docs = append(docs, d)
			ref.put(t, b, d)
		}
		if err := b.Apply(docs, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
	}
	return uint64(batches)
}

func randomDoc(rng *rand.Rand, id string) Doc {
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			// skewed choice so some terms are frequent and some rare
			j := int(float64(len(vocab)) * math.Pow(rng.Float64(), 1.7))
			w[i] = vocab[j]
		}
		return strings.Join(w, " ")
	}
	return Doc{ID: id, Title: words(2 + rng.IntN(8)), Text: words(3 + rng.IntN(120))}
}

// checkSame asserts got equals want: same ids in the same order, scores within 1e-6
// relative. A swap between two entries whose reference scores are within the tolerance is
// accepted (float32 length normalisation may order near-ties differently).
func checkSame(t *testing.T, label string, got, want []Hit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d hits, want %d\n got %v\nwant %v", label, len(got), len(want), got, want)
	}
	for i := range want {
		tol := 1e-6 * math.Max(1, math.Abs(want[i].Score))
		if math.Abs(got[i].Score-want[i].Score) > tol {
			t.Fatalf("%s: rank %d score %v, want %v (%s vs %s)", label, i, got[i].Score, want[i].Score, got[i].ID, want[i].ID)
		}
		if got[i].ID != want[i].ID {
			near := (i > 0 && math.Abs(want[i-1].Score-want[i].Score) <= tol) ||
				(i+1 < len(want) && math.Abs(want[i+1].Score-want[i].Score) <= tol)
			if !near {
				t.Fatalf("%s: rank %d id %s, want %s", label, i, got[i].ID, want[i].ID)
			}
		}
	}
}

// openMemBM25 opens an in-memory index with k1 0.9, b 0.4, closed when the test ends.
func openMemBM25(t *testing.T) *Index {
	t.Helper()
	SetBM25Params(BM25Params{K1: 0.9, B: 0.4})
	b, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// atLeast3 fails the test unless hs has at least 3 entries.
func atLeast3(t *testing.T, hs []Hit) []Hit {
	t.Helper()
	if len(hs) < 3 {
		t.Fatalf("reference has %d hits: weak test", len(hs))
	}
	return hs
}

var testQueries = []string{
	"tumor protein expression",
	"insulin glucose diabetes in obese children",
	"cell cell cell growth",
	"the of and",                     // stop words only: no terms
	"zebrafish",                      // unknown term
	"Mice mouse's receptors BINDING", // case, possessive, stemming
	"vitamin zinc iron calcium diet sleep memory learning aging",
}

func TestTAATMatchesReference(t *testing.T) {
	SetBM25Params(BM25Params{K1: 0.9, B: 0.4})
	for _, persisted := range []bool{false, true} {
		t.Run(fmt.Sprintf("persisted=%v", persisted), func(t *testing.T) {
			path := ""
			if persisted {
				path = t.TempDir() + "/bm25"
			}
			b, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(7, 11))
			ref := newRef()
			// several batches: several segments
			seq := applyRandomBatches(t, b, ref, rng, 5)
			check := func(stage string) {
				t.Helper()
				for _, q := range testQueries {
					for _, k := range []int{1, 10, 1000} {
						got, err := b.Search(ctx, q, k, nil)
						if err != nil {
							t.Fatal(err)
						}
						checkSame(t, fmt.Sprintf("%s q=%q k=%d", stage, q, k), got, ref.search(t, b, q, k, nil))
					}
				}
			}
			check("initial")

			// deletes and upserts (an upsert replaces the old body entirely)
			var dels []string
			for i := 0; i < 300; i += 7 {
				id := fmt.Sprintf("d%03d", i)
				dels = append(dels, id)
				delete(ref.docs, id)
			}
			var ups []Doc
			for i := 3; i < 300; i += 11 {
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
			check("after delete+upsert")
			for _, id := range dels {
				for _, q := range testQueries {
					hits, _ := b.Search(ctx, q, 1000, nil)
					for _, h := range hits {
						if h.ID == id {
							t.Fatalf("deleted %s returned for %q", id, q)
						}
					}
				}
			}

			if persisted {
				before := map[string][]Hit{}
				for _, q := range testQueries {
					if before[q], err = b.Search(ctx, q, 1000, nil); err != nil {
						t.Fatal(err)
					}
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
				if b, err = Open(path); err != nil {
					t.Fatal(err)
				}
				check("reopened")
				for _, q := range testQueries {
					after, err := b.Search(ctx, q, 1000, nil)
					if err != nil {
						t.Fatal(err)
					}
					if fmt.Sprint(after) != fmt.Sprint(before[q]) {
						t.Fatalf("q=%q: reopened index answers\n%v\nbefore close\n%v", q, after, before[q])
					}
				}
			}
			defer b.Close()

			// the Bleve path still answers: same candidate set, Bleve's own scores, filters
			b.SetBleveScoring(true)
			got, err := b.Search(ctx, testQueries[0], 1000, nil)
			if err != nil {
				t.Fatal(err)
			}
			allow := []string{atLeast3(t, ref.search(t, b, testQueries[0], 3, nil))[2].ID, "nope"}
			gotAllow, err := b.Search(ctx, testQueries[0], 10, allow)
			if err != nil {
				t.Fatal(err)
			}
			b.SetBleveScoring(false)
			want := ref.search(t, b, testQueries[0], 1000, nil)
			if len(got) != len(want) {
				t.Fatalf("bleve path matched %d docs, reference %d", len(got), len(want))
			}
			ids := map[string]float64{}
			for _, h := range want {
				ids[h.ID] = h.Score
			}
			differ := false
			for _, h := range got {
				s, ok := ids[h.ID]
				if !ok {
					t.Fatalf("bleve path returned %s, not a match", h.ID)
				}
				differ = differ || math.Abs(s-h.Score) > 1e-6*s
			}
			if !differ {
				t.Fatal("bleve path gave textbook scores: the switch did nothing")
			}
			if len(gotAllow) != 1 || gotAllow[0].ID != allow[0] {
				t.Fatalf("bleve path with allow %v: %v", allow, gotAllow)
			}
		})
	}
}

// TestTAATFilters checks allow lists on an index of three segments holding an overwritten
// id (old version deleted in an older segment) and a deleted id: only allowed live ids come
// back, the full k when enough allowed documents match, with the unfiltered scores (filters
// do not change N, n or avgdl).
func TestTAATFilters(t *testing.T) {
	b := openMemBM25(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 5))
	ref := newRef()
	for batch := 0; batch < 2; batch++ {
		var puts []Doc
		for i := batch * 100; i < (batch+1)*100; i++ {
			d := randomDoc(rng, fmt.Sprintf("doc-%d", i))
			puts = append(puts, d)
			ref.put(t, b, d)
		}
		if err := b.Apply(puts, nil, uint64(batch+1)); err != nil {
			t.Fatal(err)
		}
	}
	// third batch: overwrite doc-1 (first segment) and doc-150 (second), delete doc-5
	over := []Doc{
		{ID: "doc-1", Text: "tumor tumor protein cell expression risk"},
		{ID: "doc-150", Text: "zebrafish only"},
	}
	for _, d := range over {
		ref.put(t, b, d)
	}
	if err := b.Apply(over, []string{"doc-5"}, 3); err != nil {
		t.Fatal(err)
	}
	delete(ref.docs, "doc-5")
	if n := segmentCount(t, b); n < 2 {
		t.Fatalf("%d segments, want several", n)
	}
	const q = "tumor protein cell expression risk"
	const k = 10
	all, err := b.Search(ctx, q, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, "unfiltered", all, ref.search(t, b, q, 1000, nil))
	full := map[string]float64{}
	for _, h := range all {
		full[h.ID] = h.Score
	}
	everyOther := func(from int) []string {
		var ids []string
		for i := from; i < 200; i += 2 {
			ids = append(ids, fmt.Sprintf("doc-%d", i))
		}
		return ids
	}
	tests := []struct {
		name  string
		allow []string
		want  []string // exact ids expected (in rank order), nil: derived from the reference
	}{
		{"nil allows all", nil, nil},
		{"empty allows none", []string{}, []string{}},
		{"unknown ids only", []string{"nope", "missing"}, []string{}},
		{"deleted id only", []string{"doc-5"}, []string{}},
		{"overwritten id no longer matching", []string{"doc-150"}, []string{}},
		{"overwritten id, new version", []string{"doc-1", "nope"}, []string{"doc-1"}},
		{"subset", []string{"doc-1", "doc-2", "doc-3", "doc-50", "doc-199", "doc-5", "doc-150", "nope"}, nil},
		{"every other (even)", everyOther(0), nil},
		{"every other (odd)", everyOther(1), nil},
		{"duplicated ids", []string{"doc-2", "doc-2", "doc-3"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := b.Search(ctx, q, k, tc.allow)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				ids := []string{}
				for _, h := range got {
					ids = append(ids, h.ID)
				}
				if fmt.Sprint(ids) != fmt.Sprint(tc.want) {
					t.Fatalf("got %v, want ids %v", got, tc.want)
				}
			}
			want := ref.search(t, b, q, k, tc.allow)
			checkSame(t, tc.name, got, want)
			allowed := map[string]bool{}
			for _, id := range tc.allow {
				allowed[id] = true
			}
			matching := 0
			for id := range full {
				if tc.allow == nil || allowed[id] {
					matching++
				}
			}
			if len(got) != min(k, matching) {
				t.Fatalf("%d hits, want min(k, %d allowed matches)", len(got), matching)
			}
			for _, h := range got {
				if tc.allow != nil && !allowed[h.ID] {
					t.Fatalf("%s returned, not allowed", h.ID)
				}
				if h.Score != full[h.ID] {
					t.Fatalf("%s: filtered score %v, unfiltered %v", h.ID, h.Score, full[h.ID])
				}
			}
		})
	}
}

// TestTAATTies checks the deterministic order of equal scores: smaller external id first,
// also when k cuts through a group of ties.
func TestTAATTies(t *testing.T) {
	b := openMemBM25(t)
	for i, ids := range [][]string{{"m", "c", "x"}, {"a", "q", "e"}} { // two segments
		var docs []Doc
		for _, id := range ids {
			docs = append(docs, Doc{ID: id, Text: "tumor growth factor"})
		}
		docs = append(docs, Doc{ID: "z" + fmt.Sprint(i), Text: "tumor tumor growth factor"})
		if err := b.Apply(docs, nil, uint64(i+1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		k    int
		want string
	}{
		{1, "[z0]"},
		{3, "[z0 z1 a]"},
		{5, "[z0 z1 a c e]"},
		{10, "[z0 z1 a c e m q x]"},
	} {
		hits, err := b.Search(context.Background(), "tumor", tc.k, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for i, h := range hits {
			ids = append(ids, h.ID)
			if i >= 2 && h.Score != hits[2].Score || i == 1 && h.Score != hits[0].Score {
				t.Fatalf("scores not tied as expected: %v", hits)
			}
		}
		if fmt.Sprint(ids) != tc.want {
			t.Fatalf("k=%d: %v, want %s", tc.k, ids, tc.want)
		}
	}
}

// snapshotReader opens a reader of b's current snapshot; the caller closes it.
func snapshotReader(t *testing.T, b *Index) index.IndexReader {
	t.Helper()
	adv, err := b.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// segmentCount is the number of segments of b's current scorch snapshot.
func segmentCount(t *testing.T, b *Index) int {
	t.Helper()
	r := snapshotReader(t, b)
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		t.Fatalf("reader is %T, not a scorch snapshot", r)
	}
	return len(snap.Segments())
}

// TestTAATPathUsed checks that both the in-memory and the on-disk index (also after
// reopening) take the term-at-a-time path rather than falling back to Bleve's search.
func TestTAATPathUsed(t *testing.T) {
	SetBM25Params(BM25Params{K1: 0.9, B: 0.4})
	dir := t.TempDir() + "/bm25"
	for _, tc := range []struct {
		name, path string
		reopen     bool
	}{
		{"memory", "", false},
		{"disk", dir, false},
		{"disk reopened", dir, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Open(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			if !tc.reopen {
				docs := []Doc{{ID: "a", Text: "tumor growth"}, {ID: "b", Text: "cell growth"}}
				if err := b.Apply(docs, nil, 1); err != nil {
					t.Fatal(err)
				}
			}
			hits, ok, err := b.searchPostings(context.Background(), "growth tumor", 10, restriction{})
			if err != nil || !ok {
				t.Fatalf("searchPostings: ok %v err %v", ok, err)
			}
			if len(hits) != 2 || hits[0].ID != "a" {
				t.Fatalf("hits %v", hits)
			}
		})
	}
}

func TestTAATDuplicateTermsAndCancel(t *testing.T) {
	b := openMemBM25(t)
	docs := []Doc{
		{ID: "a", Text: "tumor tumor growth"},
		{ID: "b", Text: "growth growth factor"},
		{ID: "c", Text: "unrelated text entirely"},
	}
	if err := b.Apply(docs, nil, 1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	one, err := b.Search(ctx, "tumor growth", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := b.Search(ctx, "tumor tumor growth", 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) != 2 || len(two) != 2 {
		t.Fatalf("hits %v / %v", one, two)
	}
	score := func(hs []Hit, id string) float64 {
		for _, h := range hs {
			if h.ID == id {
				return h.Score
			}
		}
		t.Fatalf("%s missing from %v", id, hs)
		return 0
	}
	// "b" only matches growth: unchanged. "a" gains exactly its tumor term once more.
	if score(one, "b") != score(two, "b") {
		t.Fatalf("b changed: %v vs %v", score(one, "b"), score(two, "b"))
	}
	if !(score(two, "a") > score(one, "a")) {
		t.Fatalf("duplicate query term not weighted: %v vs %v", score(two, "a"), score(one, "a"))
	}
	if got, _ := b.Search(ctx, "tumor", 0, nil); got != nil {
		t.Fatalf("k=0 gave %v", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Search(cctx, "tumor growth", 10, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled search: err %v", err)
	}
}

// TestTAATConcurrent runs searches from many goroutines while a writer applies batches
// (new segments, deletes): no errors, and once writes stop every goroutine sees the
// reference ranking.
func TestTAATConcurrent(t *testing.T) {
	b := openMemBM25(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	ref := newRef()
	apply := func(batch int) {
		var puts []Doc
		for i := 0; i < 40; i++ {
			d := randomDoc(rng, fmt.Sprintf("c%d-%d", batch, i))
			puts = append(puts, d)
			ref.put(t, b, d)
		}
		del := fmt.Sprintf("c%d-0", batch-1)
		delete(ref.docs, del)
		if err := b.Apply(puts, []string{del}, uint64(batch+1)); err != nil {
			t.Error(err)
		}
	}
	apply(0)
	done := make(chan struct{})
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func(g int) {
			for i := 0; ; i++ {
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				hits, err := b.Search(ctx, testQueries[(g+i)%len(testQueries)], 10, nil)
				if err != nil {
					errs <- err
					return
				}
				for j := 1; j < len(hits); j++ {
					if hits[j].Score > hits[j-1].Score {
						errs <- fmt.Errorf("unsorted hits %v", hits)
						return
					}
				}
			}
		}(g)
	}
	for batch := 1; batch < 8; batch++ {
		apply(batch)
	}
	close(done)
	for g := 0; g < 8; g++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	// writes done: concurrent searches all see the reference ranking
	results := make([][][]Hit, 8)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, q := range testQueries {
				got, err := b.Search(ctx, q, 10, nil)
				if err != nil {
					t.Error(err)
					return
				}
				results[g] = append(results[g], got)
			}
		}()
	}
	wg.Wait()
	for g := range results {
		if len(results[g]) != len(testQueries) {
			t.Fatalf("goroutine %d: %d results", g, len(results[g]))
		}
		for i, q := range testQueries {
			checkSame(t, fmt.Sprintf("goroutine %d q=%q", g, q), results[g][i], ref.search(t, b, q, 10, nil))
		}
	}
}

// TestReopenNeedsNoPass reopens an on-disk index of several segments with deletes and
// checks that its first search scores exactly as the brute-force reference, with no
// background work (there is none to wait for: lengths are in the index).
func TestReopenNeedsNoPass(t *testing.T) {
	dir := t.TempDir() + "/bm25"
	b, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	ref := newRef()
	seq := applyRandomBatches(t, b, ref, rng, 4)
	var dels []string
	for i := 0; i < 240; i += 5 {
		id := fmt.Sprintf("d%03d", i)
		dels = append(dels, id)
		delete(ref.docs, id)
	}
	if err := b.Apply(nil, dels, seq+1); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, q := range []string{vocab[0] + " " + vocab[5], vocab[12], vocab[3] + " " + vocab[30] + " " + vocab[7]} {
		got, err := b.Search(context.Background(), q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkSame(t, "reopened "+q, got, ref.search(t, b, q, 10, nil))
	}
}

// TestOldLayoutRefused: an index of an earlier layout — written without the length field
// (no format key), or of layout 2 (no metadata field) — is refused with ErrBM25Format, so
// the store rebuilds it from its records rather than scoring or filtering with what is not
// there.
func TestOldLayoutRefused(t *testing.T) {
	for _, format := range []string{"", "2"} {
		dir := t.TempDir() + "/bm25"
		b, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Apply([]Doc{{ID: "a", Text: "tumor growth"}}, nil, 1); err != nil {
			t.Fatal(err)
		}
		if format == "" {
			err = b.idx.DeleteInternal(formatKey)
		} else {
			err = b.idx.SetInternal(formatKey, []byte(format))
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir); !errors.Is(err, ErrBM25Format) {
			t.Fatalf("layout %q: err %v, want ErrBM25Format", format, err)
		}
	}
}

// TestPerIndexParams: two indexes in one process with different k1/b keep their own
// scores, while both are searched concurrently (run under -race).
func TestPerIndexParams(t *testing.T) {
	docs := []Doc{{ID: "a", Text: "tumor tumor tumor growth in a long text about many other things entirely"}, {ID: "b", Text: "tumor growth"}, {ID: "c", Text: "cell"}}
	open := func(o Options) *Index {
		b, err := OpenWith("", o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		if err := b.Apply(docs, nil, 1); err != nil {
			t.Fatal(err)
		}
		return b
	}
	x := open(Options{K1: 0.9, B: 0.4})
	y := open(Options{K1: 2.0, B: 1.0})
	want := func(b *Index) []Hit {
		ref := newRef()
		for _, d := range docs {
			ref.put(t, b, d)
		}
		return ref.search(t, b, "tumor growth", 10, nil)
	}
	wx, wy := want(x), want(y)
	if fmt.Sprint(wx) == fmt.Sprint(wy) {
		t.Fatal("weak test: both parameter sets give the same scores")
	}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				b, w := x, wx
				if (i+j)%2 == 1 {
					b, w = y, wy
				}
				got, err := b.Search(context.Background(), "tumor growth", 10, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) != len(w) || got[0].ID != w[0].ID || math.Abs(got[0].Score-w[0].Score) > 1e-6*w[0].Score {
					t.Errorf("k1 %v: got %v want %v", b.opts.K1, got, w)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := OpenWith("", Options{B: 1.5}); !errors.Is(err, ErrBM25Option) {
		t.Fatalf("b 1.5: err %v", err)
	}
	if _, err := OpenWith("", Options{K1: math.NaN()}); !errors.Is(err, ErrBM25Option) {
		t.Fatalf("k1 NaN: err %v", err)
	}
}
