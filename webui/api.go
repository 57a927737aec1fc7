package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory"
)

// apiError is an answer other than 200: its HTTP status, the request parameter at fault
// ("" when none) and the message.
type apiError struct {
	status int
	param  string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

// badRequest is a 400 answer about param.
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, args...)}
}

// notFound is a 404 answer about param.
func notFound(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusNotFound, param: param, msg: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON body of an answer other than 200.
type errorBody struct {
	Error string `json:"error"`
	Param string `json:"param,omitempty"`
}

// api serves fn's answer as JSON: a GET (or HEAD) only; an *apiError as its status, any
// other error through storeError.
func (s *server) api(fn func(r *http.Request) (any, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var (
			v   any
			err error
		)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			err = &apiError{status: http.StatusMethodNotAllowed, msg: fmt.Sprintf("method %s: the API is read-only (GET)", r.Method)}
		} else {
			v, err = fn(r)
		}
		status := http.StatusOK
		if err != nil {
			ae := s.storeError(r, err)
			status, v = ae.status, errorBody{Error: ae.msg, Param: ae.param}
		}
		body, merr := json.Marshal(v)
		if merr != nil {
			s.o.Logger.Error("webui: encoding an answer", "path", r.URL.Path, "err", merr)
			status = http.StatusInternalServerError
			body, _ = json.Marshal(errorBody{Error: "encoding the answer: " + merr.Error()})
		}
		h := w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(append(body, '\n'))
		}
	})
}

// storeError maps err to an answer: an *apiError as it is; the store's errors about the
// request (an unknown or invalid collection, a bad option, no reranker or embedder for the
// search asked) as 4xx; the rest as 500, logged.
func (s *server) storeError(r *http.Request, err error) *apiError {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, memory.ErrCollectionNotFound):
		return notFound("collection", "%v", err)
	case errors.Is(err, memory.ErrInvalidCollection):
		return badRequest("collection", "%v", err)
	case errors.Is(err, memory.ErrNoReranker):
		return badRequest("rerank", "%v: this store was opened without a reranker (serve --reranker)", err)
	case errors.Is(err, memory.ErrNoEmbedder):
		return badRequest("mode", "%v: use mode bm25", err)
	case errors.Is(err, memory.ErrQueryTooLarge):
		return badRequest("q", "%v", err)
	case errors.Is(err, memory.ErrInvalidOption):
		return badRequest("", "%v", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, msg: err.Error()}
	}
	s.o.Logger.Error("webui: request failed", "path", r.URL.Path, "err", err)
	return &apiError{status: http.StatusInternalServerError, msg: err.Error()}
}

// intParam is the integer parameter name of r (def when absent), refused outside lo..hi.
func intParam(r *http.Request, name string, def, lo, hi int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, badRequest(name, "%s %q: not an integer", name, cut(raw, 40))
	}
	if n < lo || n > hi {
		return 0, badRequest(name, "%s %d: must be %d to %d", name, n, lo, hi)
	}
	return n, nil
}

// collectionParam is the collection parameter of r (absent: the default collection).
func collectionParam(r *http.Request) string {
	if c := r.URL.Query().Get("collection"); c != "" {
		return c
	}
	return memory.DefaultCollection
}

// cut returns s cut to at most n bytes on a UTF-8 boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// info is the answer of /api/info.
type info struct {
	Version     string   `json:"version"`
	Reranker    bool     `json:"reranker"`
	Embedder    bool     `json:"embedder"`
	Modes       []string `json:"modes"`
	MaxK        int      `json:"max_k"`
	PageSize    int      `json:"page_size"`
	MaxPageSize int      `json:"max_page_size"`
	Reports     int      `json:"reports"`
}

func (s *server) info(*http.Request) (any, error) {
	return info{
		Version:  memory.Version,
		Reranker: s.reranker, Embedder: s.m.Embedder() != nil,
		Modes: []string{string(memory.Hybrid), string(memory.BM25), string(memory.Dense)},
		MaxK:  s.o.MaxK, PageSize: s.o.PageSize, MaxPageSize: s.o.MaxPageSize,
		Reports: len(s.o.EvalReports),
	}, nil
}

// collectionInfo is one collection of /api/collections.
type collectionInfo struct {
	Name     string `json:"name"`
	Count    int    `json:"count"`
	Analyzer string `json:"analyzer"`
}

func (s *server) collections(r *http.Request) (any, error) {
	names, err := s.m.Collections(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]collectionInfo, 0, len(names))
	for _, n := range names {
		c := s.m.Collection(n)
		count, err := c.Count(r.Context())
		if errors.Is(err, memory.ErrCollectionNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		out = append(out, collectionInfo{Name: n, Count: count, Analyzer: c.Analyzer()})
	}
	return map[string]any{"collections": out}, nil
}

// document is one document of /api/documents.
type document struct {
	ID        string         `json:"id"`
	Title     string         `json:"title,omitempty"`
	Text      string         `json:"text"`
	TextBytes int            `json:"text_bytes"`         // the whole text's length
	Cut       bool           `json:"text_cut,omitempty"` // Text is the first MaxTextBytes of it
	Source    string         `json:"source,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

// documentsPage is the answer of /api/documents: Next is the after of the next page ("":
// this is the last).
type documentsPage struct {
	Collection string     `json:"collection"`
	Count      int        `json:"count"`
	Documents  []document `json:"documents"`
	Next       string     `json:"next,omitempty"`
}

func (s *server) documents(r *http.Request) (any, error) {
	limit, err := intParam(r, "limit", s.o.PageSize, 1, s.o.MaxPageSize)
	if err != nil {
		return nil, err
	}
	col := collectionParam(r)
	c := s.m.Collection(col)
	count, err := c.Count(r.Context())
	if err != nil {
		return nil, err
	}
	docs, err := c.Find(r.Context(), memory.FindOptions{After: r.URL.Query().Get("after"), Limit: limit + 1})
	if err != nil {
		return nil, err
	}
	page := documentsPage{Collection: col, Count: count, Documents: make([]document, 0, min(limit, len(docs)))}
	if len(docs) > limit {
		docs = docs[:limit]
		page.Next = docs[limit-1].ID
	}
	for _, d := range docs {
		text := cut(d.Text, MaxTextBytes)
		page.Documents = append(page.Documents, document{ID: d.ID, Title: d.Title, Text: text, TextBytes: len(d.Text),
			Cut: len(text) < len(d.Text), Source: d.Source, Metadata: d.Metadata})
	}
	return page, nil
}

// result is one result of /api/search.
type result struct {
	Rank       int                `json:"rank"`
	ID         string             `json:"id"`
	Title      string             `json:"title,omitempty"`
	Text       string             `json:"text"`
	Cut        bool               `json:"text_cut,omitempty"`
	Snippet    string             `json:"snippet,omitempty"`
	Source     string             `json:"source,omitempty"`
	ChunkIndex int                `json:"chunk_index"`
	Chunks     int                `json:"chunks"`
	Score      float64            `json:"score"`
	Relevance  float64            `json:"relevance"`
	Explain    memory.Explanation `json:"explain"`
}

// searchAnswer is the answer of /api/search: the mode asked and the one used, the time of
// each stage in milliseconds and the results.
type searchAnswer struct {
	Collection string             `json:"collection"`
	Query      string             `json:"query"`
	Mode       string             `json:"mode"`
	UsedMode   string             `json:"used_mode"`
	K          int                `json:"k"`
	Rerank     bool               `json:"rerank"`
	TimingsMS  map[string]float64 `json:"timings_ms"`
	Results    []result           `json:"results"`
}

func (s *server) search(r *http.Request) (any, error) {
	q := r.URL.Query()
	query := q.Get("q")
	switch {
	case strings.TrimSpace(query) == "":
		return nil, badRequest("q", "q: the query is empty")
	case len(query) > MaxQueryBytes:
		return nil, badRequest("q", "q: %d bytes, at most %d", len(query), MaxQueryBytes)
	case !utf8.ValidString(query):
		return nil, badRequest("q", "q: not valid UTF-8")
	}
	mode := memory.Mode(q.Get("mode"))
	switch mode {
	case "":
		mode = memory.Hybrid
	case memory.Hybrid, memory.BM25, memory.Dense:
	default:
		return nil, badRequest("mode", "mode %q: want hybrid, bm25 or dense", cut(string(mode), 40))
	}
	k, err := intParam(r, "k", 10, 1, s.o.MaxK)
	if err != nil {
		return nil, err
	}
	var rerank bool
	switch v := q.Get("rerank"); v {
	case "", "0", "false":
	case "1", "true":
		rerank = true
	default:
		return nil, badRequest("rerank", "rerank %q: want 1 or 0", cut(v, 40))
	}
	col := collectionParam(r)
	var st memory.SearchStats
	opts := []memory.SearchOption{memory.WithMode(mode), memory.TopK(k), memory.WithSnippets(), memory.WithStats(&st)}
	if rerank {
		opts = append(opts, memory.WithRerank(0))
	}
	res, err := s.m.Collection(col).Search(r.Context(), query, opts...)
	if err != nil {
		return nil, err
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	ans := searchAnswer{Collection: col, Query: query, Mode: string(mode), UsedMode: string(st.Mode), K: k, Rerank: rerank,
		TimingsMS: map[string]float64{"filter": ms(st.Filter), "bm25": ms(st.BM25), "embed": ms(st.Embed), "dense": ms(st.Dense),
			"fuse": ms(st.Fuse), "rerank": ms(st.Rerank), "total": ms(st.Total)},
		Results: make([]result, len(res))}
	for i, x := range res {
		text := cut(x.Text, MaxTextBytes)
		ans.Results[i] = result{Rank: i + 1, ID: x.ID, Title: x.Title, Text: text, Cut: len(text) < len(x.Text),
			Snippet: x.Snippet, Source: x.Source, ChunkIndex: x.ChunkIndex, Chunks: x.Chunks,
			Score: x.Score, Relevance: x.Relevance, Explain: x.Explain}
	}
	return ans, nil
}

// reportEntry is one report of /api/reports: the report, or why it cannot be read now.
type reportEntry struct {
	File   string      `json:"file"`
	Report *EvalReport `json:"report,omitempty"`
	Error  string      `json:"error,omitempty"`
}

func (s *server) reports(*http.Request) (any, error) {
	out := make([]reportEntry, 0, len(s.o.EvalReports))
	for _, p := range s.o.EvalReports {
		e := reportEntry{File: filepath.Base(p)}
		rep, err := ReadEvalReport(p)
		if err != nil {
			s.o.Logger.Warn("webui: eval report", "path", p, "err", err)
			e.Error = err.Error()
		} else {
			e.Report = &rep
		}
		out = append(out, e)
	}
	return map[string]any{"reports": out}, nil
}
