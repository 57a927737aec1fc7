package memory

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/vectorstore"
)

// TestRelevanceNormalisation checks the pieces of Result.Relevance: each retriever's
// normalisation to [0, 1] and their weighted mean.
func TestRelevanceNormalisation(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"bm25 best", relativeScore(12.5, 12.5), 1},
		{"bm25 half", relativeScore(6.25, 12.5), 0.5},
		{"bm25 zero", relativeScore(0, 12.5), 0},
		{"bm25 above best clamps", relativeScore(13, 12.5), 1},
		{"bm25 negative clamps", relativeScore(-1, 12.5), 0},
		{"bm25 best zero", relativeScore(0, 0), 0},
		{"bm25 best negative", relativeScore(-1, -1), 0},
		{"bm25 best infinite", relativeScore(5, inf), 0},
		{"bm25 NaN", relativeScore(nan, 3), 0},
		{"cosine exact", cosineScore(1, 0), 1},
		{"cosine", cosineScore(0.42, 0.9), 0.42},
		{"cosine orthogonal", cosineScore(0, 0.9), 0},
		{"cosine opposite", cosineScore(-0.7, 0.9), 0},
		{"cosine rounding above 1", cosineScore(1.0000001, 0), 1},
		{"cosine NaN", cosineScore(nan, 0), 0},
		{"mean equal weights", meanOf([]float64{1, 0.5}, []float64{1, 1}), 0.75},
		{"mean weighted", meanOf([]float64{1, 0}, []float64{3, 1}), 0.75},
		{"mean exact match", meanOf([]float64{1, 1}, []float64{1, 1}), 1},
		{"mean unrelated", meanOf([]float64{0, 0.05}, []float64{1, 1}), 0.025},
		{"mean zero weight left out", meanOf([]float64{1, 0}, []float64{1, 0}), 1},
		{"mean bad weights left out", meanOf([]float64{0, 0, 1}, []float64{-1, nan, 1}), 1},
		{"mean infinite weight left out", meanOf([]float64{0, 1}, []float64{inf, 1}), 1},
		{"mean nothing", meanOf(nil, nil), 0},
		{"mean clamps shares", meanOf([]float64{2, -1}, []float64{1, 1}), 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if math.Abs(tc.got-tc.want) > 1e-12 {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

// meanOf is the weightedMean of shares with weights.
func meanOf(shares, weights []float64) float64 {
	var m weightedMean
	for i, s := range shares {
		m.add(weights[i], s)
	}
	return m.value()
}

// TestRelevanceScorer checks the Relevance of fused results from their contributions
// (no stored vectors: nothing is rescored).
func TestRelevanceScorer(t *testing.T) {
	lists := []hybrid.List{
		{Name: "bm25", Hits: []hybrid.Hit{{ID: "a", Score: 10}, {ID: "b", Score: 5}}},
		{Name: "dense", Hits: []hybrid.Hit{{ID: "a", Score: 0.9}, {ID: "c", Score: -0.2}}},
	}
	tests := []struct {
		name      string
		lists     []hybrid.List
		weights   []float64 // per list; nil: 1 each
		id        string
		want      float64
		wantNorms [2]float64 // Explain's BM25 and Dense Norm (-1: no stage score)
	}{
		{name: "in both", lists: lists, id: "a", want: (1 + 0.9) / 2, wantNorms: [2]float64{1, 0.9}},
		{name: "bm25 only", lists: lists, id: "b", want: 0.5 / 2, wantNorms: [2]float64{0.5, -1}},
		{name: "negative cosine", lists: lists, id: "c", want: 0, wantNorms: [2]float64{-1, 0}},
		{name: "weights", lists: lists, weights: []float64{1, 3}, id: "a", want: (1 + 3*0.9) / 4, wantNorms: [2]float64{1, 0.9}},
		{name: "empty list left out", lists: []hybrid.List{{Name: "bm25"}, lists[1]}, id: "a", want: 0.9, wantNorms: [2]float64{-1, 0.9}},
		{name: "bm25 search", lists: lists[:1], id: "b", want: 0.5, wantNorms: [2]float64{0.5, -1}},
		{name: "dense search", lists: lists[1:], id: "a", want: 0.9, wantNorms: [2]float64{-1, 0.9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := make([]hybrid.List, len(tc.lists))
			copy(ls, tc.lists)
			for i := range ls {
				if tc.weights != nil {
					ls[i].Weight = tc.weights[i]
				}
			}
			var m Memory
			rs := m.newRelevanceScorer(nil, "c", nil, ls)
			for _, f := range hybrid.RRF(ls, hybrid.FusionOptions{}) {
				if f.ID != tc.id {
					continue
				}
				ex, _ := explain(f, Hybrid, nil)
				got, err := rs.score(f, f.ID, &ex)
				if err != nil {
					t.Fatal(err)
				}
				if math.Abs(got-tc.want) > 1e-12 {
					t.Errorf("relevance %v, want %v", got, tc.want)
				}
				for i, st := range []*StageScore{ex.BM25, ex.Dense} {
					switch {
					case tc.wantNorms[i] < 0 && st != nil:
						t.Errorf("stage %d: %+v, want none", i, st)
					case tc.wantNorms[i] >= 0 && (st == nil || math.Abs(st.Norm-tc.wantNorms[i]) > 1e-12):
						t.Errorf("stage %d: %+v, want norm %v", i, st, tc.wantNorms[i])
					}
				}
				return
			}
			t.Fatalf("%s not fused", tc.id)
		})
	}
}

// overlapReranker's logit grows with the share of the query's words a passage holds:
// +4 for all of them, -4 for none.
type overlapReranker struct{}

func (overlapReranker) Score(_ context.Context, query string, passages []string) ([]float32, error) {
	words := strings.Fields(strings.ToLower(query))
	out := make([]float32, len(passages))
	for i, p := range passages {
		p = strings.ToLower(p)
		n := 0
		for _, w := range words {
			if strings.Contains(p, w) {
				n++
			}
		}
		out[i] = 8*float32(n)/float32(len(words)) - 4
	}
	return out, nil
}

// TestSearchRelevance: in every mode, the exact match's Relevance is near 1 and an
// unrelated document's low, so WithMinRelevance(0.5), the threshold an agent uses, keeps the
// one and drops the other.
func TestSearchRelevance(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(256)), WithReranker(overlapReranker{}))
	docs := []Document{
		{ID: "exact", Text: "The deploy script pushes the release to the staging cluster"},
		{ID: "near", Text: "Deploy the release to the staging cluster with kubectl"},
		{ID: "unrelated", Text: "Bananas are yellow fruit rich in potassium"},
		{ID: "soup", Text: "The cafeteria serves soup on Fridays"},
	}
	must(t, m.Add(bg, docs...))
	query := docs[0].Text
	tests := []struct {
		name       string
		opts       []SearchOption
		cosine     bool // every result has Explain.Cosine
		exactAbove float64
	}{
		{name: "hybrid", cosine: true, exactAbove: 0.99},
		{name: "bm25", opts: []SearchOption{WithMode(BM25)}, exactAbove: 0.99},
		{name: "dense", opts: []SearchOption{WithMode(Dense)}, cosine: true, exactAbove: 0.99},
		{name: "weighted fusion", opts: []SearchOption{WithFusion(hybrid.WeightedScore)}, cosine: true, exactAbove: 0.99},
		{name: "weights", opts: []SearchOption{WithWeights(1, 3)}, cosine: true, exactAbove: 0.99},
		{name: "rerank", opts: []SearchOption{WithRerank(0)}, cosine: true, exactAbove: 0.95},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Search(bg, query, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			rel := map[string]float64{}
			for _, r := range res {
				if !(r.Relevance >= 0 && r.Relevance <= 1) {
					t.Errorf("%s: relevance %v outside [0, 1]", r.ID, r.Relevance)
				}
				if (r.Explain.Cosine != nil) != tc.cosine {
					t.Errorf("%s: cosine %v, want one: %v", r.ID, r.Explain.Cosine, tc.cosine)
				}
				if rr := r.Explain.Rerank; rr != nil && r.Relevance != rr.Prob {
					t.Errorf("%s: reranked relevance %v, want its probability %v", r.ID, r.Relevance, rr.Prob)
				}
				rel[r.ID] = r.Relevance
			}
			if rel["exact"] < tc.exactAbove {
				t.Errorf("exact match's relevance %v, want >= %v (%v)", rel["exact"], tc.exactAbove, rel)
			}
			if r, ok := rel["unrelated"]; ok && r > 0.2 {
				t.Errorf("unrelated document's relevance %v, want <= 0.2 (%v)", r, rel)
			}
			cut, err := m.Search(bg, query, append(tc.opts, WithMinRelevance(0.5))...)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, r := range cut {
				got[r.ID] = true
				if r.Relevance < 0.5 {
					t.Errorf("%s kept with relevance %v < 0.5", r.ID, r.Relevance)
				}
			}
			if !got["exact"] || got["unrelated"] || got["soup"] {
				t.Errorf("WithMinRelevance(0.5) kept %v, want exact and not unrelated or soup (relevance %v)", got, rel)
			}
		})
	}
	if _, err := m.Search(bg, query, WithMinRelevance(math.NaN())); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithMinRelevance(NaN): %v, want ErrInvalidOption", err)
	}
}

// TestSearchRelevanceRescore: a hybrid result that dense recall did not return (outside
// its window) still gets its cosine share, computed from its stored vector, instead of 0.
func TestSearchRelevanceRescore(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(256)))
	must(t, m.Add(bg,
		Document{ID: "a", Text: "zygote apple"},
		Document{ID: "b", Text: "zygote zygote zygote mango papaya kiwi lemon lime plum pear fig date melon grape peach"},
		Document{ID: "c", Text: "apple pie"},
		Document{ID: "d", Text: "apple juice"},
		Document{ID: "e", Text: "apple tree"},
	))
	// Windows of 2 and BM25 weighted above dense: "b" is BM25's second and ranks second,
	// but is not among dense recall's best two.
	res, err := m.Search(bg, "zygote apple", TopK(2), WithWindow(2), WithWeights(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].ID != "a" || res[1].ID != "b" {
		t.Fatalf("results %v, want a and b", res)
	}
	b := res[1]
	if b.Explain.Dense != nil || b.Explain.BM25 == nil || b.Explain.Cosine == nil {
		t.Fatalf("b: explanation %+v, want BM25 only, with a cosine", b.Explain)
	}
	cos := *b.Explain.Cosine
	want := (2*b.Explain.BM25.Norm + max(0, cos)) / 3
	if !(cos > 0) || math.Abs(b.Relevance-want) > 1e-9 {
		t.Errorf("b: relevance %v, cosine %v, want (2*%v + cosine)/3 = %v", b.Relevance, cos, b.Explain.BM25.Norm, want)
	}
	if a := res[0]; a.Relevance < 0.99 || a.Explain.Cosine == nil || *a.Explain.Cosine != a.Explain.Dense.Score {
		t.Errorf("a: relevance %v, explanation %+v", a.Relevance, a.Explain)
	}
}

// TestSearchRelevanceInnerProduct: over an inner-product index every result's dense share
// is rescored as the cosine of its stored vector, not its inner product: the exact match,
// stored at twice its embedding's length, scores an inner product of 2 and a cosine of 1.
func TestSearchRelevanceInnerProduct(t *testing.T) {
	emb := vectorstore.NewHashEmbedder(256)
	m := openT(t, "", WithEmbedder(emb), WithIndex(vectorstore.IndexConfig{Backend: "flat", Metric: vectorstore.InnerProduct}))
	query := "Rollbacks restore the previous release"
	vs, err := emb.Embed(bg, []string{query})
	if err != nil {
		t.Fatal(err)
	}
	long := make([]float32, len(vs[0]))
	for i, x := range vs[0] {
		long[i] = 2 * x
	}
	must(t, m.Add(bg,
		Document{ID: "exact", Text: query, Embedding: long},
		Document{ID: "unrelated", Text: "Bananas are yellow fruit rich in potassium"},
	))
	res, err := m.Search(bg, query, WithMode(Dense))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].ID != "exact" {
		t.Fatalf("results %v", res)
	}
	for _, r := range res {
		if r.Explain.Cosine == nil || r.Explain.Dense == nil {
			t.Fatalf("%s: explanation %+v, want a cosine", r.ID, r.Explain)
		}
	}
	if ex := res[0].Explain; math.Abs(ex.Dense.Score-2) > 1e-5 || math.Abs(*ex.Cosine-1) > 1e-6 || math.Abs(ex.Dense.Norm-1) > 1e-6 {
		t.Errorf("exact: inner product %v, cosine %v, norm %v, want 2, 1, 1", ex.Dense.Score, *ex.Cosine, ex.Dense.Norm)
	}
	if r := res[1]; r.Relevance > 0.2 {
		t.Errorf("unrelated: relevance %v", r.Relevance)
	}
}
