package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/vectorstore"
)

// TestOptionsCompose: each option sets only what it names, so every option keeps its
// effect whatever its place in the list, and on a field two options set the later wins.
func TestOptionsCompose(t *testing.T) {
	m := openT(t, "")
	must(t, m.Add(bg, corpus...))
	for _, order := range []string{"stats first", "stats last"} {
		t.Run(order, func(t *testing.T) {
			var st SearchStats
			opts := []SearchOption{WithStats(&st), TopK(2), WithMode(BM25)}
			if order == "stats last" {
				opts = []SearchOption{WithMode(BM25), TopK(2), WithStats(&st)}
			}
			res := searchT(t, m, "compiled language memory", opts...)
			if len(res) != 2 || res[0].Explain.Mode != BM25 {
				t.Fatalf("got %d results in mode %v, want 2 in bm25", len(res), res[0].Explain.Mode)
			}
			if st.Mode != BM25 || st.Candidates == 0 || st.Total <= 0 {
				t.Fatalf("stats not filled: %+v", st)
			}
		})
	}
	// A later option wins on a field both set.
	if res := searchT(t, m, "compiled language memory", WithMode(BM25), TopK(4), TopK(1)); len(res) != 1 {
		t.Fatalf("TopK(4) then TopK(1): %d results", len(res))
	}
	setTopK := func(s *SearchOptions) { s.TopK = 3 } // any field, through a plain closure
	if res := searchT(t, m, "compiled language memory", WithMode(BM25), TopK(1), setTopK); len(res) != 3 {
		t.Fatalf("a closure after TopK: %d results", len(res))
	}

	logger := slog.New(slog.NewTextHandler(&bytes.Buffer{}, nil))
	terms := func(o *Options) { o.MaxQueryTerms = 7 }
	for _, opts := range [][]Option{
		{WithLogger(logger), WithNoSync(), terms},
		{terms, WithNoSync(), WithLogger(logger)},
	} {
		var o Options
		for _, fn := range opts {
			fn(&o)
		}
		if o.Logger != logger || !o.NoSync || o.MaxQueryTerms != 7 {
			t.Fatalf("options did not compose: logger kept %v, NoSync %v, MaxQueryTerms %d", o.Logger == logger, o.NoSync, o.MaxQueryTerms)
		}
	}
}

// countingReranker scores a passage by its length and records how many passages it saw.
type countingReranker struct {
	mu    sync.Mutex
	calls []int
}

func (r *countingReranker) Score(_ context.Context, _ string, passages []string) ([]float32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, len(passages))
	out := make([]float32, len(passages))
	for i, p := range passages {
		out[i] = float32(len(p)) / 100
	}
	return out, nil
}

// TestWithRerankDefault: WithRerank(n <= 0) reranks the default max(TopK, 50) candidates,
// as documented, instead of failing.
func TestWithRerankDefault(t *testing.T) {
	rr := &countingReranker{}
	m := openT(t, "", WithReranker(rr))
	var docs []Document
	for i := 0; i < 80; i++ {
		docs = append(docs, Document{ID: fmt.Sprintf("d%02d", i), Text: "shared words " + strings.Repeat("x", i)})
	}
	must(t, m.Add(bg, docs...))
	for _, tc := range []struct {
		n, topK, want int
	}{
		{0, 5, 50}, {-3, 5, 50}, {-1, 60, 60}, {7, 5, 7},
	} {
		rr.calls = nil
		res, err := m.Search(bg, "shared words", WithMode(BM25), TopK(tc.topK), WithRerank(tc.n))
		if err != nil {
			t.Fatalf("WithRerank(%d): %v", tc.n, err)
		}
		if len(rr.calls) != 1 || rr.calls[0] != tc.want {
			t.Fatalf("WithRerank(%d) with TopK %d reranked %v passages, want %d", tc.n, tc.topK, rr.calls, tc.want)
		}
		if len(res) != min(tc.topK, tc.want) || res[0].Explain.Rerank == nil || res[0].Explain.Rerank.Rank != 1 {
			t.Fatalf("WithRerank(%d): %d results, first %+v", tc.n, len(res), res[0].Explain.Rerank)
		}
	}
}

// TestBM25Defaults: a store opened without WithBM25 scores as k1 0.9, b 0.4 (the
// Anserini/Pyserini defaults Options.BM25K1 documents), not as 1.2, 0.75.
func TestBM25Defaults(t *testing.T) {
	if bm25.DefaultK1 != 0.9 || bm25.DefaultB != 0.4 {
		t.Fatalf("hybrid defaults k1 %v b %v, documented 0.9 and 0.4", bm25.DefaultK1, bm25.DefaultB)
	}
	docs := []Document{
		{ID: "short", Text: "garbage collector"},
		{ID: "long", Text: "a garbage collector " + strings.Repeat("and many other words about languages ", 20)},
		{ID: "twice", Text: "garbage garbage collector collector of a runtime"},
	}
	scores := func(opts ...Option) map[string]float64 {
		m := openT(t, "", opts...)
		must(t, m.Add(bg, docs...))
		out := map[string]float64{}
		for _, r := range searchT(t, m, "garbage collector", WithMode(BM25)) {
			out[r.ID] = r.Score
		}
		if len(out) != len(docs) {
			t.Fatalf("got %v", out)
		}
		return out
	}
	def, explicit, lucene := scores(), scores(WithBM25(0.9, 0.4)), scores(WithBM25(1.2, 0.75))
	if !reflect.DeepEqual(def, explicit) {
		t.Fatalf("default scores %v differ from k1 0.9 b 0.4 %v", def, explicit)
	}
	if reflect.DeepEqual(def, lucene) {
		t.Fatalf("default scores equal those of k1 1.2 b 0.75: %v", def)
	}
}

// TestWeights: weights are taken as given when set and 0 leaves a retriever (or a
// collection) out; the zero SearchOptions keeps 1 each.
func TestWeights(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(128)))
	must(t, m.Add(bg, corpus...))
	must(t, m.Collection("notes").Add(bg, Document{ID: "n1", Text: "a compiled language note"}))
	const q = "compiled language memory safety"
	rrf := func(w float64, s *StageScore) float64 {
		if s == nil {
			return 0
		}
		return w / (60 + float64(s.Rank))
	}
	for _, tc := range []struct {
		name       string
		opts       []SearchOption
		mode       Mode
		bm25, dens float64 // weights expected in the fused score (hybrid only)
		note       string
	}{
		{"default", nil, Hybrid, 1, 1, ""},
		{"an option that sets nothing keeps the defaults", []SearchOption{func(*SearchOptions) {}}, Hybrid, 1, 1, ""},
		{"weighted", []SearchOption{WithWeights(2, 0.5)}, Hybrid, 2, 0.5, ""},
		{"dense 0 runs bm25", []SearchOption{WithWeights(1, 0)}, BM25, 0, 0, "dense weight 0"},
		{"bm25 0 runs dense", []SearchOption{WithWeights(0, 3)}, Dense, 0, 0, "bm25 weight 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st SearchStats
			res := searchT(t, m, q, append(tc.opts, WithStats(&st))...)
			if st.Mode != tc.mode || len(res) == 0 {
				t.Fatalf("mode %v with %d results, want %v", st.Mode, len(res), tc.mode)
			}
			for _, r := range res {
				ex := r.Explain
				switch tc.mode {
				case Hybrid:
					if want := rrf(tc.bm25, ex.BM25) + rrf(tc.dens, ex.Dense); math.Abs(r.Score-want) > 1e-12 {
						t.Fatalf("%s: fused score %v, want %v", r.ID, r.Score, want)
					}
				case BM25:
					if ex.Dense != nil || ex.BM25 == nil || r.Score != ex.BM25.Score {
						t.Fatalf("%s: %+v, want bm25 only", r.ID, ex)
					}
				case Dense:
					if ex.BM25 != nil || ex.Dense == nil || r.Score != ex.Dense.Score {
						t.Fatalf("%s: %+v, want dense only", r.ID, ex)
					}
				}
				if tc.note != "" && (len(ex.Notes) == 0 || !strings.Contains(ex.Notes[0], tc.note)) {
					t.Fatalf("%s: notes %q, want %q", r.ID, ex.Notes, tc.note)
				}
				if tc.note == "" && len(ex.Notes) != 0 {
					t.Fatalf("%s: unexpected notes %q", r.ID, ex.Notes)
				}
			}
		})
	}
	// A collection of weight 0 is not searched.
	res := searchT(t, m, "compiled language note", InCollections(map[string]float64{DefaultCollection: 1, "notes": 0}))
	for _, r := range res {
		if r.Collection == "notes" {
			t.Fatalf("a collection of weight 0 was searched: %v", r)
		}
	}
	// A batch with dense weight 0 answers as its single searches do.
	qs := []string{"compiled language", "garbage collector", "web browser"}
	batch, err := m.SearchBatch(bg, qs, WithWeights(1, 0))
	must(t, err)
	for i, q := range qs {
		if want := searchT(t, m, q, WithWeights(1, 0)); fmt.Sprint(ids(batch[i])) != fmt.Sprint(ids(want)) {
			t.Fatalf("batch %q: %v, single %v", q, ids(batch[i]), ids(want))
		}
	}
}

// TestWeightErrors: a bad weight or score option is ErrInvalidOption naming what is wrong.
func TestWeightErrors(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(32)))
	must(t, m.Add(bg, corpus...))
	must(t, m.Collection("notes").Add(bg, Document{ID: "n1", Text: "a compiled language note"}))
	for _, tc := range []struct {
		name string
		opts []SearchOption
		says string
	}{
		{"both 0", []SearchOption{WithWeights(0, 0)}, "both 0"},
		{"negative", []SearchOption{WithWeights(-1, 1)}, "bm25 weight -1"},
		{"NaN", []SearchOption{WithWeights(1, math.NaN())}, "dense weight NaN"},
		{"Inf", []SearchOption{WithWeights(math.Inf(1), 1)}, "bm25 weight +Inf"},
		{"bm25 search without bm25", []SearchOption{WithMode(BM25), WithWeights(0, 1)}, "bm25 weight 0"},
		{"collection NaN", []SearchOption{InCollections(map[string]float64{"notes": math.NaN()})}, `collection "notes" weight NaN`},
		{"collection Inf", []SearchOption{InCollections(map[string]float64{"notes": math.Inf(1)})}, `collection "notes" weight +Inf`},
		{"collection negative", []SearchOption{InCollections(map[string]float64{"notes": -2})}, `collection "notes" weight -2`},
		{"every collection 0", []SearchOption{InCollections(map[string]float64{"notes": 0})}, "every collection"},
		{"RRF k Inf", []SearchOption{WithRRFK(math.Inf(1))}, "RRF k"},
		{"MinScore NaN", []SearchOption{WithMinScore(math.NaN())}, "MinScore"},
		{"collapse NaN", []SearchOption{WithCollapse(math.NaN())}, "collapse"},
	} {
		_, err := m.Search(bg, "compiled language", tc.opts...)
		if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want ErrInvalidOption saying %q", tc.name, err, tc.says)
		}
	}
}

// TestCustomFusion: a hybrid.FusionFunc given to WithFusion is the one the search uses, with
// the retrievers' lists named as documented.
func TestCustomFusion(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(128)))
	must(t, m.Add(bg, corpus...))
	var names []string
	bm25Only := func(lists []hybrid.List, opt hybrid.FusionOptions) []hybrid.Fused {
		for _, l := range lists {
			names = append(names, l.Name)
		}
		return hybrid.Fuse(lists, opt, "bm25 raw", func(li int, w float64, _ int, h hybrid.Hit) float64 {
			if lists[li].Name != "bm25" {
				return 0
			}
			return w * h.Score
		})
	}
	res := searchT(t, m, "compiled language memory safety", WithFusion(bm25Only))
	if fmt.Sprint(names) != "[bm25 dense]" {
		t.Fatalf("fusion saw lists %v, want [bm25 dense] once", names)
	}
	if len(res) == 0 {
		t.Fatal("no results")
	}
	for i, r := range res {
		want := 0.0
		if r.Explain.BM25 != nil {
			want = r.Explain.BM25.Score
		}
		if r.Score != want || r.Explain.Fused != want {
			t.Fatalf("%s: score %v, want its bm25 score %v", r.ID, r.Score, want)
		}
		if i > 0 && r.Score > res[i-1].Score {
			t.Fatalf("results not in the custom fusion's order: %v", ids(res))
		}
	}
	// nil is the default, RRF.
	def, withNil := searchT(t, m, "compiled language"), searchT(t, m, "compiled language", WithFusion(nil))
	if !reflect.DeepEqual(def, withNil) {
		t.Fatalf("WithFusion(nil) differs from the default")
	}
	if rrf := searchT(t, m, "compiled language", WithFusion(hybrid.RRF)); !reflect.DeepEqual(def, rrf) {
		t.Fatalf("WithFusion(hybrid.RRF) differs from the default")
	}
}

// TestCollapseNeedsEmbedder: a collapse without an embedder fails and says why, instead of
// returning the duplicates silently.
func TestCollapseNeedsEmbedder(t *testing.T) {
	m := openT(t, "")
	must(t, m.Add(bg, corpus...))
	must(t, m.Collection("notes").Add(bg, Document{ID: "n1", Text: "a compiled language"}))
	for _, opts := range [][]SearchOption{
		{WithMode(BM25), WithCollapse(0.9)},
		{WithCollapse(0.9), InCollections(map[string]float64{DefaultCollection: 1, "notes": 1})},
	} {
		if _, err := m.Search(bg, "compiled language", opts...); !errors.Is(err, ErrNoEmbedder) || !strings.Contains(err.Error(), "collapse") {
			t.Fatalf("collapse without embedder: %v, want ErrNoEmbedder naming collapse", err)
		}
	}
}

// TestLuceneBM25Option: WithLuceneBM25 records the en_lucene analyzer and scores as Lucene
// 8 does (no k1+1 factor: textbook scores over the same terms and lengths are 1.9 times
// larger, and the order is the same); "" scoring follows the analyzer, ScoringClassic
// overrides it; an unknown mode is ErrInvalidOption; Lucene's stop list keeps words
// Bleve's English list drops ("between").
func TestLuceneBM25Option(t *testing.T) {
	docs := []Document{
		{ID: "short", Text: "garbage collector between runs"},
		{ID: "long", Text: "a garbage collector " + strings.Repeat("and many other words about languages ", 2)},
		{ID: "twice", Text: "garbage garbage collector collector of a runtime"},
	}
	search := func(q string, opts ...Option) ([]string, map[string]float64) {
		dir := t.TempDir()
		m := openT(t, dir, opts...)
		must(t, m.Add(bg, docs...))
		var ids []string
		out := map[string]float64{}
		for _, r := range searchT(t, m, q, WithMode(BM25)) {
			ids = append(ids, r.ID)
			out[r.ID] = r.Score
		}
		return ids, out
	}
	lucIDs, luc := search("garbage collector", WithLuceneBM25())
	clsIDs, cls := search("garbage collector", WithLuceneBM25(), WithBM25Scoring(ScoringClassic))
	if len(luc) != 3 || !reflect.DeepEqual(lucIDs, clsIDs) {
		t.Fatalf("lucene %v, classic %v", lucIDs, clsIDs)
	}
	for id, s := range luc {
		// Lengths of these documents are below 24 terms, kept exactly by Lucene's norms.
		if r := cls[id] / s; math.Abs(r-1.9) > 1e-3 {
			t.Errorf("%s: classic/lucene score ratio %v, want k1+1 = 1.9", id, r)
		}
	}
	if ids, _ := search("between", WithLuceneBM25()); !reflect.DeepEqual(ids, []string{"short"}) {
		t.Errorf("en_lucene: \"between\" finds %v, want [short] (not a Lucene stop word)", ids)
	}
	if ids, _ := search("between"); len(ids) != 0 {
		t.Errorf("en: \"between\" finds %v, want nothing (a stop word of Bleve's English analyzer)", ids)
	}
	_, err := Open(t.TempDir(), WithBM25Scoring("okapi"))
	if !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithBM25Scoring(\"okapi\"): %v, want ErrInvalidOption", err)
	}
}
