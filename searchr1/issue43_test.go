package searchr1

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

// issue43Rows are the corpus rows whose contents came back changed (issue #43), and a
// plain one.
var issue43Rows = map[string]string{
	"noquotes": "No quotes title\nkiwi text here",
	"oneline":  "single line kiwi only",
	"empty":    "\"\"\nkiwi empty title",
	"crlf":     "\"T3\"\r\nkiwi crlf",
	"plain":    "\"Kiwi\"\nThe kiwi is a bird.",
}

// corpusStore is an in-memory store holding rows as CorpusDocument stores them.
func corpusStore(t *testing.T, rows map[string]string, opts ...memory.Option) *memory.Memory {
	t.Helper()
	m, err := memory.Open("", opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	var docs []memory.Document
	for id, c := range rows {
		docs = append(docs, CorpusDocument(id, c))
	}
	if err := m.Add(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompatContentsVerbatim: a corpus row stored as CorpusDocument comes back from
// /retrieve byte for byte, with the original BM25 retriever's title and text, in both the
// BM25 ({title, text, contents}) and the dense ({id, contents}) layout; each of the four
// rows of issue #43 included.
func TestCompatContentsVerbatim(t *testing.T) {
	m := corpusStore(t, issue43Rows, memory.WithEmbedder(vectorstore.NewHashEmbedder(32)))
	for _, mode := range []memory.Mode{memory.BM25, memory.Dense} {
		srv := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{Compat: CompatSearchR1,
			SearchOptions: []memory.SearchOption{memory.WithMode(mode)}, Logger: discardLogger()}))
		status, data := pyPost(t, srv.URL+"/retrieve", `{"queries": ["kiwi"], "topk": 5, "return_scores": true}`)
		srv.Close()
		var r struct {
			Result [][]struct {
				Document struct {
					ID       *string `json:"id"`
					Title    *string `json:"title"`
					Text     *string `json:"text"`
					Contents string  `json:"contents"`
				} `json:"document"`
			} `json:"result"`
		}
		if err := json.Unmarshal(data, &r); err != nil || status != 200 || len(r.Result) != 1 || len(r.Result[0]) != len(issue43Rows) {
			t.Fatalf("%s: %d %s (%v)", mode, status, data, err)
		}
		seen := map[string]bool{}
		for _, hit := range r.Result[0] {
			d := hit.Document
			id := ""
			for k, c := range issue43Rows {
				if c == d.Contents {
					id = k
				}
			}
			if id == "" {
				t.Fatalf("%s: contents %q are no corpus row's", mode, d.Contents)
			}
			seen[id] = true
			if mode != memory.BM25 {
				if d.ID == nil || *d.ID != id || d.Title != nil {
					t.Errorf("dense hit %+v, want {id, contents}", d)
				}
				continue
			}
			// The original: content.split("\n")[0].strip('"'), "\n".join(content.split("\n")[1:]).
			first, rest, _ := strings.Cut(d.Contents, "\n")
			if d.Title == nil || *d.Title != strings.Trim(first, `"`) || d.Text == nil || *d.Text != rest {
				t.Errorf("BM25 hit %q: title %v text %v", d.Contents, d.Title, d.Text)
			}
		}
		if len(seen) != len(issue43Rows) {
			t.Errorf("%s: rows %v", mode, seen)
		}
	}
	// And the loop's passages are the original's _passages2string of the same contents.
	for id, c := range issue43Rows {
		d, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if got := Contents(memory.Result{Title: d.Title, Text: d.Text}); got != c {
			t.Errorf("%s: Contents %q, want %q", id, got, c)
		}
	}
}

// longPassage is a prose passage of 1,368 characters, which the default chunking splits.
func longPassage() string {
	var b strings.Builder
	b.WriteString("\"Kiwi (bird)\"\n")
	for i := 0; b.Len() < 1368; i++ {
		b.WriteString("Kiwi are flightless birds endemic to New Zealand and lay large eggs. ")
	}
	return b.String()[:1368]
}

// TestCompatWholeRows: a hit that is a chunk of a longer document comes back from a
// search-r1 /retrieve as the whole row (the original returns whole corpus rows); the
// native dialect keeps the chunk.
func TestCompatWholeRows(t *testing.T) {
	long := longPassage()
	m, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(context.Background(), CorpusDocument("long", long), CorpusDocument("short", "\"Eggs\"\nKiwi eggs.")); err != nil {
		t.Fatal(err)
	}
	res, err := m.Search(context.Background(), "kiwi flightless", memory.WithMode(memory.BM25), memory.TopK(1))
	if err != nil || len(res) != 1 || res[0].Chunks < 2 {
		t.Fatalf("the long passage is not chunked: %+v %v", res, err)
	}
	for _, c := range []struct {
		compat Compat
		whole  bool
	}{{CompatSearchR1, true}, {CompatNative, false}} {
		for _, s := range []Searcher{m, m.Collection("")} {
			srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Compat: c.compat, Logger: discardLogger(),
				SearchOptions: []memory.SearchOption{memory.WithMode(memory.BM25)}}))
			_, data := pyPost(t, srv.URL+"/retrieve", `{"queries": ["kiwi flightless"], "topk": 1, "return_scores": false}`)
			srv.Close()
			var r struct {
				Result [][]struct{ Contents string } `json:"result"`
			}
			if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 1 || len(r.Result[0]) != 1 {
				t.Fatalf("%s: %s", c.compat, data)
			}
			if got := r.Result[0][0].Contents == long; got != c.whole {
				t.Errorf("compat %q over %T: whole row %v (%d of %d bytes)", c.compat, s, got, len(r.Result[0][0].Contents), len(long))
			}
		}
	}
}

// TestCompatValidationErrors: in the search-r1 dialect every bad request gets FastAPI's
// 422 body, {"detail": [{"type", "loc", "msg"}]}, malformed JSON included; the native
// dialect keeps {"detail": "..."} and 400 for malformed JSON.
func TestCompatValidationErrors(t *testing.T) {
	compat := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{Compat: CompatSearchR1, MaxQueries: 2, Logger: discardLogger()}))
	defer compat.Close()
	native := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), RetrieveOptions{MaxQueries: 2, Logger: discardLogger()}))
	defer native.Close()
	type item struct {
		Type string `json:"type"`
		Loc  []any  `json:"loc"`
		Msg  string `json:"msg"`
	}
	cases := []struct {
		name, path, body string
		want             item
		nativeStatus     int
	}{
		{"missing queries", "/retrieve", `{"topk": 3}`, item{"missing", []any{"body", "queries"}, "Field required"}, 422},
		{"queries not a list", "/retrieve", `{"queries": "a"}`, item{"list_type", []any{"body", "queries"}, "Input should be a valid list"}, 422},
		{"query not a string", "/retrieve", `{"queries": ["a", 7]}`, item{"string_type", []any{"body", "queries", 1.0}, "Input should be a valid string"}, 422},
		{"topk a string", "/retrieve", `{"queries": ["a"], "topk": "x"}`, item{"int_type", []any{"body", "topk"}, "Input should be a valid integer"}, 422},
		{"topk a fraction", "/retrieve", `{"queries": ["a"], "topk": 1.5}`, item{"int_from_float", []any{"body", "topk"}, "Input should be a valid integer, got a number with a fractional part"}, 422},
		{"return_scores a string", "/retrieve", `{"queries": ["a"], "return_scores": "yes"}`, item{"bool_type", []any{"body", "return_scores"}, "Input should be a valid boolean"}, 422},
		{"malformed", "/retrieve", `{"queries": [`, item{"json_invalid", []any{"body", 13.0}, "JSON decode error"}, 400},
		{"data after the object", "/retrieve", `{"queries": []} x`, item{"json_invalid", []any{"body", 16.0}, "JSON decode error"}, 400},
		{"not an object", "/retrieve", `["a"]`, item{"model_attributes_type", []any{"body"}, "Input should be a valid dictionary or object to extract fields from"}, 422},
		{"too many queries", "/retrieve", `{"queries": ["a", "b", "c"]}`, item{"value_error", []any{"body", "queries"},
			`Value error, searchr1: too many queries: field "queries" has 3 items, at most 2 allowed (the server's max-queries limit)`}, 422},
		{"negative topk", "/retrieve", `{"queries": ["a"], "topk": -1}`, item{"value_error", []any{"body", "topk"}, `Value error, field "topk" is -1, must be in [1, 10000]`}, 422},
		{"topk_retrieval without a reranker", "/retrieve", `{"queries": ["a"], "topk_retrieval": 3}`, item{"value_error", []any{"body", "topk_retrieval"},
			`Value error, searchr1: no reranker configured: field "topk_retrieval" is the retrieve-and-rerank server's; start the server with a reranker (serve --reranker)`}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, data := pyPost(t, compat.URL+c.path, c.body)
			var got struct{ Detail []item }
			if err := json.Unmarshal(data, &got); err != nil || status != 422 || len(got.Detail) != 1 || !reflect.DeepEqual(got.Detail[0], c.want) {
				t.Fatalf("compat: %d %s (%v), want 422 %+v", status, data, err, c.want)
			}
			if !strings.HasPrefix(string(data), `{"detail":[{"type":`) {
				t.Errorf("keys not in pydantic's order: %s", data)
			}
			if c.nativeStatus == 0 {
				return // a field the native dialect does not read
			}
			status, data = pyPost(t, native.URL+c.path, c.body)
			var nat struct{ Detail string }
			if err := json.Unmarshal(data, &nat); err != nil || status != c.nativeStatus || nat.Detail == "" {
				t.Fatalf("native: %d %s (%v), want %d {detail: string}", status, data, err, c.nativeStatus)
			}
		})
	}
}

// TestRequestErrorTyped: every refused request body is a *RequestError that matches its
// kind under errors.Is.
func TestRequestErrorTyped(t *testing.T) {
	h := NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{MaxQueries: 1, MaxQueryBytes: 4, Logger: discardLogger()}).(*retrieveHandler)
	for body, kind := range map[string]error{
		`{"queries": [`:                 ErrInvalidRequest,
		`{"queries": [1]}`:              ErrInvalidRequest,
		`{"queries": ["a"], "topk": 0}`: ErrInvalidRequest,
		`{"queries": ["a", "b"]}`:       ErrTooManyQueries,
		`{"queries": ["abcdef"]}`:       ErrQueryTooLong,
	} {
		rec := httptest.NewRecorder()
		_, _, err := h.decode(rec, httptest.NewRequest(http.MethodPost, "/retrieve", strings.NewReader(body)))
		var re *RequestError
		if !errors.As(err, &re) || !errors.Is(err, kind) || len(re.Loc) == 0 || re.Loc[0] != "body" || re.Type == "" {
			t.Errorf("%s: %#v, want a *RequestError of kind %v", body, err, kind)
		}
	}
}

// TestCompatTopKCap: the search-r1 dialect takes a topk over 100 (the original takes any),
// up to MaxTopK; the native dialect keeps its cap of 100.
func TestCompatTopKCap(t *testing.T) {
	for _, c := range []struct {
		o      RetrieveOptions
		topk   int
		status int
	}{
		{RetrieveOptions{Compat: CompatSearchR1}, 150, 200},
		{RetrieveOptions{Compat: CompatSearchR1}, DefaultCompatMaxTopK, 200},
		{RetrieveOptions{Compat: CompatSearchR1}, DefaultCompatMaxTopK + 1, 422},
		{RetrieveOptions{Compat: CompatSearchR1, MaxTopK: 5}, 6, 422},
		{RetrieveOptions{}, 150, 422},
		{RetrieveOptions{MaxTopK: 200}, 150, 200},
	} {
		c.o.Logger = discardLogger()
		srv := httptest.NewServer(NewRetrieveHandler(compatSearcher(memory.BM25), c.o))
		body, _ := json.Marshal(map[string]any{"queries": []string{"What is the capital of France?"}, "topk": c.topk})
		status, data := pyPost(t, srv.URL+"/retrieve", string(body))
		srv.Close()
		if status != c.status {
			t.Errorf("compat %q MaxTopK %d topk %d: %d %s, want %d", c.o.Compat, c.o.MaxTopK, c.topk, status, data, c.status)
		}
	}
}

// TestPrepareQuestion: questions enter the prompt as the original's data preparation
// leaves them: stripped (Python's whitespace), "?" appended when missing.
func TestPrepareQuestion(t *testing.T) {
	for in, want := range map[string]string{
		"who wrote Hamlet":       "who wrote Hamlet?",
		"  who wrote Hamlet?\n":  "who wrote Hamlet?",
		"\x1cwho\x1f":            "who?",
		"what is 2+2 ?":          "what is 2+2 ?",
		"¿Quién escribió Hamlet": "¿Quién escribió Hamlet?",
		"   ":                    "",
	} {
		if got := PrepareQuestion(in); got != want {
			t.Errorf("PrepareQuestion(%q) = %q, want %q", in, got, want)
		}
	}
	if p := (Loop{}).Prompt(" who wrote Hamlet "); !strings.HasSuffix(p, ". Question: who wrote Hamlet?\n") {
		t.Errorf("prompt tail %q", p[len(p)-40:])
	}
	if p := (Loop{KeepQuestion: true}).Prompt(" who "); !strings.HasSuffix(p, "Question:  who \n") {
		t.Errorf("KeepQuestion prompt tail %q", p[len(p)-20:])
	}
	gen := &Scripted{Outputs: []string{"<answer>x</answer>"}}
	if _, err := (Loop{}).Run(context.Background(), gen, &fakeSearcher{}, " \x1c "); !errors.Is(err, ErrEmptyQuestion) {
		t.Errorf("blank question: %v, want ErrEmptyQuestion", err)
	}
	// A Runner fails a blank question's episodes only.
	var failed, answered int
	rn := &Runner{Generator: GeneratorFunc(func(context.Context, string, []string) (string, error) { return "<answer>x</answer>", nil }),
		Searcher: &fakeSearcher{}, OnEpisode: func(tr *Trajectory) {
			if tr.Error != "" {
				failed++
				if !strings.Contains(tr.Error, ErrEmptyQuestion.Error()) {
					t.Errorf("trajectory error %q", tr.Error)
				}
			}
			if tr.Answered {
				answered++
			}
		}}
	if _, err := rn.Run(context.Background(), []Question{{ID: "1", Question: " "}, {ID: "2", Question: "q"}}); err != nil {
		t.Fatal(err)
	}
	if failed != 1 || answered != 1 {
		t.Errorf("failed %d answered %d, want 1 and 1", failed, answered)
	}
}

// TestObservationBytes: the injected block is the original's
// f'\n\n<information>{passages.strip()}</information>\n\n', and action contents are
// stripped as Python strips them.
func TestObservationBytes(t *testing.T) {
	s := &fakeSearcher{byQuery: map[string][]memory.Result{"q": {
		res("1", "A", "first passage", 2),
		res("2", "B", "second passage  \u3000\n", 1),
	}}}
	gen := &Scripted{Outputs: []string{"<search>\x1cq\x1f</search>", "<answer>\x1dx\x1e</answer>"}}
	ep, err := Loop{Tags: OriginalTags()}.Run(context.Background(), gen, s, "q")
	if err != nil {
		t.Fatal(err)
	}
	want := "\n\n<information>Doc 1(Title: \"A\") first passage\nDoc 2(Title: \"B\") second passage</information>\n\n"
	if got := ep.Trace.Turns[0].Observation; got != want {
		t.Errorf("observation\n%q\nwant\n%q", got, want)
	}
	if q := s.calls(); len(q) != 1 || q[0] != "q" {
		t.Errorf("queries %q: want the stripped %q", q, "q")
	}
	if ep.Answer != "x" {
		t.Errorf("answer %q, want x", ep.Answer)
	}
}

// TestStoreOptionsLuceneScores: a store opened with StoreOptions(CompatSearchR1) scores
// BM25 as Lucene does: without the (k1 + 1) factor, so for documents whose lengths
// Lucene's norms keep exactly, each score is the textbook one over k1 + 1 = 1.9.
func TestStoreOptionsLuceneScores(t *testing.T) {
	dir := t.TempDir()
	m, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), CorpusDocument("fr", "\"France\"\nParis is the capital of France."),
		CorpusDocument("de", "\"Germany\"\nBerlin is the capital of Germany."),
		CorpusDocument("it", "\"Italy\"\nRome is the capital of Italy and of the Lazio region.")); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	scores := func(opts ...memory.Option) map[string]float64 {
		m, err := memory.OpenExisting(dir, append(opts, memory.ReadOnly())...)
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		res, err := m.Search(context.Background(), "capital of France", memory.WithMode(memory.BM25), memory.TopK(3))
		if err != nil || len(res) != 3 {
			t.Fatalf("%v %v", res, err)
		}
		out := map[string]float64{}
		for _, r := range res {
			out[r.ID] = r.Score
		}
		return out
	}
	classic := scores(memory.WithBM25Scoring(memory.ScoringClassic))
	lucene := scores(StoreOptions(CompatSearchR1)...)
	for id, c := range classic {
		if want := c / 1.9; math.Abs(lucene[id]-want) > 1e-5*want {
			t.Errorf("%s: Lucene score %v, want classic %v / 1.9 = %v", id, lucene[id], c, want)
		}
	}
	if StoreOptions(CompatNative) != nil {
		t.Error("StoreOptions(native) is not empty")
	}
	if w := AnalyzerWarning(CompatSearchR1, "en", ""); !strings.Contains(w, "pyserini") || !strings.Contains(w, "--set-analyzer default en_lucene") {
		t.Errorf("warning %q", w)
	}
	if AnalyzerWarning(CompatSearchR1, CompatAnalyzer, "") != "" || AnalyzerWarning(CompatNative, "en", "") != "" {
		t.Error("a warning where none is due")
	}
}
