package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/agentmem/memory/vectorstore"
)

var bg = context.Background()

var corpus = []Document{
	{ID: "go", Title: "The Go language", Text: "Go is a statically typed compiled language designed at Google.", Metadata: map[string]any{"lang": "go", "year": 2009, "compiled": true}},
	{ID: "py", Title: "Python", Text: "Python is a dynamically typed interpreted language.", Metadata: map[string]any{"lang": "python", "year": 1991, "compiled": false}},
	{ID: "rs", Title: "Rust", Text: "Rust is a compiled language focused on memory safety without garbage collection.", Metadata: map[string]any{"lang": "rust", "year": 2015, "compiled": true}},
	{ID: "js", Title: "JavaScript", Text: "JavaScript is the language of the web browser.", Metadata: map[string]any{"lang": "js", "year": 1995, "compiled": false}},
	{ID: "gc", Title: "Garbage collection", Text: "A garbage collector reclaims memory that a program no longer uses. Go and Python use one.", Metadata: map[string]any{"topic": "memory", "year": 1959}},
}

func openT(t *testing.T, dir string, opts ...Option) *Memory {
	t.Helper()
	m, err := Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Close(%q): %v", dir, err)
		}
	})
	return m
}

// must fails the test at once on a setup error.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// searchT is Search that fails the test on an error.
func searchT(t *testing.T, c interface {
	Search(context.Context, string, ...SearchOption) ([]Result, error)
}, query string, opts ...SearchOption) []Result {
	t.Helper()
	res, err := c.Search(bg, query, opts...)
	if err != nil {
		t.Fatalf("Search(%q): %v", query, err)
	}
	return res
}

func ids(res []Result) []string {
	out := make([]string, len(res))
	for i, r := range res {
		out[i] = r.ID
	}
	return out
}

func TestAddGetSearchDelete(t *testing.T) {
	m := openT(t, "")
	if err := m.Add(bg, corpus...); err != nil {
		t.Fatal(err)
	}
	if got := memtest.Count(t, m); got != len(corpus) {
		t.Fatalf("Count = %d, want %d", got, len(corpus))
	}
	d, err := m.Get(bg, "rs")
	if err != nil {
		t.Fatal(err)
	}
	if d.Title != "Rust" || d.Metadata["year"] != float64(2015) || d.Metadata["compiled"] != true {
		t.Fatalf("Get(rs) = %+v", d)
	}
	res, err := m.Search(bg, "garbage collector memory", WithMode(BM25), TopK(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].ID != "gc" {
		t.Fatalf("top hit = %v, want gc first", ids(res))
	}
	if res[0].Explain.BM25 == nil || res[0].Explain.BM25.Rank != 1 || res[0].Explain.BM25.Score <= 0 || res[0].Score != res[0].Explain.BM25.Score {
		t.Fatalf("explanation %+v", res[0].Explain)
	}
	// Stemming and stop words: "collections" matches "collection"/"collector" stems.
	res = searchT(t, m, "the collections", WithMode(BM25))
	if len(res) == 0 {
		t.Fatal("stemmed query found nothing")
	}
	if err := m.Delete(bg, "gc", "unknown-id"); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Get(bg, "gc"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after delete: %v, want ErrNotFound", err)
	}
	res = searchT(t, m, "garbage collector", WithMode(BM25))
	for _, r := range res {
		if r.ID == "gc" {
			t.Fatal("deleted document still found")
		}
	}
	// Upsert replaces.
	if err := m.Upsert(bg, Document{ID: "py", Title: "Python 3", Text: "snakes and eggs"}); err != nil {
		t.Fatal(err)
	}
	res = searchT(t, m, "snakes", WithMode(BM25))
	if len(res) != 1 || res[0].ID != "py" || res[0].Title != "Python 3" {
		t.Fatalf("upserted doc search = %v", ids(res))
	}
	if res := searchT(t, m, "dynamically interpreted", WithMode(BM25)); len(res) != 0 {
		t.Fatalf("old text of an upserted doc still matches: %v", ids(res))
	}
}

func TestHybridDegradesWithoutEmbedder(t *testing.T) {
	m := openT(t, "")
	must(t, m.Add(bg, corpus...))
	res, err := m.Search(bg, "compiled language")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].Explain.Mode != BM25 || len(res[0].Explain.Notes) == 0 ||
		!strings.Contains(res[0].Explain.Notes[0], "no embedder") {
		t.Fatalf("want a BM25 result with a degradation note, got %+v", res)
	}
	if _, err := m.Search(bg, "x", WithMode(Dense)); !errors.Is(err, ErrNoEmbedder) {
		t.Fatalf("dense without embedder: %v", err)
	}
	if _, err := m.Search(bg, "x", WithRerank(5)); !errors.Is(err, ErrNoReranker) {
		t.Fatalf("rerank without reranker: %v", err)
	}
}

func TestPersistenceReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	must(t, m.Add(bg, corpus...))
	must(t, m.Collection("notes").Add(bg, Document{ID: "n1", Text: "remember the milk"}))
	before := searchT(t, m, "compiled language memory", WithMode(BM25))
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Search(bg, "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("search after close: %v", err)
	}
	m2 := openT(t, dir)
	after, err := m2.Search(bg, "compiled language memory", WithMode(BM25))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(before)) != fmt.Sprint(ids(after)) || before[0].Score != after[0].Score {
		t.Fatalf("results changed across reopen: %v vs %v", ids(before), ids(after))
	}
	if got := memtest.Collections(t, m2); fmt.Sprint(got) != "[default notes]" {
		t.Fatalf("Collections = %v", got)
	}
	if d, err := m2.Collection("notes").Get(bg, "n1"); err != nil || d.Text != "remember the milk" {
		t.Fatalf("notes/n1 = %+v, %v", d, err)
	}
}

func TestIndexRebuiltWhenLost(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	m, err := Open(dir)
	must(t, err)
	must(t, m.Add(bg, corpus...))
	must(t, m.Close())
	// Lose the derived BM25 index entirely: the store of record rebuilds it.
	if err := os.RemoveAll(filepath.Join(dir, bm25Dir)); err != nil {
		t.Fatal(err)
	}
	m2 := openT(t, dir)
	res, err := m2.Search(bg, "garbage collector", WithMode(BM25))
	if err != nil || len(res) == 0 || res[0].ID != "gc" {
		t.Fatalf("after losing the index: %v %v", ids(res), err)
	}
	// Corrupt it: same.
	must(t, m2.Close())
	corrupted := 0
	must(t, filepath.Walk(filepath.Join(dir, bm25Dir), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		corrupted++
		return os.WriteFile(p, []byte("garbage"), 0o644)
	}))
	if corrupted == 0 {
		t.Fatal("no index file to corrupt")
	}
	m3 := openT(t, dir)
	if res, err := m3.Search(bg, "garbage collector", WithMode(BM25)); err != nil || len(res) == 0 || res[0].ID != "gc" {
		t.Fatalf("after corrupting the index: %v %v", ids(res), err)
	}
}

func TestBadInput(t *testing.T) {
	big := strings.Repeat("word ", 10<<20) // 50 MB
	cases := []struct {
		name string
		docs []Document
		want error
	}{
		{"empty id", []Document{{ID: "", Text: "x"}}, ErrEmptyID},
		{"duplicate in call", []Document{{ID: "a", Text: "x"}, {ID: "a", Text: "y"}}, ErrDuplicateID},
		{"duplicate of stored", []Document{{ID: "go", Text: "x"}}, ErrDuplicateID},
		{"empty text", []Document{{ID: "e", Text: ""}}, ErrEmptyText},
		{"invalid utf8 text", []Document{{ID: "u", Text: "bad \xff\xfe"}}, ErrInvalidUTF8},
		{"invalid utf8 id", []Document{{ID: "\xff", Text: "x"}}, ErrInvalidUTF8},
		{"50 MB document", []Document{{ID: "big", Text: big}}, ErrTooLarge},
		{"nested metadata", []Document{{ID: "m", Text: "x", Metadata: map[string]any{"k": map[string]any{"a": 1}}}}, ErrInvalidMetadata},
		{"empty metadata key", []Document{{ID: "m", Text: "x", Metadata: map[string]any{"": 1}}}, ErrInvalidMetadata},
		{"embedding without embedder", []Document{{ID: "v", Text: "x", Embedding: []float32{1}}}, ErrNoEmbedder},
		{"good then bad", []Document{{ID: "ok1", Text: "fine"}, {ID: "", Text: "x"}}, ErrEmptyID},
	}
	dir := filepath.Join(t.TempDir(), "s")
	m := openT(t, dir)
	must(t, m.Add(bg, corpus...))
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := m.Add(bg, tc.docs...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Add: %v, want %v", err, tc.want)
			}
			if tc.want != ErrDuplicateID {
				if err := m.Upsert(bg, tc.docs...); !errors.Is(err, tc.want) {
					t.Fatalf("Upsert: %v, want %v", err, tc.want)
				}
			}
			if memtest.Count(t, m) != len(corpus) {
				t.Fatalf("store changed: %d docs", memtest.Count(t, m))
			}
			if _, err := m.Get(bg, "ok1"); !errors.Is(err, ErrNotFound) {
				t.Fatal("a failed batch wrote part of its documents")
			}
		})
	}
	// Nothing stored was lost or changed.
	for _, d := range corpus {
		got, err := m.Get(bg, d.ID)
		if err != nil || got.Text != d.Text {
			t.Fatalf("%s after bad input: %+v %v", d.ID, got, err)
		}
	}
	// Bad queries.
	for _, q := range []struct {
		name string
		opts []SearchOption
		want error
	}{
		{"unknown operator", []SearchOption{WithWhere(Where{"year": map[string]any{"$regex": "x"}})}, ErrInvalidFilter},
		{"unknown top-level op", []SearchOption{WithWhere(Where{"$not": []any{}})}, ErrInvalidFilter},
		{"and not a list", []SearchOption{WithWhere(Where{"$and": "x"})}, ErrInvalidFilter},
		{"bad where_document", []SearchOption{WithWhereDocument(WhereDocument{"$glob": "x*"})}, ErrInvalidFilter},
		{"bad where_document pattern", []SearchOption{WithWhereDocument(WhereDocument{"$regex": "x(?=y)"})}, ErrInvalidFilter},
		{"bad mode", []SearchOption{WithMode("fuzzy")}, ErrInvalidOption},
		{"negative k", []SearchOption{TopK(-1)}, ErrInvalidOption},
		{"bad collection", []SearchOption{InCollections(map[string]float64{"a\x00b": 1})}, ErrInvalidCollection},
	} {
		if _, err := m.Search(bg, "language", q.opts...); !errors.Is(err, q.want) {
			t.Errorf("%s: %v, want %v", q.name, err, q.want)
		}
	}
	if _, err := m.Search(bg, "  "); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("empty query: %v", err)
	}
	if err := m.Collection("bad\x01name").Add(bg, Document{ID: "x", Text: "y"}); !errors.Is(err, ErrInvalidCollection) {
		t.Errorf("bad collection name: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	// A directory that is not ours.
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644))
	if _, err := Open(dir); !errors.Is(err, ErrNotAStore) {
		t.Fatalf("foreign dir: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "notes.txt")); err != nil || string(b) != "mine" {
		t.Fatal("foreign file touched")
	}
	// A foreign directory that happens to hold a manifest temp name is still foreign,
	// and nothing in it is removed.
	stray := filepath.Join(dir, manifestTempPrefix+"123")
	must(t, os.WriteFile(stray, []byte("{"), 0o644))
	if _, err := Open(dir); !errors.Is(err, ErrNotAStore) {
		t.Fatalf("foreign dir with a temp name: %v", err)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatalf("foreign dir: temp-named file removed: %v", err)
	}
	// A manifest from a newer format.
	dir2 := filepath.Join(t.TempDir(), "s")
	m, err := Open(dir2)
	must(t, err)
	must(t, m.Add(bg, corpus...))
	must(t, m.Close())
	man, err := os.ReadFile(filepath.Join(dir2, manifestName))
	must(t, err)
	newer := strings.Replace(string(man), `"format": 1`, `"format": 99`, 1)
	if newer == string(man) {
		t.Fatalf("manifest has no format 1: %s", man)
	}
	must(t, os.WriteFile(filepath.Join(dir2, manifestName), []byte(newer), 0o644))
	if _, err := Open(dir2); !errors.Is(err, ErrFormatVersion) {
		t.Fatalf("newer format: %v", err)
	}
	must(t, os.WriteFile(filepath.Join(dir2, manifestName), man, 0o644))
	m2 := openT(t, dir2)
	if memtest.Count(t, m2) != len(corpus) {
		t.Fatal("store lost documents after a refused open")
	}
	// Locked by another open.
	if _, err := Open(dir2); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v", err)
	}
	// Garbage manifest.
	dir3 := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir3, manifestName), []byte("{"), 0o644))
	if _, err := Open(dir3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("garbage manifest: %v", err)
	}
}

// A process killed inside the first writeManifest leaves only a manifest temp file;
// the directory must still open as a new store (the crash test found this). A kill
// inside a later manifest rewrite leaves a temp file beside the manifest, which the
// next open removes.
func TestOpenAfterKillInManifestWrite(t *testing.T) {
	dir := t.TempDir()
	half := filepath.Join(dir, manifestTempPrefix+"4242")
	if err := os.WriteFile(half, []byte(`{"format": 1, "crea`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Open(dir)
	if err != nil {
		t.Fatalf("open after kill in first manifest write: %v", err)
	}
	if err := m.Add(bg, corpus...); err != nil {
		t.Fatal(err)
	}
	must(t, m.Close())
	if _, err := os.Stat(half); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file left: %v", err)
	}
	// Beside a live manifest.
	half2 := filepath.Join(dir, manifestTempPrefix+"777")
	must(t, os.WriteFile(half2, []byte(`{`), 0o644))
	m = openT(t, dir)
	if memtest.Count(t, m) != len(corpus) {
		t.Fatalf("count %d after reopen, want %d", memtest.Count(t, m), len(corpus))
	}
	if _, err := os.Stat(half2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("temp file beside the manifest left: %v", err)
	}
}

func TestFilters(t *testing.T) {
	m := openT(t, "")
	must(t, m.Add(bg, corpus...))
	all := func(w Where, wd WhereDocument) []string {
		t.Helper()
		res, err := m.Search(bg, "language memory garbage web", WithMode(BM25), TopK(10), WithWhere(w), WithWhereDocument(wd))
		if err != nil {
			t.Fatal(err)
		}
		got := ids(res)
		sort.Strings(got)
		return got
	}
	cases := []struct {
		name string
		w    Where
		wd   WhereDocument
		want string
	}{
		{"eq string", Where{"lang": "go"}, nil, "[go]"},
		{"eq op", Where{"lang": map[string]any{"$eq": "rust"}}, nil, "[rs]"},
		{"ne (a missing key matches, as in Chroma)", Where{"lang": map[string]any{"$ne": "go"}}, nil, "[gc js py rs]"},
		{"gt int vs float", Where{"year": map[string]any{"$gt": 2000}}, nil, "[go rs]"},
		{"gte", Where{"year": map[string]any{"$gte": 2009.0}}, nil, "[go rs]"},
		{"lt", Where{"year": map[string]any{"$lt": 1991}}, nil, "[gc]"},
		{"lte", Where{"year": map[string]any{"$lte": 1991}}, nil, "[gc py]"},
		{"in", Where{"lang": map[string]any{"$in": []any{"go", "js"}}}, nil, "[go js]"},
		{"in typed slice", Where{"lang": map[string]any{"$in": []string{"py", "python"}}}, nil, "[py]"},
		{"nin (a missing key matches)", Where{"lang": map[string]any{"$nin": []any{"go", "js"}}}, nil, "[gc py rs]"},
		{"nin empty matches all", Where{"lang": map[string]any{"$nin": []any{}}}, nil, "[gc go js py rs]"},
		{"ne with a document filter (the scan path)", Where{"lang": map[string]any{"$ne": "go"}}, WhereDocument{"$contains": "garbage"}, "[gc rs]"},
		{"ne on a key no document has", Where{"absent": map[string]any{"$ne": 1}}, nil, "[gc go js py rs]"},
		{"bool", Where{"compiled": true}, nil, "[go rs]"},
		{"and", Where{"$and": []any{map[string]any{"compiled": true}, map[string]any{"year": map[string]any{"$lt": 2010}}}}, nil, "[go]"},
		{"or", Where{"$or": []Where{{"lang": "js"}, {"topic": "memory"}}}, nil, "[gc js]"},
		{"range in one object", Where{"year": map[string]any{"$gt": 1990, "$lt": 2000}}, nil, "[js py]"},
		{"contains", nil, WhereDocument{"$contains": "garbage"}, "[gc rs]"},
		{"not_contains", nil, WhereDocument{"$not_contains": "language"}, "[gc]"},
		{"contains title", nil, WhereDocument{"$contains": "JavaScript"}, "[js]"},
		{"doc and/or", nil, WhereDocument{"$or": []any{map[string]any{"$contains": "web"}, map[string]any{"$contains": "Rust"}}}, "[js rs]"},
		{"both", Where{"compiled": true}, WhereDocument{"$contains": "garbage"}, "[rs]"},
		{"none match", Where{"lang": "cobol"}, nil, "[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(all(tc.w, tc.wd)); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
	w, err := ParseWhere([]byte(`{"$and":[{"year":{"$gte":1995}},{"lang":{"$in":["go","js","py"]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(all(w, nil)); got != "[go js]" {
		t.Fatalf("parsed where: %s", got)
	}
	if _, err := ParseWhere([]byte(`{"a":{"$foo":1}}`)); !errors.Is(err, ErrInvalidFilter) {
		t.Fatalf("ParseWhere bad op: %v", err)
	}
}

// TestFilterBeforeRanking: a selective filter still returns the full k when k documents
// match, even though they rank far below the unfiltered top k.
func TestFilterBeforeRanking(t *testing.T) {
	for _, backend := range vectorstore.Backends() {
		for _, mode := range []Mode{BM25, Dense, Hybrid} {
			t.Run(backend+"/"+string(mode), func(t *testing.T) {
				testFilterBeforeRanking(t, backend, mode)
			})
		}
	}
}

func testFilterBeforeRanking(t *testing.T, backend string, mode Mode) {
	{
		{
			m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(64)), WithIndex(vectorstore.IndexConfig{Backend: backend}))
			var docs []Document
			for i := 0; i < 300; i++ {
				text := "common words about retrieval"
				if i%3 == 0 {
					text += " retrieval retrieval retrieval" // these rank first without a filter
				}
				docs = append(docs, Document{ID: fmt.Sprintf("d%03d", i), Text: text, Metadata: map[string]any{"bucket": float64(i % 10)}})
			}
			if err := m.Add(bg, docs...); err != nil {
				t.Fatal(err)
			}
			res, err := m.Search(bg, "retrieval", WithMode(mode), TopK(20), WithWindow(20), WithWhere(Where{"bucket": 7}))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 20 {
				t.Fatalf("got %d results, want the full 20 (30 docs match)", len(res))
			}
			for _, r := range res {
				if r.Metadata["bucket"] != float64(7) {
					t.Fatalf("result %s violates the filter", r.ID)
				}
			}
		}
	}
}

func TestHybridExplainAndWeights(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(128)))
	if err := m.Add(bg, corpus...); err != nil {
		t.Fatal(err)
	}
	var st SearchStats
	res, err := m.Search(bg, "compiled language memory safety", TopK(5), WithStats(&st))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode != Hybrid || st.Candidates == 0 || st.Total <= 0 {
		t.Fatalf("stats %+v", st)
	}
	top := res[0]
	if top.ID != "rs" || top.Explain.BM25 == nil || top.Explain.Dense == nil {
		t.Fatalf("top = %s %+v", top.ID, top.Explain)
	}
	// RRF: the fused score is the sum of 1/(60+rank) over both lists.
	want := 1/(60+float64(top.Explain.BM25.Rank)) + 1/(60+float64(top.Explain.Dense.Rank))
	if d := top.Score - want; d > 1e-12 || d < -1e-12 || top.Explain.Fused != top.Score {
		t.Fatalf("fused score %v, want %v", top.Score, want)
	}
	// A document only one retriever found gets only that retriever's share.
	for _, r := range res {
		if (r.Explain.BM25 == nil) != (r.Explain.Dense == nil) {
			var rank int
			if r.Explain.BM25 != nil {
				rank = r.Explain.BM25.Rank
			} else {
				rank = r.Explain.Dense.Rank
			}
			if d := r.Score - 1/(60+float64(rank)); d > 1e-12 || d < -1e-12 {
				t.Fatalf("%s single-list score %v", r.ID, r.Score)
			}
		}
	}
	// Weighted score fusion and dense-only run too.
	if res, err := m.Search(bg, "compiled language", WithFusion(hybrid.WeightedScore)); err != nil || len(res) == 0 || res[0].Score > 2.0001 {
		t.Fatalf("weighted fusion: %v %v", res, err)
	}
	if res, err := m.Search(bg, "web browser language", WithMode(Dense), TopK(1)); err != nil || res[0].ID != "js" {
		t.Fatalf("dense: %v %v", ids(res), err)
	}
}

func TestMultiCollectionAndCollapse(t *testing.T) {
	m := openT(t, "", WithEmbedder(vectorstore.NewHashEmbedder(128)))
	qna := m.Collection("qna")
	docs := m.Collection("docs")
	must(t, qna.Add(bg, Document{ID: "q1", Title: "How do I reset my password?", Text: "Use the account page and click reset password."}))
	must(t, docs.Add(bg,
		Document{ID: "d1", Title: "Password policy", Text: "Passwords must be reset every 90 days on the account page."},
		Document{ID: "d2", Title: "Password policy", Text: "Passwords must be reset every 90 days on the account page."},
		Document{ID: "q1", Title: "How do I reset my password?", Text: "Use the account page and click reset password."},
	))
	res, err := m.Search(bg, "reset password account page", InCollections(map[string]float64{"qna": 2, "docs": 1}), TopK(10))
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Collection != "qna" || res[0].Explain.CollectionWeight != 2 {
		t.Fatalf("curated answer not first: %+v", res[0])
	}
	if len(res) != 4 {
		t.Fatalf("without collapse want 4 results, got %v", ids(res))
	}
	res, err = m.Search(bg, "reset password account page", InCollections(map[string]float64{"qna": 2, "docs": 1}), WithCollapse(0.99))
	if err != nil {
		t.Fatal(err)
	}
	got := ids(res)
	if len(got) != 2 || got[0] != "q1" {
		t.Fatalf("collapse: %v (want q1 once and one of the policy copies)", got)
	}
}

func TestEmbedderIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	m, err := Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(32)))
	if err != nil {
		t.Fatal(err)
	}
	must(t, m.Add(bg, corpus...))
	must(t, m.Close())
	if _, err := Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(64))); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("other dim: %v", err)
	}
	// Opening without the embedder (and without resolving it) reads (BM25) but refuses
	// writes that would lack vectors.
	m2, err := Open(dir, WithoutEmbedderResolver())
	if err != nil {
		t.Fatal(err)
	}
	if res, err := m2.Search(bg, "rust", WithMode(BM25)); err != nil || len(res) == 0 {
		t.Fatalf("bm25 read without embedder: %v", err)
	}
	// Dense needs the store's embedder and says which one; hybrid (the default) runs as
	// BM25 and says why.
	if _, err := m2.Search(bg, "rust", WithMode(Dense)); !errors.Is(err, ErrEmbedderNeeded) || !errors.Is(err, ErrNoEmbedder) || !strings.Contains(err.Error(), "hash-bigram-v1/32") {
		t.Fatalf("dense search without the store's embedder: %v", err)
	}
	if res, err := m2.Search(bg, "rust"); err != nil || len(res) == 0 || res[0].Explain.Mode != BM25 ||
		!strings.Contains(strings.Join(res[0].Explain.Notes, "; "), "hash-bigram-v1/32") {
		t.Fatalf("hybrid search without the store's embedder: %v, %v", res, err)
	}
	if err := m2.Add(bg, Document{ID: "new", Text: "x"}); !errors.Is(err, ErrNoEmbedder) {
		t.Fatalf("write without embedder: %v", err)
	}
	must(t, m2.Close())
	var calls int
	m3, err := Open(dir, WithEmbedder(vectorstore.NewHashEmbedder(64)), WithReEmbed(func(done, total int) { calls++ }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { must(t, m3.Close()) })
	if calls == 0 {
		t.Fatal("no re-embed progress")
	}
	d, err := m3.Get(bg, "go")
	must(t, err)
	if len(d.Embedding) != 64 {
		t.Fatalf("re-embedded vector has %d dims", len(d.Embedding))
	}
	if res, err := m3.Search(bg, "web browser", WithMode(Dense), TopK(1)); err != nil || res[0].ID != "js" {
		t.Fatalf("dense after re-embed: %v %v", ids(res), err)
	}
}

func TestPrecomputedEmbeddings(t *testing.T) {
	e := vectorstore.NewHashEmbedder(16)
	m := openT(t, "", WithEmbedder(e))
	v := make([]float32, 16)
	v[3] = 1
	if err := m.Add(bg, Document{ID: "a", Text: "x", Embedding: []float32{1, 2}}); !errors.Is(err, ErrBadVector) {
		t.Fatalf("short vector: %v", err)
	}
	if err := m.Add(bg, Document{ID: "a", Text: "x", Embedding: v}); err != nil {
		t.Fatal(err)
	}
	d, err := m.Get(bg, "a")
	must(t, err)
	if d.Embedding[3] != 1 {
		t.Fatalf("stored embedding %v", d.Embedding)
	}
}

// TestDenseReopenEveryBackend: dense results are the same after close and reopen, and after
// writes that only the store of record saw (the index catches up from the change log).
func TestDenseReopenEveryBackend(t *testing.T) {
	for _, backend := range vectorstore.Backends() {
		t.Run(backend, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "s")
			opts := []Option{WithEmbedder(vectorstore.NewHashEmbedder(64)), WithIndex(vectorstore.IndexConfig{Backend: backend})}
			m, err := Open(dir, opts...)
			if err != nil {
				t.Fatal(err)
			}
			must(t, m.Add(bg, corpus...))
			must(t, m.Delete(bg, "py"))
			before, err := m.Search(bg, "compiled language memory", WithMode(Dense))
			if err != nil {
				t.Fatal(err)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			m2 := openT(t, dir, opts...)
			after, err := m2.Search(bg, "compiled language memory", WithMode(Dense))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(ids(before)) != fmt.Sprint(ids(after)) {
				t.Fatalf("dense results changed across reopen: %v vs %v", ids(before), ids(after))
			}
			for _, r := range after {
				if r.ID == "py" {
					t.Fatal("deleted document came back")
				}
			}
		})
	}
}
