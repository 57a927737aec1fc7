package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/memory"
)

func TestAppendPyFloat(t *testing.T) {
	// want: Python's repr of the same float64 (what json.dumps writes).
	cases := []struct {
		f    float64
		want string
	}{
		{9, "9.0"}, {12.5, "12.5"}, {1e-05, "1e-05"}, {0.0001, "0.0001"}, {1e16, "1e+16"},
		{1234567890123456, "1234567890123456.0"}, {-0.5, "-0.5"},
		{0.8234567046165466, "0.8234567046165466"}, {float64(float32(0.1)), "0.10000000149011612"},
		{1.5e-07, "1.5e-07"}, {123456789012345680, "1.2345678901234568e+17"},
		{math.Copysign(0, -1), "-0.0"}, {0, "0.0"}, {100, "100.0"}, {-3.25e-5, "-3.25e-05"},
		{5e-324, "5e-324"}, {math.MaxFloat64, "1.7976931348623157e+308"},
	}
	for _, c := range cases {
		if got := string(appendPyFloat(nil, c.f)); got != c.want {
			t.Errorf("appendPyFloat(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}

func TestConvertTitleFormat(t *testing.T) {
	// want: what the original's convert_title_format (Python re.match with DOTALL)
	// returns for the same string.
	cases := []struct{ in, want string }{
		{`(Title: "Paris") Paris is the capital.`, "\"\"Paris\"\"\nParis is the capital."},
		{"(Title: \"Paris (band)\") A band.\nSecond line", "\"\"Paris (band\"\n\") A band.\nSecond line"},
		{`(Title: "X") `, "\"\"X\"\"\n "},
		{"(Title: \"X\")  \n", "\"\"X\"\"\n\n"},
		{"(Title:) text", "(Title:) text"},
		{"(Title:  ) text", "\" \"\ntext"},
		{"(Title: Plain) ", "\"Plain\"\n "},
		{"no title", "no title"},
		{"(Title: a)b", "\"a\"\nb"},
		{"(Title:\u3000x)\u3000y", "\"x\"\ny"},
		{`(Title: "") t`, "\"\"\"\"\nt"},
		{"(Title: x)", "(Title: x)"},
		{"(Title: x", "(Title: x"},
	}
	for _, c := range cases {
		if got := convertTitleFormat(c.in); got != c.want {
			t.Errorf("ConvertTitleFormat(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPassageString(t *testing.T) {
	for in, want := range map[string]string{
		"\"Paris\"\nParis is.\nMore.": "(Title: \"Paris\") Paris is.\nMore.",
		"no newline":                  "(Title: no newline) ",
		"":                            "(Title: ) ",
	} {
		if got := PassageString(in); got != want {
			t.Errorf("PassageString(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCompat(t *testing.T) {
	for in, want := range map[string]Compat{"": CompatNative, "native": CompatNative, "search-r1": CompatSearchR1, "SearchR1": CompatSearchR1} {
		if got, err := ParseCompat(in); err != nil || got != want {
			t.Errorf("ParseCompat(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseCompat("lucene"); !errors.Is(err, errUnknownCompat) {
		t.Errorf("ParseCompat(lucene) = %v, want errUnknownCompat", err)
	}
}

// compatSearcher is a corpus of three Search-R1 "contents" answered as a BM25 or a
// dense search would: raw scores, Explain.Mode set.
func compatSearcher(mode memory.Mode) *fakeSearcher {
	r := func(id, title, text string, score float64) memory.Result {
		x := res(id, title, text, score)
		x.Explain.Mode = mode
		return x
	}
	hits := []memory.Result{
		r("0", `"Weird Al" Yankovic`, "Alfred Matthew Yankovic is an American singer <known> for parodies & more.", 9),
		r("1", "Paris", "Paris is the capital of France.\nIt has 2 million people.", 7.25),
		r("2", "Neural network", "A neural network is a model.", 1e-05),
	}
	return &fakeSearcher{byQuery: map[string][]memory.Result{
		"What is the capital of France?": hits,
		"Explain neural networks.":       {hits[2], hits[0]},
	}}
}

// pyPost sends body as python-requests does (json= serialises with ", " and ": ").
func pyPost(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, data := postPythonTo(t, url, body)
	return resp.StatusCode, data
}

// pyJSON is json.dumps(v) with Python's default separators, as requests sends json=v.
func pyJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	// Re-space Go's compact JSON as Python's ", " / ": " (outside strings).
	in := false
	for i := 0; i < len(data); i++ {
		c := data[i]
		b.WriteByte(c)
		switch {
		case in && c == '\\':
			i++
			b.WriteByte(data[i])
		case c == '"':
			in = !in
		case !in && (c == ',' || c == ':'):
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// replayQueries are the queries of retrieval_request.py and retrieval_rerank_request.py.
func replayQueries(n int) []string {
	qs := make([]string, 0, 2*n)
	for range n {
		qs = append(qs, "What is the capital of France?", "Explain neural networks.")
	}
	return qs
}

// The original retrieval server's answers, as FastAPI writes them (separators "," and
// ":", no ASCII or HTML escaping, floats as Python's repr).
const (
	bm25WeirdAl = `{"title":"Weird Al\" Yankovic","text":"Alfred Matthew Yankovic is an American singer <known> for parodies & more.","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."}`
	bm25Paris   = `{"title":"Paris","text":"Paris is the capital of France.\nIt has 2 million people.","contents":"\"Paris\"\nParis is the capital of France.\nIt has 2 million people."}`
	bm25Neural  = `{"title":"Neural network","text":"A neural network is a model.","contents":"\"Neural network\"\nA neural network is a model."}`
	denseParis  = `{"id":"1","contents":"\"Paris\"\nParis is the capital of France.\nIt has 2 million people."}`
	denseNeural = `{"id":"2","contents":"\"Neural network\"\nA neural network is a model."}`
)

// TestCompatRetrieveReplay replays retrieval_request.py's request (400 queries, topk 5,
// return_scores) and generation.py's (topk 3) against a --compat search-r1 server and
// compares the answers byte for byte with what the original server writes for the same
// hits.
func TestCompatRetrieveReplay(t *testing.T) {
	cases := []struct {
		name    string
		mode    memory.Mode
		payload map[string]any
		first   string // the expected answer of the first query
		second  string
		topK    int // the topk the searcher must be asked for
	}{
		{"retrieval_request.py bm25", memory.BM25, map[string]any{"queries": replayQueries(200), "topk": 5, "return_scores": true},
			`[{"document":` + bm25WeirdAl + `,"score":9.0},{"document":` + bm25Paris + `,"score":7.25},{"document":` + bm25Neural + `,"score":1e-05}]`,
			`[{"document":` + bm25Neural + `,"score":1e-05},{"document":` + bm25WeirdAl + `,"score":9.0}]`, 5},
		{"generation.py dense", memory.Dense, map[string]any{"queries": replayQueries(1), "topk": 2, "return_scores": true},
			`[{"document":{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."},"score":9.0},{"document":` + denseParis + `,"score":7.25}]`,
			`[{"document":` + denseNeural + `,"score":1e-05},{"document":{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."},"score":9.0}]`, 2},
		{"no scores, topk 0 is the default", memory.BM25, map[string]any{"queries": replayQueries(1), "topk": 0},
			`[` + bm25WeirdAl + `,` + bm25Paris + `]`, `[` + bm25Neural + `,` + bm25WeirdAl + `]`, 2},
		{"topk missing", memory.Dense, map[string]any{"queries": replayQueries(1), "return_scores": false},
			`[{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."},` + denseParis + `]`,
			`[` + denseNeural + `,{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."}]`, 2},
		{"topk null", memory.Dense, map[string]any{"queries": replayQueries(1), "topk": nil, "return_scores": true},
			`[{"document":{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."},"score":9.0},{"document":` + denseParis + `,"score":7.25}]`,
			`[{"document":` + denseNeural + `,"score":1e-05},{"document":{"id":"0","contents":"\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."},"score":9.0}]`, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compatSearcher(c.mode)
			srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Compat: CompatSearchR1, DefaultTopK: 2}))
			defer srv.Close()
			status, data := pyPost(t, srv.URL+"/retrieve", pyJSON(t, c.payload))
			if status != 200 {
				t.Fatalf("status %d: %s", status, data)
			}
			n := len(c.payload["queries"].([]string))
			var want strings.Builder
			want.WriteString(`{"result":[`)
			for i := range n {
				if i > 0 {
					want.WriteByte(',')
				}
				if i%2 == 0 {
					want.WriteString(c.first)
				} else {
					want.WriteString(c.second)
				}
			}
			want.WriteString(`]}`)
			if string(data) != want.String() {
				t.Fatalf("answer:\n%.600s\nwant\n%.600s", data, want.String())
			}
			for _, k := range s.topKs {
				if k != c.topK {
					t.Fatalf("searched with topk %d, want %d", k, c.topK)
				}
			}
		})
	}
}

// logitReranker scores a passage by a fixed table (else -1) and records what it scored.
type logitReranker struct {
	mu     sync.Mutex
	logits map[string]float32
	seen   []string
}

func (l *logitReranker) Score(_ context.Context, _ string, ps []string) ([]float32, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]float32, len(ps))
	for i, p := range ps {
		l.seen = append(l.seen, p)
		out[i] = -1
		if v, ok := l.logits[p]; ok {
			out[i] = v
		}
	}
	return out, nil
}

// compatLogits favour Paris, then Weird Al, in the strings the original reranker scores.
func compatLogits() *logitReranker {
	return &logitReranker{logits: map[string]float32{
		"(Title: \"Paris\") Paris is the capital of France.\nIt has 2 million people.":                                  8.5,
		"(Title: \"\"Weird Al\" Yankovic\") Alfred Matthew Yankovic is an American singer <known> for parodies & more.": -0.5,
	}}
}

// TestCompatRerankReplay replays retrieval_rerank_request.py: its /retrieve request
// (topk 10, return_scores), then /rerank with the "result" it got as documents,
// rerank_topk 3 and return_scores; the answer is rerank_server's, byte for byte.
func TestCompatRerankReplay(t *testing.T) {
	retr := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.Dense), RetrieveOptions{Compat: CompatSearchR1}))
	defer retr.Close()
	queries := replayQueries(10)
	status, data := pyPost(t, retr.URL+"/retrieve", pyJSON(t, map[string]any{"queries": queries, "topk": 10, "return_scores": true}))
	if status != 200 {
		t.Fatalf("/retrieve: %d %s", status, data)
	}
	var retrieved struct {
		Result []any `json:"result"`
	}
	if err := json.Unmarshal(data, &retrieved); err != nil {
		t.Fatal(err)
	}
	rr := compatLogits()
	rer := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{Compat: CompatSearchR1, Reranker: rr}))
	defer rer.Close()
	cases := []struct {
		name  string
		extra map[string]any
		first string
		secnd string
	}{
		{"rerank_topk 3 with scores", map[string]any{"rerank_topk": 3, "return_scores": true},
			`[{"document":"(Title: \"Paris\") Paris is the capital of France.\nIt has 2 million people.","score":8.5},` +
				`{"document":"(Title: \"\"Weird Al\" Yankovic\") Alfred Matthew Yankovic is an American singer <known> for parodies & more.","score":-0.5},` +
				`{"document":"(Title: \"Neural network\") A neural network is a model.","score":-1.0}]`,
			`[{"document":"(Title: \"\"Weird Al\" Yankovic\") Alfred Matthew Yankovic is an American singer <known> for parodies & more.","score":-0.5},` +
				`{"document":"(Title: \"Neural network\") A neural network is a model.","score":-1.0}]`},
		{"rerank_topk 0 is the default, no scores", map[string]any{"rerank_topk": 0},
			`["(Title: \"Paris\") Paris is the capital of France.\nIt has 2 million people.","(Title: \"\"Weird Al\" Yankovic\") Alfred Matthew Yankovic is an American singer <known> for parodies & more.","(Title: \"Neural network\") A neural network is a model."]`,
			`["(Title: \"\"Weird Al\" Yankovic\") Alfred Matthew Yankovic is an American singer <known> for parodies & more.","(Title: \"Neural network\") A neural network is a model."]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			payload := map[string]any{"queries": queries, "documents": retrieved.Result}
			for k, v := range c.extra {
				payload[k] = v
			}
			status, data := pyPost(t, rer.URL+"/rerank", pyJSON(t, payload))
			if status != 200 {
				t.Fatalf("/rerank: %d %s", status, data)
			}
			want := `{"result":[` + strings.TrimSuffix(strings.Repeat(c.first+","+c.secnd+",", len(queries)/2), ",") + `]}`
			if string(data) != want {
				t.Fatalf("answer:\n%.700s\nwant\n%.700s", data, want)
			}
		})
	}
}

// TestCompatCombinedRequest sends retrieval_rerank_server's request (topk_retrieval,
// topk_rerank) and checks its defaults and its document strings.
func TestCompatCombinedRequest(t *testing.T) {
	paris := `"\"\"Paris\"\"\nParis is the capital of France.\nIt has 2 million people."`
	weird := `"\"\"\"Weird Al\" Yankovic\"\"\nAlfred Matthew Yankovic is an American singer <known> for parodies & more."`
	neural := `"\"\"Neural network\"\"\nA neural network is a model."`
	cases := []struct {
		name  string
		body  map[string]any
		depth int
		want  string
	}{
		{"sizes given", map[string]any{"queries": replayQueries(1)[:1], "topk_retrieval": 10, "topk_rerank": 2, "return_scores": true}, 10,
			`{"result":[[{"document":` + paris + `,"score":8.5},{"document":` + weird + `,"score":-0.5}]]}`},
		{"defaults: 10 retrieved, 3 kept", map[string]any{"queries": replayQueries(1)[:1]}, 10,
			`{"result":[["\"\"Paris\"\"\nParis is the capital of France.\nIt has 2 million people.",` + weird + `,` + neural + `]]}`},
		{"topk is ignored, topk_rerank null keeps all", map[string]any{"queries": replayQueries(1)[:1], "topk": 1, "topk_retrieval": 2, "topk_rerank": nil}, 2,
			`{"result":[[` + paris + `,` + weird + `]]}`},
		{"topk_rerank 0 keeps none", map[string]any{"queries": replayQueries(1), "topk_rerank": 0}, 10, `{"result":[[],[]]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := compatSearcher(memory.Dense)
			srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Compat: CompatSearchR1, Reranker: compatLogits()}))
			defer srv.Close()
			status, data := pyPost(t, srv.URL+"/retrieve", pyJSON(t, c.body))
			if status != 200 || string(data) != c.want {
				t.Fatalf("status %d, answer\n%s\nwant\n%s", status, data, c.want)
			}
			for _, k := range s.topKs {
				if k != c.depth {
					t.Fatalf("retrieved %d per query, want %d", k, c.depth)
				}
			}
		})
	}
}

// TestCompatRequestErrors: bad sizes get 422, and the combined request's fields without
// a reranker are refused rather than ignored.
func TestCompatRequestErrors(t *testing.T) {
	plain := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{Compat: CompatSearchR1, Logger: discardLogger()}))
	defer plain.Close()
	both := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{Compat: CompatSearchR1, Reranker: compatLogits(), Logger: discardLogger()}))
	defer both.Close()
	native := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{Logger: discardLogger()}))
	defer native.Close()
	cases := []struct {
		name, url, path, body string
		status                int
	}{
		{"negative topk", plain.URL, "/retrieve", `{"queries": ["a"], "topk": -1}`, 422},
		{"topk_rerank without a reranker", plain.URL, "/retrieve", `{"queries": ["a"], "topk_rerank": 3}`, 422},
		{"topk_retrieval without a reranker", plain.URL, "/retrieve", `{"queries": ["a"], "topk_retrieval": 3}`, 422},
		{"negative topk_rerank", both.URL, "/retrieve", `{"queries": ["a"], "topk_rerank": -1}`, 422},
		{"topk_retrieval too large", both.URL, "/retrieve", `{"queries": ["a"], "topk_retrieval": 100000}`, 422},
		{"topk_retrieval a string", both.URL, "/retrieve", `{"queries": ["a"], "topk_retrieval": "3"}`, 422},
		{"query_vectors to the retrieve-and-rerank server", both.URL, "/retrieve", `{"queries": ["a"], "query_vectors": [[0.1, 0.2]]}`, 422},
		{"query_embedder to the retrieve-and-rerank server", both.URL, "/retrieve", `{"queries": ["a"], "query_embedder": "e5"}`, 422},
		{"query_vectors null is no vector", both.URL, "/retrieve", `{"queries": ["a"], "query_vectors": null}`, 200},
		{"rerank_topk 0 is the default", both.URL, "/rerank", `{"queries": ["a"], "documents": [[{"contents": "x"}]], "rerank_topk": 0}`, 200},
		{"native: topk 0 is refused", native.URL, "/retrieve", `{"queries": ["a"], "topk": 0}`, 422},
		{"native: rerank_topk 0 is refused", native.URL, "/rerank", `{"queries": ["a"], "documents": [["x"]], "rerank_topk": 0}`, 501},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, data := pyPost(t, c.url+c.path, c.body)
			if status != c.status {
				t.Fatalf("status %d (%s), want %d", status, data, c.status)
			}
		})
	}
}

// TestCompatRerankScoresTheOriginalString: the cross-encoder sees "(Title: t) text", as
// the original's, and the native dialect keeps its own "t\ntext".
func TestCompatRerankScoresTheOriginalString(t *testing.T) {
	for _, c := range []struct {
		compat Compat
		want   string
	}{{CompatSearchR1, "(Title: \"Paris\") Paris is the capital of France.\nIt has 2 million people."},
		{CompatNative, "Paris\nParis is the capital of France.\nIt has 2 million people."}} {
		rr := compatLogits()
		srv := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{Compat: c.compat, Reranker: rr}))
		body := `{"queries": ["q"], "documents": [[{"id": "1", "contents": "\"Paris\"\nParis is the capital of France.\nIt has 2 million people."}]], "rerank_topk": 1}`
		status, data := pyPost(t, srv.URL+"/rerank", body)
		srv.Close()
		if status != 200 || len(rr.seen) != 1 || rr.seen[0] != c.want {
			t.Errorf("compat %q: status %d %s, scored %q, want %q", c.compat, status, data, rr.seen, c.want)
		}
	}
}

func TestConvertTitleFormatOfPassage(t *testing.T) {
	got := convertTitleFormat(PassageString("\"Paris\"\nParis is the capital of France."))
	if want := "\"\"Paris\"\"\nParis is the capital of France."; got != want {
		t.Fatalf("convertTitleFormat = %q, want %q", got, want)
	}
}

// pySpace is Python's \s (str.isspace) as a character class.
const pySpace = `[\t\n\v\f\r \x1c-\x1f\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]`

// titleFormatRE is the original's pattern, with Python's whitespace; RE2 picks the same
// submatches as Python's backtracking matcher for it (leftmost, greedy).
var titleFormatRE = regexp.MustCompile(`(?s)^\(Title:` + pySpace + `*([^)]+)\)` + pySpace + `*(.+)`)

// FuzzConvertTitleFormat checks ConvertTitleFormat against the original's regular
// expression.
func FuzzConvertTitleFormat(f *testing.F) {
	for _, s := range []string{`(Title: "Paris") text`, "(Title:  ) t", "(Title: x)", "(Title:\u3000a)\u2028b", "(Title: a)) b", "(Title: (x)) y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return
		}
		want := s
		if m := titleFormatRE.FindStringSubmatch(s); m != nil {
			want = `"` + m[1] + `"` + "\n" + m[2]
		}
		if got := convertTitleFormat(s); got != want {
			t.Fatalf("ConvertTitleFormat(%q) = %q, want %q", s, got, want)
		}
	})
}

// FuzzCompatRequest feeds arbitrary bodies to a --compat search-r1 server with and
// without a reranker: the answer is always JSON with a status of the protocol, and a 200
// answer has a "result" list with one list per query.
func FuzzCompatRequest(f *testing.F) {
	for _, s := range []string{
		`{"queries": ["What is the capital of France?"], "topk": 0, "return_scores": true}`,
		`{"queries": ["Explain neural networks.", ""], "topk_retrieval": 3, "topk_rerank": null, "return_scores": true}`,
		`{"queries": ["a"], "documents": [[{"document": {"id": "1", "contents": "\"T\"\nz"}, "score": 1.0}]], "rerank_topk": 0}`,
		`{"queries": ["a"], "topk_rerank": -1}`, `{"queries": ["a"], "topk_retrieval": 1e3}`, `null`,
	} {
		f.Add(s)
	}
	plain := NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{Compat: CompatSearchR1, MaxQueries: 50, MaxBodyBytes: 4096, Logger: discardLogger()})
	both := NewRetrieveHandler(compatSearcher(memory.Dense), RetrieveOptions{Compat: CompatSearchR1, Reranker: constReranker{}, MaxQueries: 50,
		MaxBodyBytes: 4096, MaxRerankBodyBytes: 4096, Logger: discardLogger()})
	allowed := map[int]bool{200: true, 400: true, 413: true, 422: true, 501: true}
	f.Fuzz(func(t *testing.T, body string) {
		for _, h := range []http.Handler{plain, both} {
			for _, path := range []string{"/retrieve", "/rerank"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
				if !allowed[rec.Code] {
					t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
				}
				var v map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
					t.Fatalf("%s %q: answer is not JSON: %v: %s", path, body, err, rec.Body)
				}
				if rec.Code != 200 {
					continue
				}
				var req struct{ Queries []string }
				_ = json.Unmarshal([]byte(body), &req)
				if l, ok := v["result"].([]any); !ok || len(l) != len(req.Queries) {
					t.Fatalf("%s %q: 200 without one list per query: %s", path, body, rec.Body)
				}
			}
		}
	})
}
