package searchr1

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentmem/memory"
)

// Observer receives the measurements of a retrieval server (RetrieveOptions.Observer):
// the server layer turns them into metrics (package metrics exports them to Prometheus),
// so this package does not depend on a metrics library. Its methods are called from
// every request at once and must be safe for concurrent use; they must not block.
type Observer interface {
	// Begin is called when a request arrives, before it is routed; Request follows
	// when it ends.
	Begin(endpoint string)
	// Request is called once per request when it has been answered: endpoint is
	// "/retrieve", "/rerank", "/health", "/ready", "/openapi.json" or "other"; status is
	// the HTTP status sent (200 for a response aborted midway); kind is "" for a success,
	// else the kind of failure: malformed, not_found, method,
	// body_too_large, over_budget, invalid, too_many_queries, query_too_long, no_reranker,
	// search_failed, busy, not_ready, aborted, client_gone or other; d is the time from the request's
	// arrival to its end.
	Request(endpoint string, status int, kind string, d time.Duration)
	// Batch is called for each /retrieve or /rerank request accepted for searching, with
	// its number of queries, before it waits for a slot.
	Batch(endpoint string, queries int)
	// Queue is called with the time a request waited for a slot (MaxConcurrent), whether
	// or not it got one.
	Queue(endpoint string, wait time.Duration)
	// Stage is called with the time a request spent in one of its stages: "search" (the
	// store's searches of a chunk of queries), "rerank" (the server's cross-encoder, per
	// query) and "write" (encoding and writing the response).
	Stage(endpoint, stage string, d time.Duration)
	// Search is called with the timings of each search of the store (see
	// [memory.WithStatsFunc]).
	Search(st memory.SearchStats)
}

// Kinds of failure reported to [Observer.Request].
const (
	kindMalformed      = "malformed"        // 400: the body is not JSON
	kindNotFound       = "not_found"        // 404: no such endpoint
	kindMethod         = "method"           // 405: wrong HTTP method
	kindBodyTooLarge   = "body_too_large"   // 413: body over MaxBodyBytes / MaxRerankBodyBytes
	kindOverBudget     = "over_budget"      // 413: over MaxResponseBytes (ErrOverBudget)
	kindInvalid        = "invalid"          // 422: a field missing or out of range
	kindTooManyQueries = "too_many_queries" // 422: ErrTooManyQueries
	kindQueryTooLong   = "query_too_long"   // 422: ErrQueryTooLong
	kindNoReranker     = "no_reranker"      // 422 or 501: ErrNoReranker
	kindSearchFailed   = "search_failed"    // 500: the search failed before the answer began
	kindBusy           = "busy"             // 503: no slot within QueueTimeout
	kindNotReady       = "not_ready"        // 503 from /ready
	kindAborted        = "aborted"          // the search failed midway: the connection was cut
	kindClientGone     = "client_gone"      // the client left, or writing to it failed
	kindOther          = "other"            // any other error status
)

// errorKind is the kind of failure of an answer of status status caused by err (nil when
// only the status is known): one of the Kind constants.
func errorKind(status int, err error) string {
	var re *RequestError
	if errors.As(err, &re) && re.Type == typeJSONInvalid {
		return kindMalformed // answered 422 in the search-r1 dialect, as FastAPI does
	}
	switch {
	case errors.Is(err, ErrTooManyQueries):
		return kindTooManyQueries
	case errors.Is(err, ErrQueryTooLong):
		return kindQueryTooLong
	case errors.Is(err, ErrOverBudget):
		return kindOverBudget
	case errors.Is(err, ErrNoReranker):
		return kindNoReranker
	}
	switch status {
	case http.StatusBadRequest:
		return kindMalformed
	case http.StatusNotFound:
		return kindNotFound
	case http.StatusMethodNotAllowed:
		return kindMethod
	case http.StatusRequestEntityTooLarge:
		return kindBodyTooLarge
	case http.StatusUnprocessableEntity:
		return kindInvalid
	case http.StatusInternalServerError:
		return kindSearchFailed
	case http.StatusNotImplemented:
		return kindNoReranker
	case http.StatusServiceUnavailable:
		return kindBusy
	}
	if status >= 400 {
		return kindOther
	}
	return ""
}

// nopObserver is the Observer of a server without one.
type nopObserver struct{}

func (nopObserver) Begin(string)                               {}
func (nopObserver) Request(string, int, string, time.Duration) {}
func (nopObserver) Batch(string, int)                          {}
func (nopObserver) Queue(string, time.Duration)                {}
func (nopObserver) Stage(string, string, time.Duration)        {}
func (nopObserver) Search(memory.SearchStats)                  {}

// observed is the ResponseWriter of an observed request: it records the status sent and
// the kind of failure.
type observed struct {
	http.ResponseWriter
	endpoint string
	status   int
	kind     string
}

func (o *observed) WriteHeader(status int) {
	if o.status == 0 {
		o.status = status
	}
	o.ResponseWriter.WriteHeader(status)
}

func (o *observed) Write(p []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	return o.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (o *observed) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// setKind records the kind of failure of the request w answers, when w is observed and
// none was recorded yet.
func setKind(w http.ResponseWriter, kind string) {
	if o, ok := w.(*observed); ok && o.kind == "" {
		o.kind = kind
	}
}

// endpointOf names the endpoint of path for the Observer (a bounded set, whatever the
// client sends).
func endpointOf(path string) string {
	switch path {
	case "/retrieve", "/rerank", "/health", "/ready", "/openapi.json":
		return path
	}
	return "other"
}

// ServeHTTP routes the request and reports it to the Observer.
func (h *retrieveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	ow := &observed{ResponseWriter: w, endpoint: endpointOf(r.URL.Path)}
	h.obs.Begin(ow.endpoint)
	defer func() {
		p := recover()
		status, kind := ow.status, ow.kind
		switch {
		case p == http.ErrAbortHandler && kind == "":
			kind = kindAborted
		case status == 0 && r.Context().Err() != nil && kind == "":
			kind = kindClientGone
		case kind == "":
			kind = errorKind(status, nil)
		}
		if status == 0 {
			status = http.StatusOK
		}
		h.obs.Request(ow.endpoint, status, kind, time.Since(start))
		if p != nil {
			panic(p)
		}
	}()
	h.mux.ServeHTTP(ow, r)
}

// timeStage reports the time since start as stage of the request w answers.
func (h *retrieveHandler) timeStage(w http.ResponseWriter, stage string, start time.Time) {
	ep := "other"
	if o, ok := w.(*observed); ok {
		ep = o.endpoint
	}
	h.obs.Stage(ep, stage, time.Since(start))
}

// Ready reports whether a server can answer: nil when it can, else why not (RetrieveOptions.Ready).
type Ready func(ctx context.Context) error

func (h *retrieveHandler) ready(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	if h.o.Ready != nil {
		if err := h.o.Ready(r.Context()); err != nil {
			setKind(w, kindNotReady)
			w.Header().Set("Retry-After", "1")
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not ready", "detail": err.Error()})
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}
