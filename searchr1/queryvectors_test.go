package searchr1

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

// capitals are the documents of the query-vector tests' store.
var capitals = []memory.Document{
	{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
	{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	{ID: "it", Title: "Italy", Text: "Rome is the capital of Italy."},
	{ID: "es", Title: "Spain", Text: "Madrid is the capital of Spain."},
}

// vectorStore is a store of capitals embedded by a 32-value hash embedder, returned with it.
func vectorStore(t *testing.T) (*memory.Memory, vectorstore.Embedder) {
	t.Helper()
	e := vectorstore.NewHashEmbedder(32)
	m, err := memory.Open("", memory.WithEmbedder(e))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Add(context.Background(), capitals...); err != nil {
		t.Fatal(err)
	}
	return m, e
}

// vecJSON is the JSON of the embeddings e makes of texts ("" gives null).
func vecJSON(t *testing.T, e vectorstore.Embedder, texts ...string) string {
	t.Helper()
	out := make([][]float32, len(texts))
	for i, tx := range texts {
		if tx == "" {
			continue
		}
		vs, err := vectorstore.EmbedQueries(context.Background(), e, []string{tx})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = vs[0]
	}
	data, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// postJSON posts body to url and returns the status and the decoded JSON answer.
func postJSON(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, data := postPythonTo(t, url, body)
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, data)
	}
	return resp.StatusCode, v
}

// resultIDs are the ids of each list of a /retrieve answer without scores.
func resultIDs(t *testing.T, v map[string]any) [][]string {
	t.Helper()
	lists, ok := v["result"].([]any)
	if !ok {
		t.Fatalf("no result: %v", v)
	}
	out := make([][]string, len(lists))
	for i, l := range lists {
		out[i] = []string{}
		for _, d := range l.([]any) {
			out[i] = append(out[i], d.(map[string]any)["id"].(string))
		}
	}
	return out
}

// /retrieve with query vectors: each vector is searched as it is (dense recall follows the
// vector, not the text), alone or beside its text, and a null vector leaves its query to
// its text; the same vectors as the texts' embeddings answer as the texts do.
func TestRetrieveQueryVectors(t *testing.T) {
	m, e := vectorStore(t)
	mode := func(md memory.Mode) []memory.SearchOption { return []memory.SearchOption{memory.WithMode(md)} }
	dense := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{SearchOptions: mode(memory.Dense)}))
	defer dense.Close()
	hybrid := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{}))
	defer hybrid.Close()
	pool := httptest.NewServer(NewRetrieveHandler(searchOnly{m}, RetrieveOptions{SearchOptions: mode(memory.Dense)}))
	defer pool.Close()

	fr, de := "Paris France", "Berlin Germany"
	for _, tc := range []struct {
		name string
		url  string
		body string
		want [][]string
	}{
		{"vectors alone", dense.URL, `{"query_vectors": ` + vecJSON(t, e, fr, de) + `, "topk": 1}`, [][]string{{"fr"}, {"de"}}},
		{"vectors alone, one by one", pool.URL, `{"query_vectors": ` + vecJSON(t, e, fr, de) + `, "topk": 1}`, [][]string{{"fr"}, {"de"}}},
		{"vectors over the texts", dense.URL, `{"queries": ["Rome", "Madrid"], "query_vectors": ` + vecJSON(t, e, fr, de) + `, "topk": 1}`, [][]string{{"fr"}, {"de"}}},
		{"null vector: the text", dense.URL, `{"queries": ["Rome Italy", "Madrid"], "query_vectors": ` + vecJSON(t, e, "", de) + `, "topk": 1}`, [][]string{{"it"}, {"de"}}},
		{"neither text nor vector", dense.URL, `{"queries": [" ", "x"], "query_vectors": ` + vecJSON(t, e, "", de) + `, "topk": 1}`, [][]string{{}, {"de"}}},
		{"stated embedder", dense.URL, `{"query_vectors": ` + vecJSON(t, e, de) + `, "query_embedder": "hash-bigram-v1/32", "topk": 1}`, [][]string{{"de"}}},
		{"hybrid: vector alone", hybrid.URL, `{"queries": [""], "query_vectors": ` + vecJSON(t, e, "Madrid Spain") + `, "topk": 1}`, [][]string{{"es"}}},
		{"query_vectors null", hybrid.URL, `{"queries": ["Rome"], "query_vectors": null, "topk": 1}`, [][]string{{"it"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, v := postJSON(t, tc.url+"/retrieve", tc.body)
			if status != 200 {
				t.Fatalf("status %d: %v", status, v)
			}
			if got := resultIDs(t, v); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}
	// The texts' own embeddings as vectors: the answer of the texts, scores and all.
	texts := []string{"capital of France", "Berlin", "Italy Rome capital"}
	qs, _ := json.Marshal(texts)
	for _, url := range []string{dense.URL, hybrid.URL} {
		_, byText := postJSON(t, url+"/retrieve", `{"queries": `+string(qs)+`, "topk": 3, "return_scores": true}`)
		_, byVec := postJSON(t, url+"/retrieve", `{"queries": `+string(qs)+`, "query_vectors": `+vecJSON(t, e, texts...)+`, "topk": 3, "return_scores": true}`)
		if fmt.Sprint(byText) != fmt.Sprint(byVec) {
			t.Fatalf("%s: by vector\n%v\nby text\n%v", url, byVec, byText)
		}
	}
}

// searchOnly hides a searcher's SearchBatch: queries go one by one through the pool.
type searchOnly struct{ s Searcher }

func (s searchOnly) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	return s.s.Search(ctx, q, opts...)
}

// Bad query vectors get 422 with a JSON body naming the problem (FastAPI's validation body,
// with its loc, in the search-r1 dialect), before anything is searched.
func TestRetrieveQueryVectorErrors(t *testing.T) {
	m, e := vectorStore(t)
	bm25Store, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer bm25Store.Close()
	if err := bm25Store.Add(context.Background(), capitals...); err != nil {
		t.Fatal(err)
	}
	dense := []memory.SearchOption{memory.WithMode(memory.Dense)}
	servers := map[string]*httptest.Server{}
	for name, s := range map[string]struct {
		s Searcher
		o RetrieveOptions
	}{
		"dense":    {m, RetrieveOptions{SearchOptions: dense, MaxQueries: 4, MaxQueryVectorValues: 96}},
		"bm25":     {m, RetrieveOptions{SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25)}}},
		"rerank":   {m, RetrieveOptions{Reranker: constReranker{}}},
		"no-dense": {bm25Store, RetrieveOptions{}},
		"compat":   {m, RetrieveOptions{SearchOptions: dense, Compat: CompatSearchR1}},
	} {
		s.o.Logger = discardLogger()
		srv := httptest.NewServer(NewRetrieveHandler(s.s, s.o))
		defer srv.Close()
		servers[name] = srv
	}
	v1 := vecJSON(t, e, "Paris")
	vec := v1[1 : len(v1)-1] // one vector's list
	zeros := "[" + strings.TrimSuffix(strings.Repeat("0,", 32), ",") + "]"
	for _, tc := range []struct {
		name, server, body, says string
	}{
		{"fewer vectors than queries", "dense", `{"queries": ["a", "b"], "query_vectors": ` + v1 + `}`, `"query_vectors" has 1 items for 2 queries`},
		{"more vectors than queries", "dense", `{"queries": ["a"], "query_vectors": [` + vec + `, ` + vec + `]}`, "2 items for 1 queries"},
		{"not a list", "dense", `{"query_vectors": 3}`, "must be a list"},
		{"a vector not a list", "dense", `{"query_vectors": ["x"]}`, "query_vectors[0] must be a list of numbers"},
		{"a string value", "dense", `{"query_vectors": [[1, "x"]]}`, "query_vectors[0] must be a list of numbers"},
		{"a null value", "dense", `{"query_vectors": [[1, null, 2]]}`, "query_vectors[0] holds null"},
		{"over float32", "dense", `{"query_vectors": [[1e39]]}`, "within float32's range"},
		{"empty vector", "dense", `{"query_vectors": [null, []]}`, "query_vectors[1] is empty"},
		{"zero vector", "dense", `{"query_vectors": [` + zeros + `]}`, "query_vectors[0] is all zeros"},
		{"lengths differ", "dense", `{"query_vectors": [` + vec + `, [1, 2]]}`, "query_vectors[1] has 2 values, query_vectors[0] has 32"},
		{"store's dimension", "dense", `{"query_vectors": [[1, 2, 3]]}`, "3 values, the store's vectors"},
		{"other embedder", "dense", `{"query_vectors": ` + v1 + `, "query_embedder": "e5-base-v2"}`, `"e5-base-v2", the store's vectors by "hash-bigram-v1/32"`},
		{"embedder not a string", "dense", `{"query_vectors": ` + v1 + `, "query_embedder": 5}`, "query_embedder"},
		{"too many vectors", "dense", `{"query_vectors": [null, null, null, null, null]}`, "at most 4 allowed"},
		{"too many values", "dense", `{"query_vectors": [` + vec + `, ` + vec + `, ` + vec + `, ` + vec + `]}`, "more than 96 values"},
		{"no queries at all", "dense", `{"query_vectors": null}`, `"queries" is required`},
		{"bm25 server", "bm25", `{"query_vectors": ` + v1 + `}`, "bm25 search does not search by vector"},
		{"reranker without text", "rerank", `{"queries": ["Paris", " "], "query_vectors": ` + vecJSON(t, e, "Paris", "Rome") + `}`, "queries[1] is blank"},
		{"store without vectors", "no-dense", `{"queries": ["Paris"], "query_vectors": [[1, 2]]}`, "cannot search by vector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, v := postJSON(t, servers[tc.server].URL+"/retrieve", tc.body)
			d, _ := v["detail"].(string)
			if status != http.StatusUnprocessableEntity || !strings.Contains(d, tc.says) {
				t.Fatalf("status %d %v, want 422 saying %q", status, v, tc.says)
			}
		})
	}
	// The search-r1 dialect answers with FastAPI's body, its loc naming the vector.
	status, v := postJSON(t, servers["compat"].URL+"/retrieve", `{"queries": ["a", "b"], "query_vectors": [`+vec+`, "x"]}`)
	items, _ := v["detail"].([]any)
	if status != 422 || len(items) != 1 || fmt.Sprint(items[0].(map[string]any)["loc"]) != "[body query_vectors 1]" {
		t.Fatalf("compat: %d %v", status, v)
	}
	// And with valid vectors it searches them.
	status, v = postJSON(t, servers["compat"].URL+"/retrieve", `{"query_vectors": `+vecJSON(t, e, "Rome Italy")+`, "topk": 1}`)
	if status != 200 || fmt.Sprint(resultIDs(t, v)) != "[[it]]" {
		t.Fatalf("compat search by vector: %d %v", status, v)
	}
}

// A Search-R1 batch (2,560 queries, each with its vector) answers every query as its text
// does, in order, through SearchBatch and through the worker pool alike.
func TestRetrieveQueryVectorsBatch(t *testing.T) {
	m, e := vectorStore(t)
	words := strings.Fields("Paris France Berlin Germany Rome Italy Madrid Spain capital")
	const n = 2560
	texts := make([]string, n)
	for i := range texts {
		texts[i] = words[i%len(words)] + " " + words[(i*7+3)%len(words)]
	}
	vecs, err := vectorstore.EmbedQueries(context.Background(), e, texts)
	if err != nil {
		t.Fatal(err)
	}
	opts := []memory.SearchOption{memory.WithMode(memory.Dense), memory.TopK(2)}
	want, err := SearchQueries(context.Background(), m, texts, 0, opts...)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]Searcher{"batch": m, "pool": searchOnly{m}} {
		t.Run(name, func(t *testing.T) {
			got, err := SearchQueryVectors(context.Background(), s, make([]string, n), vecs, 2, opts...)
			if err != nil {
				t.Fatal(err)
			}
			for i := range texts {
				if fmt.Sprint(ids(got[i])) != fmt.Sprint(ids(want[i])) || len(got[i]) == 0 {
					t.Fatalf("query %d %q: %v by vector, %v by text", i, texts[i], ids(got[i]), ids(want[i]))
				}
			}
		})
	}
	// Over HTTP: one request with every vector and no texts.
	srv := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{SearchOptions: opts[:1]}))
	defer srv.Close()
	body, _ := json.Marshal(map[string]any{"query_vectors": vecs, "topk": 2})
	status, v := postJSON(t, srv.URL+"/retrieve", string(body))
	if status != 200 {
		t.Fatalf("status %d %v", status, v)
	}
	got := resultIDs(t, v)
	for i := range texts {
		if fmt.Sprint(got[i]) != fmt.Sprint(ids(want[i])) {
			t.Fatalf("query %d: %v, want %v", i, got[i], ids(want[i]))
		}
	}
	if _, err := SearchQueryVectors(context.Background(), m, texts, vecs[:3], 0); !errors.Is(err, memory.ErrQueryVector) {
		t.Fatalf("3 vectors for %d queries: %v", n, err)
	}
}

func ids(rs []memory.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

// optsSearcher records the query vector each search was given.
type optsSearcher struct {
	mu   sync.Mutex
	seen map[string][]float32
}

func (o *optsSearcher) Search(_ context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	var so memory.SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen[q] = so.QueryVector
	return []memory.Result{{ID: q}}, nil
}

// A searcher without SearchBatch gets each query's vector with it; a query with neither
// text nor vector is not searched.
func TestSearchQueryVectorsPool(t *testing.T) {
	s := &optsSearcher{seen: map[string][]float32{}}
	qs := []string{"a", "b", "", " "}
	vs := [][]float32{{1}, nil, {3}, nil}
	res, err := SearchQueryVectors(context.Background(), s, qs, vs, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.seen) != 3 || !slices.Equal(s.seen["a"], []float32{1}) || s.seen["b"] != nil || !slices.Equal(s.seen[""], []float32{3}) {
		t.Fatalf("searches %v", s.seen)
	}
	if len(res[3]) != 0 || len(res[0]) != 1 {
		t.Fatalf("results %v", res)
	}
}
