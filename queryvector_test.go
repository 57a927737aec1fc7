package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/vectorstore"
)

// embedQueryT is the embedding e makes of query q, as a search embeds it.
func embedQueryT(t *testing.T, e vectorstore.Embedder, q string) []float32 {
	t.Helper()
	vs, err := vectorstore.EmbedQueries(bg, e, []string{q})
	if err != nil {
		t.Fatal(err)
	}
	return vs[0]
}

// notesOf is a result's notes on one line.
func notesOf(r Result) string { return strings.Join(r.Explain.Notes, "; ") }

// A search by the vector the store's embedder makes of a text finds what the search of the
// text finds, in dense and hybrid mode, with the same scores; an empty text with a vector
// runs as a dense search, and every result says its dense query was the caller's vector.
func TestQueryVectorSameAsText(t *testing.T) {
	e := &countingEmbedder{Embedder: vectorstore.NewHashEmbedder(64)}
	m := openT(t, t.TempDir(), WithEmbedder(e))
	must(t, m.Add(bg, corpus...))
	for _, q := range []string{"compiled language", "garbage collection memory", "web browser", "typed"} {
		v := embedQueryT(t, e, q)
		for _, tc := range []struct {
			name       string
			text       string
			opts       []SearchOption
			wantMode   Mode
			wantAsText []SearchOption // the text search it must equal
		}{
			{"dense", q, []SearchOption{WithMode(Dense)}, Dense, []SearchOption{WithMode(Dense)}},
			{"dense without text", "", []SearchOption{WithMode(Dense)}, Dense, []SearchOption{WithMode(Dense)}},
			{"hybrid", q, nil, Hybrid, nil},
			{"hybrid without text", " ", nil, Dense, []SearchOption{WithMode(Dense)}},
			{"hybrid weighted", q, []SearchOption{WithWeights(1, 2)}, Hybrid, []SearchOption{WithWeights(1, 2)}},
			{"dense filtered", q, []SearchOption{WithMode(Dense), WithWhere(Where{"compiled": true})}, Dense,
				[]SearchOption{WithMode(Dense), WithWhere(Where{"compiled": true})}},
			{"stated embedder", q, []SearchOption{WithMode(Dense), WithQueryVectorEmbedder(e.ID())}, Dense, []SearchOption{WithMode(Dense)}},
		} {
			t.Run(q+"/"+tc.name, func(t *testing.T) {
				want := searchT(t, m, q, append(tc.wantAsText, TopK(5))...)
				if len(want) == 0 {
					t.Fatal("no results: weak test")
				}
				calls := e.calls
				got := searchT(t, m, tc.text, append(tc.opts, TopK(5), WithQueryVector(v))...)
				if e.calls != calls {
					t.Fatal("a search by vector embedded its text")
				}
				if fmt.Sprint(resultKeys(got)) != fmt.Sprint(resultKeys(want)) {
					t.Fatalf("by vector %v\nby text   %v", resultKeys(got), resultKeys(want))
				}
				for i, r := range got {
					if r.Explain.Mode != tc.wantMode || !strings.Contains(notesOf(r), "the caller's vector") {
						t.Fatalf("result %d: mode %s, notes %q", i, r.Explain.Mode, notesOf(r))
					}
					if r.Relevance != want[i].Relevance {
						t.Fatalf("result %d: relevance %v by vector, %v by text", i, r.Relevance, want[i].Relevance)
					}
				}
				if strings.TrimSpace(tc.text) == "" && tc.opts == nil && !strings.Contains(notesOf(got[0]), "hybrid search ran as dense") {
					t.Fatalf("a hybrid search without text does not say it ran as dense: %q", notesOf(got[0]))
				}
			})
		}
	}
	// A vector that is not the text's embedding is what dense recall searches: the axis
	// of a word's hash finds the documents holding it, whatever the text says.
	v := embedQueryT(t, e, "browser")
	if res := searchT(t, m, "garbage collection", WithMode(Dense), TopK(1), WithQueryVector(v)); len(res) != 1 || res[0].ID != "js" {
		t.Fatalf("dense recall did not search the given vector: %v", ids(res))
	}
}

// Bad query vectors and searches that cannot use one are typed errors naming the problem;
// an embedder stated by its name without digest or kind is the store's.
func TestQueryVectorErrors(t *testing.T) {
	const dim = 16
	e := vectorstore.NewHashEmbedder(dim)
	m := openT(t, t.TempDir(), WithEmbedder(e))
	must(t, m.Add(bg, corpus...))
	good := embedQueryT(t, e, "compiled language")
	withNaN := slices.Clone(good)
	withNaN[3] = float32(math.NaN())
	withInf := slices.Clone(good)
	withInf[5] = float32(math.Inf(-1))
	for _, tc := range []struct {
		name     string
		query    string
		opts     []SearchOption
		kinds    []error // every one must match
		contains string
	}{
		{"empty", "q", []SearchOption{WithQueryVector([]float32{})}, []error{ErrQueryVector, ErrInvalidOption}, "empty"},
		{"short", "q", []SearchOption{WithQueryVector(good[:dim-1])}, []error{ErrQueryVector}, "15 values, the store's vectors (embedder \"hash-bigram-v1/16\") have 16"},
		{"long", "q", []SearchOption{WithQueryVector(append(slices.Clone(good), 1))}, []error{ErrQueryVector}, "17 values"},
		{"NaN", "q", []SearchOption{WithQueryVector(withNaN)}, []error{ErrQueryVector}, "value 3 is NaN"},
		{"Inf", "q", []SearchOption{WithQueryVector(withInf)}, []error{ErrQueryVector}, "value 5 is -Inf"},
		{"zero", "q", []SearchOption{WithQueryVector(make([]float32, dim))}, []error{ErrQueryVector}, "norm 0"},
		{"other embedder", "q", []SearchOption{WithQueryVector(good), WithQueryVectorEmbedder("e5-base-v2")},
			[]error{ErrQueryVector, ErrEmbedderMismatch, ErrInvalidOption}, `"e5-base-v2", the store's vectors by "hash-bigram-v1/16" (dim 16)`},
		{"bm25", "q", []SearchOption{WithQueryVector(good), WithMode(BM25)}, []error{ErrQueryVector}, "bm25 search does not search by vector"},
		{"dense weight 0", "q", []SearchOption{WithQueryVector(good), WithWeights(1, 0)}, []error{ErrQueryVector}, "bm25 search"},
		{"batch option in Search", "q", []SearchOption{WithQueryVectors([][]float32{good})}, []error{ErrQueryVector}, "SearchBatch"},
		{"rerank without text", "", []SearchOption{WithQueryVector(good), WithRerank(0)}, []error{ErrInvalidOption}, "has none"},
		{"empty text without vector", " ", nil, []error{ErrInvalidOption}, "empty query"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := m.Search(bg, tc.query, tc.opts...)
			if err == nil {
				t.Fatalf("no error: %v", ids(res))
			}
			for _, k := range tc.kinds {
				if !errors.Is(err, k) {
					t.Errorf("%v is not %v", err, k)
				}
			}
			if !strings.Contains(err.Error(), tc.contains) {
				t.Errorf("%q does not say %q", err, tc.contains)
			}
		})
	}
	for _, id := range []string{e.ID(), e.ID() + "@sha256:00ff"} {
		if _, err := m.Search(bg, "q", WithQueryVector(good), WithQueryVectorEmbedder(id)); err != nil {
			t.Fatalf("stated %q: %v", id, err)
		}
	}
	// A store without vectors has nothing to search a vector in.
	b := openT(t, t.TempDir())
	must(t, b.Add(bg, corpus...))
	if _, err := b.Search(bg, "q", WithQueryVector(good)); !errors.Is(err, ErrNoEmbedder) || errors.Is(err, ErrQueryVector) {
		t.Fatalf("a store without an embedder: %v", err)
	}
}

// A store whose vectors were imported answers searches by vector when reopened without any
// embedder or model: dense, hybrid (BM25 searches the text), batched and filtered. A store
// whose model is not loaded and whose vectors were made by it has no dense index open: a
// search by vector says so (ErrEmbedderNeeded) and does not fail otherwise.
func TestQueryVectorWithoutEmbedder(t *testing.T) {
	const dim = 8
	dir := filepath.Join(t.TempDir(), "imported")
	m := openT(t, dir, WithEmbedder(vectorstore.NewVectorsOnly("e5-test", dim)))
	names := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel")
	var docs []Document
	for i := range dim {
		docs = append(docs, Document{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("passage %s about otters", names[i]), Embedding: axis(dim, i),
			Metadata: map[string]any{"even": i%2 == 0}})
	}
	must(t, m.Add(bg, docs...))
	must(t, m.Close())

	gone := WithEmbedderResolver(func(context.Context, string, int) (vectorstore.Embedder, error) {
		return nil, errors.New("model e5-test is not in the models folder")
	})
	for name, opt := range map[string]Option{"without resolver": WithoutEmbedderResolver(), "resolver fails": gone} {
		t.Run(name, func(t *testing.T) {
			r := openT(t, dir, opt)
			if r.Embedder() != nil && r.Embedder().ID() != "e5-test" {
				t.Fatalf("embedder %v", r.Embedder().ID())
			}
			if _, err := r.Search(bg, "otters", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) {
				t.Fatalf("a dense search of text without the model: %v", err)
			}
			for i := range dim {
				res, err := r.Search(bg, "", WithMode(Dense), TopK(1), WithQueryVector(axis(dim, i)), WithQueryVectorEmbedder("e5-test"))
				if err != nil || len(res) != 1 || res[0].ID != fmt.Sprintf("d%d", i) {
					t.Fatalf("axis %d: %v, %v", i, ids(res), err)
				}
				if c := res[0].Explain.Cosine; c == nil || math.Abs(*c-1) > 1e-6 {
					t.Fatalf("axis %d: cosine %v, want 1", i, c)
				}
			}
			// Hybrid: BM25 finds d5 alone by its text, dense recall d2 first by its vector:
			// d5 (both lists) then d2 (first of one) lead the fusion.
			res, err := r.Search(bg, "foxtrot", TopK(3), WithQueryVector(axis(dim, 2)))
			if err != nil || res[0].Explain.Mode != Hybrid {
				t.Fatalf("hybrid: %v, %v", res, err)
			}
			if got := ids(res); got[0] != "d5" || got[1] != "d2" || res[0].Explain.BM25 == nil || res[1].Explain.Dense == nil {
				t.Fatalf("hybrid by text and vector: %v", got)
			}
			res, err = r.Search(bg, "", TopK(8), WithQueryVector(axis(dim, 3)), WithWhere(Where{"even": true}))
			if err != nil || len(res) != dim/2 || res[0].ID != "d2" && res[0].ID != "d4" && res[0].ID != "d0" && res[0].ID != "d6" {
				t.Fatalf("filtered: %v, %v", ids(res), err)
			}
			qvs := make([][]float32, dim)
			for i := range qvs {
				qvs[i] = axis(dim, dim-1-i)
			}
			lists, err := r.SearchBatch(bg, make([]string, dim), WithMode(Dense), TopK(1), WithQueryVectors(qvs))
			if err != nil {
				t.Fatal(err)
			}
			for i, l := range lists {
				if len(l) != 1 || l[0].ID != fmt.Sprintf("d%d", dim-1-i) {
					t.Fatalf("batch query %d: %v", i, ids(l))
				}
			}
		})
	}

	// Vectors made by a model the store cannot load: a writable open keeps its dense index
	// closed (it takes no vector without the model); a read-only one opens it for vectors
	// the caller brings, and a search that would embed text falls back to BM25.
	hdir := filepath.Join(t.TempDir(), "hashed")
	h := openT(t, hdir, WithEmbedder(vectorstore.NewHashEmbedder(dim)))
	must(t, h.Add(bg, corpus...))
	must(t, h.Close())
	for _, ro := range []bool{false, true} {
		opts := []Option{WithoutEmbedderResolver()}
		if ro {
			opts = append(opts, ReadOnly())
		}
		r := openT(t, hdir, opts...)
		res, err := r.Search(bg, "", WithMode(Dense), WithQueryVector(axis(dim, 1)))
		if ro {
			want, werr := h0Dense(t, hdir, axis(dim, 1))
			if err != nil || werr != nil || !slices.Equal(ids(res), want) {
				t.Fatalf("read-only: a search by vector: %v, %v; want %v (%v)", ids(res), err, want, werr)
			}
			if hres, err := r.Search(bg, "compiled", WithMode(Hybrid)); err != nil || len(hres) == 0 || hres[0].Explain.Dense != nil {
				t.Fatalf("read-only: hybrid by text without the model: %v, %v; want BM25 results", ids(hres), err)
			}
		} else if !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, ErrNoEmbedder) || !strings.Contains(err.Error(), "dense index") {
			t.Fatalf("writable: a search by vector without a dense index: %v", err)
		}
		if res, err := r.Search(bg, "compiled", WithMode(BM25)); err != nil || len(res) == 0 {
			t.Fatalf("read-only %v: BM25 beside it: %v, %v", ro, ids(res), err)
		}
		must(t, r.Close())
	}
}

// A batch with one vector per query (nil: the text is embedded; an empty text with a vector)
// answers each query as Search with that vector does, batched or filtered; a batch whose
// vectors are not one per query, or one of which is bad, fails before any search, naming
// the query.
func TestSearchBatchQueryVectors(t *testing.T) {
	e := &countingEmbedder{Embedder: vectorstore.NewHashEmbedder(64)}
	m := openT(t, t.TempDir(), WithEmbedder(e))
	words := strings.Fields("cell tumor growth insulin glucose mouse brain protein gene therapy risk diet sleep memory zinc iron")
	rng := rand.New(rand.NewPCG(7, 7))
	var docs []Document
	for i := range 200 {
		var sb strings.Builder
		for range 5 + rng.IntN(20) {
			sb.WriteString(words[rng.IntN(len(words))] + " ")
		}
		docs = append(docs, Document{ID: fmt.Sprintf("d%03d", i), Text: sb.String(), Metadata: map[string]any{"even": i%2 == 0}})
	}
	must(t, m.Add(bg, docs...))
	qs := make([]string, 30)
	vs := make([][]float32, len(qs))
	for i := range qs {
		q := words[rng.IntN(len(words))] + " " + words[rng.IntN(len(words))]
		other := words[rng.IntN(len(words))]
		switch i % 3 {
		case 0: // text and the vector of another text
			qs[i], vs[i] = q, embedQueryT(t, e, other)
		case 1: // a vector alone
			vs[i] = embedQueryT(t, e, other)
		default: // text alone
			qs[i] = q
		}
	}
	for _, tc := range []struct {
		name string
		opts []SearchOption
	}{
		{"dense", []SearchOption{WithMode(Dense), TopK(7)}},
		{"hybrid", []SearchOption{TopK(10)}},
		{"hybrid filtered", []SearchOption{TopK(5), WithWhere(Where{"even": true})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.texts = 0
			got, err := m.SearchBatch(bg, qs, append(tc.opts, WithQueryVectors(vs))...)
			if err != nil {
				t.Fatal(err)
			}
			if e.texts != len(qs)/3 { // only the queries without a vector are embedded
				t.Fatalf("%d texts embedded, want %d", e.texts, len(qs)/3)
			}
			for i := range qs {
				want := searchT(t, m, qs[i], append(tc.opts, WithQueryVector(vs[i]))...)
				if len(want) == 0 {
					t.Fatalf("query %d: no results: weak test", i)
				}
				if fmt.Sprint(resultKeys(got[i])) != fmt.Sprint(resultKeys(want)) {
					t.Fatalf("query %d (%q, vector %v):\nbatch  %v\nsingle %v", i, qs[i], vs[i] != nil, resultKeys(got[i]), resultKeys(want))
				}
				if byVec := strings.Contains(notesOf(got[i][0]), "the caller's vector"); byVec != (vs[i] != nil) {
					t.Fatalf("query %d: vector %v, notes %q", i, vs[i] != nil, notesOf(got[i][0]))
				}
			}
		})
	}
	bad := slices.Clone(vs)
	bad[4] = make([]float32, 63)
	for _, tc := range []struct {
		name     string
		queries  []string
		opts     []SearchOption
		contains string
	}{
		{"too few vectors", qs, []SearchOption{WithQueryVectors(vs[:29])}, "29 query vectors for 30 queries"},
		{"bad vector", qs, []SearchOption{WithQueryVectors(bad)}, "query 4: memory: invalid query vector: 63 values"},
		{"both options", qs, []SearchOption{WithQueryVectors(vs), WithQueryVector(vs[0])}, "WithQueryVector and WithQueryVectors"},
		{"bm25", qs, []SearchOption{WithQueryVectors(vs), WithMode(BM25)}, "bm25 search"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.SearchBatch(bg, tc.queries, tc.opts...)
			if !errors.Is(err, ErrQueryVector) || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("%v, want ErrQueryVector saying %q", err, tc.contains)
			}
		})
	}
	// One vector for every query of a batch.
	one := embedQueryT(t, e, "insulin")
	lists, err := m.SearchBatch(bg, []string{"", ""}, WithMode(Dense), TopK(3), WithQueryVector(one))
	want := searchT(t, m, "insulin", WithMode(Dense), TopK(3))
	if err != nil || fmt.Sprint(ids(lists[0])) != fmt.Sprint(ids(want)) || fmt.Sprint(ids(lists[1])) != fmt.Sprint(ids(want)) {
		t.Fatalf("one vector for all: %v, %v; want %v", lists, err, ids(want))
	}
}

// Several collections and a cascade search the caller's vector in each collection.
func TestQueryVectorCollections(t *testing.T) {
	e := vectorstore.NewHashEmbedder(32)
	m := openT(t, t.TempDir(), WithEmbedder(e))
	must(t, m.Add(bg, corpus...))
	other, err := m.CreateCollection("other")
	must(t, err)
	must(t, other.Add(bg, Document{ID: "o1", Text: "otters hold hands while they sleep"}, Document{ID: "o2", Text: "rivers and lakes"}))
	v := embedQueryT(t, e, "otters sleep")
	for _, tc := range []struct {
		name string
		opts []SearchOption
	}{
		{"collections", []SearchOption{InCollections(map[string]float64{DefaultCollection: 1, "other": 1})}},
		{"cascade", []SearchOption{WithCascade(2, DefaultCollection, "other")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := searchT(t, m, "", append(tc.opts, WithMode(Dense), TopK(10), WithQueryVector(v))...)
			want := searchT(t, m, "otters sleep", append(tc.opts, WithMode(Dense), TopK(10))...)
			if fmt.Sprint(ids(res)) != fmt.Sprint(ids(want)) || !slices.Contains(ids(res), "o1") {
				t.Fatalf("by vector %v, by text %v", ids(res), ids(want))
			}
		})
	}
}

// A read-only store that reads through its writer cannot send a vector: it says so.
func TestQueryVectorThroughWriter(t *testing.T) {
	_, r := remotePair(t, filepath.Join(t.TempDir(), "store"))
	v := embedQueryT(t, vectorstore.NewHashEmbedder(16), "otters")
	if _, err := r.Search(bg, "otters", WithQueryVector(v)); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "writer") {
		t.Fatalf("Search: %v", err)
	}
	if _, err := r.SearchBatch(bg, []string{"a", "b"}, WithQueryVectors([][]float32{v, nil})); !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "writer") {
		t.Fatalf("SearchBatch: %v", err)
	}
}

// BenchmarkSearchByVector: a dense search of 5,000 hashed documents by a vector the caller
// has, against the same search embedding its text.
func BenchmarkSearchByVector(b *testing.B) {
	e := vectorstore.NewHashEmbedder(128)
	m, err := Open(b.TempDir(), WithEmbedder(e))
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	rng := rand.New(rand.NewPCG(1, 1))
	words := strings.Fields("cell tumor growth insulin glucose mouse brain protein gene therapy risk diet sleep memory zinc iron")
	docs := make([]Document, 5000)
	for i := range docs {
		var sb strings.Builder
		for range 20 {
			sb.WriteString(words[rng.IntN(len(words))] + " ")
		}
		docs[i] = Document{ID: fmt.Sprint(i), Text: sb.String()}
	}
	if err := m.Add(bg, docs...); err != nil {
		b.Fatal(err)
	}
	vs, err := vectorstore.EmbedQueries(bg, e, []string{"insulin glucose"})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("vector", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Search(bg, "", WithMode(Dense), WithQueryVector(vs[0])); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text", func(b *testing.B) {
		for b.Loop() {
			if _, err := m.Search(bg, "insulin glucose", WithMode(Dense)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// h0Dense is the dense answer to vector v of the store at dir opened with its model (the
// hash embedder of TestQueryVectorWithoutEmbedder, dimension len(v)).
func h0Dense(t *testing.T, dir string, v []float32) ([]string, error) {
	t.Helper()
	m, err := Open(dir, ReadOnly(), WithEmbedder(vectorstore.NewHashEmbedder(len(v))))
	if err != nil {
		return nil, err
	}
	defer m.Close()
	res, err := m.Search(context.Background(), "", WithMode(Dense), WithQueryVector(v))
	return ids(res), err
}
