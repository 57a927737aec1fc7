package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
)

// get serves a GET of target with h and returns the status and body.
func get(t *testing.T, h http.Handler, method, target string) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
	resp := rec.Result()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

// decode unmarshals body into a value of type T.
func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return v
}

func TestAPIErrors(t *testing.T) {
	h, err := New(testStore(t, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	noRR, err := New(testStore(t, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", MaxQueryBytes+1)
	for _, tc := range []struct {
		name, method, target string
		h                    http.Handler
		status               int
		param, says          string
	}{
		{"unknown collection (documents)", "GET", "/api/documents?collection=nope", h, 404, "collection", "nope"},
		{"invalid collection", "GET", "/api/documents?collection=%01bad", h, 400, "collection", "collection name"},
		{"page too large", "GET", "/api/documents?collection=notes&limit=101", h, 400, "limit", "limit 101: must be 1 to 100"},
		{"page zero", "GET", "/api/documents?collection=notes&limit=0", h, 400, "limit", "limit 0"},
		{"page not a number", "GET", "/api/documents?collection=notes&limit=ten", h, 400, "limit", "not an integer"},
		{"unknown collection (search)", "GET", "/api/search?collection=nope&q=deploy", h, 404, "collection", "nope"},
		{"k too large", "GET", "/api/search?collection=notes&q=deploy&k=101", h, 400, "k", "k 101: must be 1 to 100"},
		{"k zero", "GET", "/api/search?collection=notes&q=deploy&k=0", h, 400, "k", "k 0"},
		{"bad mode", "GET", "/api/search?collection=notes&q=deploy&mode=fuzzy", h, 400, "mode", `mode "fuzzy"`},
		{"empty query", "GET", "/api/search?collection=notes&q=+", h, 400, "q", "empty"},
		{"query too long", "GET", "/api/search?collection=notes&q=" + long, h, 400, "q", "4097 bytes"},
		{"query not UTF-8", "GET", "/api/search?collection=notes&q=%ff", h, 400, "q", "UTF-8"},
		{"bad rerank", "GET", "/api/search?collection=notes&q=deploy&rerank=yes", h, 400, "rerank", `rerank "yes"`},
		{"rerank without reranker", "GET", "/api/search?collection=notes&q=deploy&rerank=1", noRR, 400, "rerank", "no reranker"},
		{"write method", "POST", "/api/search?collection=notes&q=deploy", h, 405, "", "read-only"},
		{"unknown endpoint", "GET", "/api/nothing", h, 404, "path", "/api/nothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, tc.h, tc.method, tc.target)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			e := decode[errorBody](t, body)
			if e.Param != tc.param || !strings.Contains(e.Error, tc.says) {
				t.Errorf("error %+v, want param %q and a message with %q", e, tc.param, tc.says)
			}
			if tc.status == 405 && resp.Header.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", resp.Header.Get("Allow"))
			}
		})
	}
}

func TestAPICollectionsAndInfo(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rerank   bool
		opts     Options
		wantInfo info
	}{
		{"defaults with reranker", true, Options{}, info{Reranker: true, Embedder: true, MaxK: 100, PageSize: 20, MaxPageSize: 100}},
		{"own caps, no reranker", false, Options{MaxK: 7, PageSize: 3, MaxPageSize: 5, EvalReports: []string{testReport(t)}},
			info{Reranker: false, Embedder: true, MaxK: 7, PageSize: 3, MaxPageSize: 5, Reports: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(testStore(t, tc.rerank), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, body := get(t, h, "GET", "/api/info")
			got := decode[info](t, body)
			want := tc.wantInfo
			want.Version, want.Modes = memory.Version, []string{"hybrid", "bm25", "dense"}
			if !jsonEqual(got, want) {
				t.Errorf("info %+v, want %+v", got, want)
			}
			_, body = get(t, h, "GET", "/api/collections")
			cols := decode[struct{ Collections []collectionInfo }](t, body).Collections
			wantCols := []collectionInfo{{Name: "code", Count: 1, Analyzer: "en"}, {Name: "notes", Count: len(notesDocs), Analyzer: "en"}}
			if !jsonEqual(cols, wantCols) {
				t.Errorf("collections %+v, want %+v", cols, wantCols)
			}
		})
	}
}

// jsonEqual reports whether a and b encode to the same JSON.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func TestAPIDocumentsPages(t *testing.T) {
	h, err := New(testStore(t, false), Options{PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	after := ""
	for pages := 0; ; pages++ {
		if pages > len(notesDocs) {
			t.Fatal("the pages never end")
		}
		resp, body := get(t, h, "GET", "/api/documents?collection=notes&after="+after)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
		p := decode[documentsPage](t, body)
		if p.Count != len(notesDocs) || len(p.Documents) > 2 || len(p.Documents) == 0 {
			t.Fatalf("page after %q: count %d, %d documents", after, p.Count, len(p.Documents))
		}
		for _, d := range p.Documents {
			ids = append(ids, d.ID)
		}
		if p.Next == "" {
			break
		}
		if p.Next != p.Documents[len(p.Documents)-1].ID {
			t.Fatalf("next %q is not the page's last id", p.Next)
		}
		after = p.Next
	}
	if want := []string{"n1", "n2", "n3", "n4", "n5"}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("ids over the pages %v, want %v", ids, want)
	}
	// A document comes whole (under MaxTextBytes) with its source and metadata.
	_, body := get(t, h, "GET", "/api/documents?collection=notes&limit=2")
	p := decode[documentsPage](t, body)
	if d := p.Documents[0]; d.Text != notesDocs[0].Text || d.Source != "docs/deploy.md" || d.TextBytes != len(notesDocs[0].Text) || d.Cut {
		t.Errorf("first document %+v", d)
	}
	if md := p.Documents[1].Metadata; md["team"] != "infra" {
		t.Errorf("metadata %v", md)
	}
	// Stored markup goes out JSON-escaped: the answer holds no raw "<".
	_, body = get(t, h, "GET", "/api/documents?collection=notes&after=n4")
	if bytes.Contains(body, []byte("<")) || !bytes.Contains(body, []byte(`\u003cscript\u003e`)) {
		t.Errorf("documents answer not escaped: %s", body)
	}
}

func TestAPIDocumentTextCut(t *testing.T) {
	m := testStore(t, false)
	long := strings.Repeat("é", MaxTextBytes) // 2 bytes each: the cut falls inside none
	if err := m.Collection("long").Add(t.Context(), memory.Document{ID: "x", Text: long}); err != nil {
		t.Fatal(err)
	}
	h, err := New(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h, "GET", "/api/documents?collection=long")
	d := decode[documentsPage](t, body).Documents[0]
	if !d.Cut || d.TextBytes != len(long) || len(d.Text) != MaxTextBytes || !strings.HasPrefix(long, d.Text) {
		t.Errorf("cut text: %d bytes, cut %v, text_bytes %d", len(d.Text), d.Cut, d.TextBytes)
	}
	if got := cut("aé", 2); got != "a" {
		t.Errorf("cut inside a rune: %q", got)
	}
}

func TestAPISearchExplains(t *testing.T) {
	h, err := New(testStore(t, true), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, query string
		bm25, dense bool
		rerank      bool
		usedMode    string
		wantFirst   string
		wantK       int
		wantAtMostK bool
	}{
		{name: "hybrid", query: "mode=hybrid", bm25: true, dense: true, usedMode: "hybrid", wantFirst: "n1", wantK: 10},
		{name: "default mode is hybrid", query: "", bm25: true, dense: true, usedMode: "hybrid", wantFirst: "n1", wantK: 10},
		{name: "bm25", query: "mode=bm25", bm25: true, usedMode: "bm25", wantFirst: "n1", wantK: 10},
		{name: "dense", query: "mode=dense", dense: true, usedMode: "dense", wantFirst: "n1", wantK: 10},
		{name: "reranked", query: "mode=hybrid&rerank=1&k=2", bm25: true, dense: true, rerank: true, usedMode: "hybrid", wantFirst: "n1", wantK: 2, wantAtMostK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, h, "GET", "/api/search?collection=notes&q=deploy+release&"+tc.query)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			a := decode[searchAnswer](t, body)
			if a.UsedMode != tc.usedMode || a.K != tc.wantK || a.Rerank != tc.rerank || len(a.Results) == 0 {
				t.Fatalf("answer: mode %s, k %d, rerank %v, %d results", a.UsedMode, a.K, a.Rerank, len(a.Results))
			}
			if tc.wantAtMostK && len(a.Results) > tc.wantK {
				t.Errorf("%d results, k %d", len(a.Results), tc.wantK)
			}
			r := a.Results[0]
			x := r.Explain
			if r.ID != tc.wantFirst || r.Rank != 1 || string(x.Mode) != tc.usedMode {
				t.Errorf("first result %s (rank %d, mode %s), want %s", r.ID, r.Rank, x.Mode, tc.wantFirst)
			}
			if (x.BM25 != nil) != tc.bm25 || (x.Dense != nil) != tc.dense || (x.Rerank != nil) != tc.rerank {
				t.Errorf("stages: bm25 %v, dense %v, rerank %v; want %v, %v, %v", x.BM25 != nil, x.Dense != nil, x.Rerank != nil, tc.bm25, tc.dense, tc.rerank)
			}
			if x.BM25 != nil && (x.BM25.Rank != 1 || x.BM25.Score <= 0 || x.BM25.Norm != 1) {
				t.Errorf("bm25 stage %+v: the best BM25 hit has rank 1 and norm 1", *x.BM25)
			}
			if x.Fused <= 0 || r.Relevance <= 0 || r.Relevance > 1 {
				t.Errorf("fused %v, relevance %v", x.Fused, r.Relevance)
			}
			if x.Rerank != nil && (x.Rerank.Rank != 1 || x.Rerank.Prob <= 0.5) {
				t.Errorf("rerank stage %+v: both query words are in n1", *x.Rerank)
			}
			if a.TimingsMS["total"] < 0 {
				t.Errorf("timings %v", a.TimingsMS)
			}
			if !strings.Contains(r.Snippet, "release") {
				t.Errorf("snippet %q", r.Snippet)
			}
		})
	}
}

func TestAPIReports(t *testing.T) {
	path := testReport(t)
	h, err := New(testStore(t, false), Options{EvalReports: []string{path}})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h, "GET", "/api/reports")
	got := decode[struct{ Reports []reportEntry }](t, body).Reports
	want := NewEvalReport(testEvalInput())
	if len(got) != 1 || got[0].File != "report.json" || got[0].Error != "" || !jsonEqual(got[0].Report, want) {
		t.Fatalf("reports %s, want %+v", body, want)
	}
	// A report spoiled after New is listed with its error, not served as figures.
	if err := os.WriteFile(path, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, body := get(t, h, "GET", "/api/reports")
	got = decode[struct{ Reports []reportEntry }](t, body).Reports
	if resp.StatusCode != 200 || len(got) != 1 || got[0].Report != nil || !strings.Contains(got[0].Error, "invalid eval report") {
		t.Errorf("spoiled report: %d %s", resp.StatusCode, body)
	}
}

func TestPageFiles(t *testing.T) {
	h, err := New(testStore(t, false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, contentType, holds string
		status                     int
	}{
		{"/", "text/html", `<script src="static/app.js" defer></script>`, 200},
		{"/static/app.js", "javascript", "replaceChildren", 200},
		{"/static/style.css", "text/css", "--accent", 200},
		{"/nothing", "text/plain", "404", 404},
		{"/static/nothing.js", "text/plain", "404", 404},
	} {
		t.Run(tc.target, func(t *testing.T) {
			resp, body := get(t, h, "GET", tc.target)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("Content-Type"), tc.contentType) || !bytes.Contains(body, []byte(tc.holds)) {
				t.Errorf("%s: %d %q, want %d %q holding %q", tc.target, resp.StatusCode, resp.Header.Get("Content-Type"), tc.status, tc.contentType, tc.holds)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
				t.Errorf("CSP %q", csp)
			}
		})
	}
	// Nothing the page ships is fetched from elsewhere (the machines it runs on have no
	// network): no absolute URL in any of its files.
	for _, name := range []string{"index.html", "app.js", "style.css"} {
		data, err := staticFiles.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"http://", "https://", "//cdn", "@import", "url("} {
			if s == "http://" && bytes.Contains(data, []byte("http://www.w3.org/2000/svg")) {
				data = bytes.ReplaceAll(data, []byte("http://www.w3.org/2000/svg"), nil) // the SVG namespace, not a fetch
			}
			if bytes.Contains(data, []byte(s)) {
				t.Errorf("%s holds %q", name, s)
			}
		}
	}
	// The handler mounts under a prefix: its links are relative.
	mux := http.NewServeMux()
	mux.Handle("/ui/", http.StripPrefix("/ui", h))
	resp, body := get(t, mux, "GET", "/ui/api/collections")
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"notes"`)) {
		t.Errorf("under /ui/: %d %s", resp.StatusCode, body)
	}
}

func TestNewOptions(t *testing.T) {
	m := testStore(t, false)
	good := testReport(t)
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"format": 1, "name": "x", "metrics": {"ndcg@10": 2}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		m     *memory.Memory
		o     Options
		want  []error
		names string
	}{
		{"nil store", nil, Options{}, []error{ErrInvalidOption}, "nil"},
		{"negative MaxK", m, Options{MaxK: -1}, []error{ErrInvalidOption}, "MaxK -1"},
		{"negative PageSize", m, Options{PageSize: -2}, []error{ErrInvalidOption}, "PageSize -2"},
		{"MaxK over its bound", m, Options{MaxK: 10_001}, []error{ErrInvalidOption}, "MaxK 10001"},
		{"page over cap", m, Options{PageSize: 50, MaxPageSize: 10}, []error{ErrInvalidOption}, "PageSize 50 is over MaxPageSize 10"},
		{"empty report path", m, Options{EvalReports: []string{""}}, []error{ErrInvalidOption}, "EvalReports[0]"},
		{"report twice", m, Options{EvalReports: []string{good, good}}, []error{ErrInvalidOption}, "twice"},
		{"missing report", m, Options{EvalReports: []string{good, filepath.Join(t.TempDir(), "none.json")}}, []error{ErrInvalidOption, fs.ErrNotExist}, "EvalReports[1]"},
		{"bad report", m, Options{EvalReports: []string{bad}}, []error{ErrInvalidOption, ErrInvalidReport}, "nDCG@10 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := New(tc.m, tc.o)
			if h != nil || err == nil {
				t.Fatalf("New accepted %+v", tc.o)
			}
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v is not %v", err, w)
				}
			}
			if !strings.Contains(err.Error(), tc.names) {
				t.Errorf("error %q does not name %q", err, tc.names)
			}
		})
	}
	// The zero Options serve.
	if h, err := New(m, Options{}); err != nil || h == nil {
		t.Fatalf("zero Options: %v", err)
	}
}
