package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"time"

	"github.com/agentmem/memory"
)

// RetrieveOptions configure [NewRetrieveHandler]. The zero value is usable.
type RetrieveOptions struct {
	// DefaultTopK answers requests whose "topk" is null or missing (default 3, the
	// original server's --topk).
	DefaultTopK int
	// MaxTopK bounds "topk" (default 100); larger values get 422.
	MaxTopK int
	// MaxQueries bounds the number of queries of one request (default 512).
	MaxQueries int
	// MaxBodyBytes bounds the request body (default 1 MiB); larger bodies get 413.
	MaxBodyBytes int64
	// MaxConcurrent bounds the requests searched at once (default 2 x GOMAXPROCS: search
	// is CPU-bound, and few slots keep the latency tail short; see BENCHMARKS.md §10); others
	// wait up to QueueTimeout and then get 503.
	MaxConcurrent int
	// QueueTimeout is how long a request waits for a slot (default 30 s).
	QueueTimeout time.Duration
	// SearchOptions are added to every search (mode, filters, collections…).
	SearchOptions []memory.SearchOption
	// Logger receives request errors (default slog.Default()).
	Logger *slog.Logger
}

// RetrieveRequest is the body of POST /retrieve, as the original Search-R1 client sends it:
// requests.post(url, json={"queries": [...], "topk": 3, "return_scores": True}).
type RetrieveRequest struct {
	Queries      []string `json:"queries"`
	TopK         *int     `json:"topk"`
	ReturnScores bool     `json:"return_scores"`
}

// RetrievedDoc is one corpus record in the original server's layout.
type RetrievedDoc struct {
	ID string `json:"id"`
	// Contents is "\"Title\"\ntext" (see [Contents]).
	Contents string `json:"contents"`
}

// ScoredDoc is one hit when return_scores is true.
type ScoredDoc struct {
	Document RetrievedDoc `json:"document"`
	Score    float64      `json:"score"`
}

// RetrieveResponse is the answer with scores: {"result": [[{"document": …, "score": …}]]}.
// Without scores the inner items are [RetrievedDoc] values.
type RetrieveResponse struct {
	Result [][]ScoredDoc `json:"result"`
}

type retrieveHandler struct {
	s   Searcher
	o   RetrieveOptions
	sem chan struct{}
	log *slog.Logger
	mux *http.ServeMux
}

// NewRetrieveHandler serves the Search-R1 retrieval protocol over s:
//
//	POST /retrieve  {"queries": [...], "topk": 3, "return_scores": true}
//	                -> {"result": [[{"document": {"id": ..., "contents": ...}, "score": ...}, ...], ...]}
//	                   ({"result": [[{"id": ..., "contents": ...}, ...]]} when return_scores is false)
//	GET  /health    -> {"status": "ok"}
//
// Errors are JSON {"detail": "..."} with 400 (malformed JSON), 405 (method), 413 (body
// too large), 422 (missing or out-of-range field), 503 (busy) or 500 (search failed).
func NewRetrieveHandler(s Searcher, opts RetrieveOptions) http.Handler {
	o := opts
	o.DefaultTopK = defaultInt(o.DefaultTopK, DefaultTopK)
	o.MaxTopK = defaultInt(o.MaxTopK, 100)
	o.MaxQueries = defaultInt(o.MaxQueries, 512)
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	o.MaxConcurrent = defaultInt(o.MaxConcurrent, 2*runtime.GOMAXPROCS(0))
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = 30 * time.Second
	}
	h := &retrieveHandler{s: s, o: o, sem: make(chan struct{}, o.MaxConcurrent), log: o.Logger}
	if h.log == nil {
		h.log = slog.Default()
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/retrieve", h.retrieve)
	h.mux.HandleFunc("/health", h.health)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: "+r.URL.Path)
	})
	return h
}

func (h *retrieveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func (h *retrieveHandler) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (h *retrieveHandler) retrieve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	req, status, err := h.decode(w, r)
	if err != nil {
		writeError(w, status, err.Error())
		return
	}
	topK := h.o.DefaultTopK
	if req.TopK != nil {
		topK = *req.TopK
	}

	wait, cancel := context.WithTimeout(r.Context(), h.o.QueueTimeout)
	select {
	case h.sem <- struct{}{}:
		cancel()
	case <-wait.Done():
		cancel()
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "server busy")
		return
	}
	defer func() { <-h.sem }()

	opts := append(append([]memory.SearchOption(nil), h.o.SearchOptions...), memory.TopK(topK))
	hits := make([][]memory.Result, len(req.Queries))
	for i, q := range req.Queries {
		if strings.TrimSpace(q) == "" {
			continue
		}
		res, err := h.s.Search(r.Context(), q, opts...)
		if err != nil {
			if errors.Is(err, memory.ErrInvalidOption) || errors.Is(err, memory.ErrInvalidFilter) {
				writeError(w, http.StatusUnprocessableEntity, fmt.Sprintf("queries[%d]: %v", i, err))
				return
			}
			if r.Context().Err() != nil {
				return // client gone
			}
			h.log.Error("searchr1: retrieve", "query", q, "err", err)
			writeError(w, http.StatusInternalServerError, "search failed")
			return
		}
		if len(res) > topK {
			res = res[:topK]
		}
		hits[i] = res
	}
	if req.ReturnScores {
		out := RetrieveResponse{Result: make([][]ScoredDoc, len(hits))}
		for i, l := range hits {
			out.Result[i] = make([]ScoredDoc, len(l))
			for j, r := range l {
				out.Result[i][j] = ScoredDoc{Document: RetrievedDoc{ID: r.ID, Contents: Contents(r)}, Score: r.Score}
			}
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	out := struct {
		Result [][]RetrievedDoc `json:"result"`
	}{Result: make([][]RetrievedDoc, len(hits))}
	for i, l := range hits {
		out.Result[i] = make([]RetrievedDoc, len(l))
		for j, r := range l {
			out.Result[i][j] = RetrievedDoc{ID: r.ID, Contents: Contents(r)}
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// decode reads and validates the request body, returning the HTTP status of a failure.
func (h *retrieveHandler) decode(w http.ResponseWriter, r *http.Request) (RetrieveRequest, int, error) {
	var req RetrieveRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return req, http.StatusRequestEntityTooLarge, fmt.Errorf("request body over %d bytes", h.o.MaxBodyBytes)
		}
		return req, http.StatusBadRequest, fmt.Errorf("read body: %v", err)
	}
	// Field presence and types are checked on a raw view first, so "queries": "x" or a
	// missing field get 422 and only malformed JSON gets 400.
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return req, http.StatusUnprocessableEntity, errors.New("body must be a JSON object")
		}
		return req, http.StatusBadRequest, fmt.Errorf("malformed JSON: %v", err)
	}
	if dec.More() {
		return req, http.StatusBadRequest, errors.New("malformed JSON: data after the object")
	}
	if raw == nil {
		return req, http.StatusUnprocessableEntity, errors.New("body must be a JSON object")
	}
	q, ok := raw["queries"]
	if !ok || string(q) == "null" {
		return req, http.StatusUnprocessableEntity, errors.New(`field "queries" is required`)
	}
	if err := json.Unmarshal(q, &req.Queries); err != nil {
		return req, http.StatusUnprocessableEntity, errors.New(`field "queries" must be a list of strings`)
	}
	if len(req.Queries) > h.o.MaxQueries {
		return req, http.StatusUnprocessableEntity, fmt.Errorf(`field "queries" has %d items, at most %d allowed`, len(req.Queries), h.o.MaxQueries)
	}
	if t, ok := raw["topk"]; ok && string(t) != "null" {
		var k int
		if err := json.Unmarshal(t, &k); err != nil {
			return req, http.StatusUnprocessableEntity, errors.New(`field "topk" must be an integer`)
		}
		if k < 1 || k > h.o.MaxTopK {
			return req, http.StatusUnprocessableEntity, fmt.Errorf(`field "topk" is %d, must be in [1, %d]`, k, h.o.MaxTopK)
		}
		req.TopK = &k
	}
	if rs, ok := raw["return_scores"]; ok && string(rs) != "null" {
		if err := json.Unmarshal(rs, &req.ReturnScores); err != nil {
			return req, http.StatusUnprocessableEntity, errors.New(`field "return_scores" must be a boolean`)
		}
	}
	return req, 0, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		status, data = http.StatusInternalServerError, []byte(`{"detail":"encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

func writeError(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, map[string]string{"detail": detail})
}
