package searchr1

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sort"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/parallel"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/rerank"
)

// Defaults of [RetrieveOptions].
const (
	// DefaultMaxQueries is the default cap on the queries of one request: Search-R1's
	// trainer sends every pending search of a rollout step in one request (2,560 with its
	// stock GRPO script).
	DefaultMaxQueries = 8192
	// DefaultMaxQueryBytes is the default cap on the bytes of one query.
	DefaultMaxQueryBytes = 8 << 10
	// DefaultMaxPassageBytes is the default cap on the bytes of one returned passage's
	// "contents" (longer ones are cut at a UTF-8 boundary).
	DefaultMaxPassageBytes = 16 << 10
	// DefaultMaxResponseBytes is the default response budget: queries x topk x
	// MaxPassageBytes may not exceed it.
	DefaultMaxResponseBytes = 1 << 30
	// DefaultRerankDepth is how many candidates /retrieve reranks per query.
	DefaultRerankDepth = 50
	// DefaultMaxTopK is the default cap on a request's "topk" in the native dialect.
	DefaultMaxTopK = 100
	// DefaultCompatMaxTopK is the default cap on a request's "topk" (and
	// "topk_retrieval") in the [CompatSearchR1] dialect: the original servers take any
	// topk, so the cap is high; the response budget (MaxResponseBytes) still bounds
	// queries x topk.
	DefaultCompatMaxTopK = 10000
)

// RetrieveOptions configure [NewRetrieveHandler] and [NewRetrieveServer]. The zero value
// is usable.
type RetrieveOptions struct {
	// DefaultTopK answers requests whose "topk" is null or missing (default 3, the
	// original server's --topk).
	DefaultTopK int
	// MaxTopK bounds "topk" (default [DefaultMaxTopK], [DefaultCompatMaxTopK] in the
	// [CompatSearchR1] dialect); larger values get 422.
	MaxTopK int
	// MaxQueries bounds the number of queries of one request (default
	// [DefaultMaxQueries]); more get 422 naming the limit.
	MaxQueries int
	// MaxQueryBytes bounds each query (default [DefaultMaxQueryBytes]); a longer one gets
	// 422 naming the cap.
	MaxQueryBytes int
	// MaxQueryVectorValues bounds the values of all the query vectors of one /retrieve
	// request, the "query_vectors" extension (default [DefaultMaxQueryVectorValues]); more
	// get 422 naming the cap ([ErrTooManyVectorValues]).
	MaxQueryVectorValues int
	// MaxPassageBytes bounds the "contents" of each returned passage (default
	// [DefaultMaxPassageBytes]); longer contents are cut at a UTF-8 boundary.
	MaxPassageBytes int
	// MaxResponseBytes is the response budget (default [DefaultMaxResponseBytes]): a
	// request whose queries x topk x MaxPassageBytes exceeds it gets 413 naming the budget.
	// The response is streamed query by query, so the server's memory does not grow with
	// it; the budget bounds the work and the time of one request.
	MaxResponseBytes int64
	// MaxBodyBytes bounds the /retrieve request body (default 8 MiB); larger bodies get
	// 413.
	MaxBodyBytes int64
	// MaxRerankBodyBytes bounds the /rerank request body, which carries passages (default
	// 32 MiB).
	MaxRerankBodyBytes int64
	// MaxRerankPairs bounds the (query, passage) pairs of one /rerank request (default
	// 65,536).
	MaxRerankPairs int
	// Workers is the number of queries of one request searched at once (default
	// GOMAXPROCS). A searcher implementing [BatchSearcher] gets the queries in batches
	// instead.
	Workers int
	// MaxConcurrent bounds the requests served at once (default 2 x GOMAXPROCS); others
	// wait up to QueueTimeout and then get 503.
	MaxConcurrent int
	// QueueTimeout is how long a request waits for a slot (default 30 s).
	QueueTimeout time.Duration
	// Reranker, when set, reranks /retrieve: each query retrieves RerankDepth candidates,
	// the cross-encoder scores them and the best topk are returned, with sigmoid(logit)
	// as their score (as the original retrieval-with-rerank server does). It also enables
	// POST /rerank.
	Reranker rerank.Reranker
	// RerankDepth is the number of candidates reranked per query (default
	// [DefaultRerankDepth]; at least topk).
	RerankDepth int
	// SearchOptions are added to every search (mode, filters, collections…).
	SearchOptions []memory.SearchOption
	// Compat is the dialect the server speaks (default [CompatNative]; [CompatSearchR1]
	// answers as the original Search-R1 servers, see there).
	Compat Compat
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout configure the server
	// of [NewRetrieveServer]. Defaults: 10 s (at most ReadTimeout); 30 s plus the body cap
	// at 256 KiB/s; 2 min plus MaxResponseBytes at 2 MiB/s (the whole of a request's
	// search and response must fit in it); 60 s.
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout time.Duration
	// Logger receives request errors (default slog.Default()).
	Logger *slog.Logger
	// Observer, when set, receives the server's measurements: every request with its
	// endpoint, status and kind of failure, batch sizes, queue waits, the time of each
	// stage and each search's timings (see [Observer]).
	Observer Observer
	// Ready answers GET /ready: nil means ready (200), an error not ready (503 naming
	// it). Nil: /ready always answers 200, as /health does.
	Ready Ready
}

// withDefaults fills the zero fields.
func (o RetrieveOptions) withDefaults() RetrieveOptions {
	o.DefaultTopK = defaultInt(o.DefaultTopK, DefaultTopK)
	if o.Compat == CompatSearchR1 {
		o.MaxTopK = defaultInt(o.MaxTopK, DefaultCompatMaxTopK)
	}
	o.MaxTopK = defaultInt(o.MaxTopK, DefaultMaxTopK)
	o.MaxQueries = defaultInt(o.MaxQueries, DefaultMaxQueries)
	o.MaxQueryBytes = defaultInt(o.MaxQueryBytes, DefaultMaxQueryBytes)
	o.MaxQueryVectorValues = defaultInt(o.MaxQueryVectorValues, DefaultMaxQueryVectorValues)
	o.MaxPassageBytes = defaultInt(o.MaxPassageBytes, DefaultMaxPassageBytes)
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 8 << 20
	}
	if o.MaxRerankBodyBytes <= 0 {
		o.MaxRerankBodyBytes = 32 << 20
	}
	o.MaxRerankPairs = defaultInt(o.MaxRerankPairs, 1<<16)
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	o.MaxConcurrent = defaultInt(o.MaxConcurrent, 2*runtime.GOMAXPROCS(0))
	if o.QueueTimeout <= 0 {
		o.QueueTimeout = 30 * time.Second
	}
	if o.Compat == CompatSearchR1 {
		o.RerankDepth = defaultInt(o.RerankDepth, DefaultCompatRetrievalTopK)
	}
	o.RerankDepth = defaultInt(o.RerankDepth, DefaultRerankDepth)
	if o.ReadTimeout <= 0 {
		body := max(o.MaxBodyBytes, o.MaxRerankBodyBytes)
		if o.Reranker == nil {
			body = o.MaxBodyBytes
		}
		o.ReadTimeout = 30*time.Second + time.Duration(body/(256<<10))*time.Second
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = min(10*time.Second, o.ReadTimeout)
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = 2*time.Minute + time.Duration(o.MaxResponseBytes/(2<<20))*time.Second
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 60 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// NewRetrieveServer returns an http.Server serving [NewRetrieveHandler] with every
// timeout set (see RetrieveOptions): slow request bodies, stalled readers of a response
// and idle keep-alive connections are all cut off. Set its Addr, or call Serve with a
// listener.
func NewRetrieveServer(s Searcher, opts RetrieveOptions) *http.Server {
	o := opts.withDefaults()
	return &http.Server{
		Handler:           NewRetrieveHandler(s, o),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(o.Logger.Handler(), slog.LevelWarn),
	}
}

// retrieveRequest is the body of POST /retrieve, as the original Search-R1 client sends it:
// requests.post(url, json={"queries": [...], "topk": 3, "return_scores": True}).
type retrieveRequest struct {
	Queries      []string `json:"queries"`
	TopK         *int     `json:"topk"`
	ReturnScores bool     `json:"return_scores"`
	// QueryVectors and QueryEmbedder are this server's extension (see queryvectors.go):
	// the queries' own embeddings (nil: none, or a query's text is embedded) and the
	// embedder that made them ("": not stated).
	QueryVectors  [][]float32 `json:"query_vectors"`
	QueryEmbedder string      `json:"query_embedder"`
}

// retrievedDoc is one corpus record in the original server's layout.
type retrievedDoc struct {
	ID string `json:"id"`
	// Contents is "\"Title\"\ntext" (see [Contents]).
	Contents string `json:"contents"`
}

// scoredDoc is one hit when return_scores is true.
type scoredDoc struct {
	Document retrievedDoc `json:"document"`
	Score    float64      `json:"score"`
}

// retrieveResponse is the answer with scores: {"result": [[{"document": …, "score": …}]]}.
// Without scores the inner items are [retrievedDoc] values.
type retrieveResponse struct {
	Result [][]scoredDoc `json:"result"`
}

type retrieveHandler struct {
	s   Searcher
	o   RetrieveOptions
	sem chan struct{}
	log *slog.Logger
	obs Observer
	mux *http.ServeMux
	// chunkWarn logs once that hits are chunks the searcher cannot make whole rows of.
	chunkWarn sync.Once
}

// NewRetrieveHandler serves the Search-R1 retrieval protocol over s:
//
//	POST /retrieve  {"queries": [...], "topk": 3, "return_scores": true}
//	                -> {"result": [[{"document": {"id": ..., "contents": ...}, "score": ...}, ...], ...]}
//	                   ({"result": [[{"id": ..., "contents": ...}, ...]]} when return_scores is false)
//	                An extension beside those fields: "query_vectors" (one embedding per
//	                query, null for a query whose text is embedded; alone, without
//	                "queries", a dense search of each vector) and "query_embedder" (the id of
//	                the model that made them, checked against the store's); see
//	                [SearchQueryVectors].
//	POST /rerank    {"queries": [...], "documents": [[doc, ...], ...], "rerank_topk": 3, "return_scores": true}
//	                -> the same layout as /retrieve (only with a Reranker; see [rerankRequest])
//	GET  /health    -> {"status": "ok"}
//	GET  /ready     -> {"status": "ready"}, or 503 while RetrieveOptions.Ready reports an error
//	GET  /openapi.json -> the OpenAPI 3.1 description of these endpoints in the server's
//	                   dialect (see [openAPI])
//
// The queries of a request are searched in parallel (Workers) or as batches (a
// [BatchSearcher]); the answer keeps their order and is streamed query by query. With a
// Reranker each query's RerankDepth candidates are reranked before the topk are kept.
//
// Errors are JSON {"detail": "..."} with 400 (malformed JSON), 405 (method), 413 (body
// too large, or over the response budget), 422 (missing or out-of-range field, too many
// queries, query too long), 501 (/rerank without a reranker), 503 (busy) or 500 (search
// failed). A search that fails after the first results were sent aborts the connection,
// so a client never reads a truncated body as a complete answer.
func NewRetrieveHandler(s Searcher, opts RetrieveOptions) http.Handler {
	o := opts.withDefaults()
	h := &retrieveHandler{s: s, o: o, sem: make(chan struct{}, o.MaxConcurrent), log: o.Logger, obs: o.Observer}
	if h.obs == nil {
		h.obs = nopObserver{}
	} else {
		h.o.SearchOptions = append(h.o.SearchOptions[:len(h.o.SearchOptions):len(h.o.SearchOptions)], memory.WithStatsFunc(h.obs.Search))
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("/retrieve", h.retrieve)
	h.mux.HandleFunc("/rerank", h.rerank)
	h.mux.HandleFunc("/health", h.health)
	h.mux.HandleFunc("/ready", h.ready)
	h.mux.HandleFunc("/openapi.json", h.openAPI)
	h.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not found: "+r.URL.Path)
	})
	return h
}

func (h *retrieveHandler) health(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// acquire takes a request slot, waiting up to QueueTimeout; on failure it has answered
// 503 and returns false.
func (h *retrieveHandler) acquire(w http.ResponseWriter, r *http.Request) bool {
	wait, cancel := context.WithTimeout(r.Context(), h.o.QueueTimeout)
	defer cancel()
	start := time.Now()
	ep := endpointOf(r.URL.Path)
	select {
	case h.sem <- struct{}{}:
		h.obs.Queue(ep, time.Since(start))
		return true
	case <-wait.Done():
		h.obs.Queue(ep, time.Since(start))
		if r.Context().Err() != nil {
			setKind(w, kindClientGone)
			return false
		}
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "server busy")
		return false
	}
}

func (h *retrieveHandler) release() { <-h.sem }

// chunkSize is the number of queries searched before their results are written: about
// 8 MiB of candidate passages at the passage cap, at least 4 per worker, at most 1,024.
func (h *retrieveHandler) chunkSize(depth int) int {
	per := int64(depth) * int64(h.o.MaxPassageBytes)
	c := int((8 << 20) / max(per, 1))
	return min(max(c, 4*h.o.Workers), 1024)
}

func (h *retrieveHandler) retrieve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed")
		return
	}
	if h.o.Compat == CompatSearchR1 && h.o.Reranker != nil {
		h.retrieveRerankCompat(w, r)
		return
	}
	req, status, err := h.decode(w, r)
	if err != nil {
		h.fail(w, status, err)
		return
	}
	topK := h.o.DefaultTopK
	if req.TopK != nil {
		topK = *req.TopK
	}
	if need := int64(len(req.Queries)) * int64(topK) * int64(h.o.MaxPassageBytes); need > h.o.MaxResponseBytes {
		setKind(w, kindOverBudget)
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf(
			"%v: %d queries x topk %d x %d passage bytes = %d bytes, over the response budget of %d bytes; send fewer queries or a smaller topk",
			ErrOverBudget, len(req.Queries), topK, h.o.MaxPassageBytes, need, h.o.MaxResponseBytes))
		return
	}
	h.obs.Batch(endpointOf(r.URL.Path), len(req.Queries))
	if !h.acquire(w, r) {
		return
	}
	defer h.release()

	depth := topK
	if h.o.Reranker != nil {
		depth = max(topK, h.o.RerankDepth)
	}
	opts := append(append([]memory.SearchOption(nil), h.o.SearchOptions...), memory.TopK(depth))
	if req.QueryEmbedder != "" {
		opts = append(opts, memory.WithQueryVectorEmbedder(req.QueryEmbedder))
	}
	search := func(ctx context.Context, base int, qs []string) ([][]memory.Result, error) {
		var vecs [][]float32 // the chunk's query vectors (nil: none)
		if req.QueryVectors != nil {
			vecs = req.QueryVectors[base : base+len(qs)]
		}
		t := time.Now()
		hits, err := SearchQueryVectors(ctx, h.s, qs, vecs, h.o.Workers, opts...)
		err = vectorSearchError(err, vecs != nil)
		h.timeStage(w, "search", t)
		if err == nil && h.o.Compat == CompatSearchR1 {
			err = h.wholeRows(ctx, hits)
		}
		if err != nil || h.o.Reranker == nil {
			return hits, err
		}
		err = parallel.For(ctx, len(qs), h.o.Workers, func(ctx context.Context, i int) error {
			if len(hits[i]) == 0 {
				return nil
			}
			var err error
			texts := make([]string, len(hits[i]))
			for j, r := range hits[i] {
				texts[j] = rerankText(r.Title, r.Text)
			}
			hits[i], err = h.rerankResults(ctx, w, qs[i], hits[i], texts)
			return err
		})
		return hits, err
	}
	h.stream(w, r, req.Queries, h.chunkSize(depth), search, func(buf []byte, res []memory.Result) []byte {
		if len(res) > topK {
			res = res[:topK]
		}
		if h.o.Compat == CompatSearchR1 {
			return appendCompatList(buf, res, req.ReturnScores, h.retrievedDocCompat, rawScore)
		}
		return h.appendList(buf, res, req.ReturnScores)
	})
}

// rerankResults scores texts (the passages of res) with the reranker against query and
// returns res sorted by logit (stable on ties), scored sigmoid(logit).
func (h *retrieveHandler) rerankResults(ctx context.Context, w http.ResponseWriter, query string, res []memory.Result, texts []string) ([]memory.Result, error) {
	t := time.Now()
	logits, err := h.o.Reranker.Score(ctx, query, texts)
	h.timeStage(w, "rerank", t)
	if err != nil {
		return nil, fmt.Errorf("rerank: %w", err)
	}
	if len(logits) != len(res) {
		return nil, fmt.Errorf("rerank: %d scores for %d passages", len(logits), len(res))
	}
	out := make([]memory.Result, len(res))
	copy(out, res)
	order := make([]int, len(res))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	for rank, i := range order {
		r := res[i]
		l := float64(logits[i])
		r.Score = vecmath.Sigmoid(l)
		r.Explain.Rerank = &memory.RerankScore{Logit: l, Prob: r.Score, Rank: rank + 1}
		out[rank] = r
	}
	return out, nil
}

// rerankText is the passage text a cross-encoder scores: the title and the text on their
// own lines, as the library's own rerank stage builds it.
func rerankText(title, text string) string {
	switch {
	case title == "":
		return text
	case text == "":
		return title
	}
	return title + "\n" + text
}

// stream searches queries chunk by chunk (the next chunk is searched while the previous
// one is written) and writes {"result": [...]} one query list at a time (appendList
// writes a list), so memory holds at most three chunks whatever the size of the request.
// Errors before the first byte get their HTTP status; later ones abort the connection.
func (h *retrieveHandler) stream(w http.ResponseWriter, r *http.Request, queries []string, chunk int,
	search func(ctx context.Context, base int, qs []string) ([][]memory.Result, error),
	appendList func(buf []byte, res []memory.Result) []byte) {
	ctx, cancel := context.WithCancel(r.Context())
	type part struct {
		hits [][]memory.Result
		err  error
	}
	parts := make(chan part, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(parts)
		for lo := 0; lo < len(queries); lo += chunk {
			hits, err := search(ctx, lo, queries[lo:min(lo+chunk, len(queries))])
			select {
			case parts <- part{hits, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	})
	defer func() {
		cancel()
		for range parts { // let the producer finish
		}
		wg.Wait()
	}()

	bw := bufio.NewWriterSize(w, 64<<10)
	started := false
	i := 0
	var (
		buf     []byte
		writing time.Duration // encoding and writing, reported as the "write" stage
	)
	defer func() {
		if started {
			h.obs.Stage(endpointOf(r.URL.Path), "write", writing)
		}
	}()
	for p := range parts {
		if p.err != nil {
			if !started {
				h.searchFailed(w, r, p.err)
				return
			}
			if r.Context().Err() == nil {
				h.log.Error("searchr1: retrieve: search failed mid-response", "err", p.err)
			}
			setKind(w, kindAborted)
			panic(http.ErrAbortHandler)
		}
		t := time.Now()
		if !started {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = bw.WriteString(`{"result":[`)
			started = true
		}
		for _, res := range p.hits {
			if i > 0 {
				_ = bw.WriteByte(',')
			}
			i++
			buf = appendList(buf[:0], res)
			if _, err := bw.Write(buf); err != nil {
				setKind(w, kindClientGone)
				return // client gone or write timeout: the deferred cancel stops the search
			}
		}
		writing += time.Since(t)
	}
	t := time.Now()
	if !started {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = bw.WriteString(`{"result":[`)
	}
	_, _ = bw.WriteString(`]}`)
	if err := bw.Flush(); err != nil {
		setKind(w, kindClientGone)
	}
	writing += time.Since(t)
}

// appendList appends the JSON of one query's list to buf.
func (h *retrieveHandler) appendList(buf []byte, res []memory.Result, scores bool) []byte {
	var (
		data []byte
		err  error
	)
	if scores {
		l := make([]scoredDoc, len(res))
		for j, r := range res {
			l[j] = scoredDoc{Document: retrievedDoc{ID: r.ID, Contents: capBytes(Contents(r), h.o.MaxPassageBytes)}, Score: r.Score}
		}
		data, err = json.Marshal(l)
	} else {
		l := make([]retrievedDoc, len(res))
		for j, r := range res {
			l[j] = retrievedDoc{ID: r.ID, Contents: capBytes(Contents(r), h.o.MaxPassageBytes)}
		}
		data, err = json.Marshal(l)
	}
	if err != nil { // only non-finite scores can fail; never leave the array malformed
		return append(buf, "[]"...)
	}
	return append(buf, data...)
}

// searchFailed answers a search error that happened before the response began.
func (h *retrieveHandler) searchFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, memory.ErrInvalidOption), errors.Is(err, memory.ErrInvalidFilter), errors.Is(err, memory.ErrQueryTooLarge),
		errors.Is(err, errVectorUnserved): // memory.ErrQueryVector is an ErrInvalidOption
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case r.Context().Err() != nil:
		// client gone: nobody reads an answer
		setKind(w, kindClientGone)
	default:
		h.log.Error("searchr1: retrieve", "err", err)
		writeError(w, http.StatusInternalServerError, "search failed")
	}
}

// capBytes cuts s to at most n bytes at a UTF-8 boundary.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// bodyQueries reads the "queries" field of a /retrieve or /rerank body and checks it
// against the handler's caps.
func (h *retrieveHandler) bodyQueries(raw map[string]json.RawMessage) ([]string, error) {
	q, ok := raw["queries"]
	switch {
	case !ok:
		return nil, reqErr(typeMissing, `field "queries" is required`, "queries")
	case string(q) == "null":
		return nil, reqErr(typeListType, `field "queries" is required`, "queries")
	}
	const notStrings = `field "queries" must be a list of strings`
	var items []json.RawMessage
	if err := json.Unmarshal(q, &items); err != nil {
		return nil, reqErr(typeListType, notStrings, "queries")
	}
	qs := make([]string, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &qs[i]); err != nil {
			return nil, reqErr(typeStringType, notStrings, "queries", i)
		}
	}
	if err := h.checkQueries(qs); err != nil {
		return nil, err
	}
	return qs, nil
}

// decode reads and validates the request body, returning the HTTP status of a failure.
func (h *retrieveHandler) decode(w http.ResponseWriter, r *http.Request) (retrieveRequest, int, error) {
	var req retrieveRequest
	raw, status, err := readObject(w, r, h.o.MaxBodyBytes)
	if err != nil {
		return req, status, err
	}
	if _, ok := raw[fieldQueryVectors]; !ok || hasQueries(raw) { // query vectors alone need no queries
		if req.Queries, err = h.bodyQueries(raw); err != nil {
			return req, http.StatusUnprocessableEntity, err
		}
	}
	if err := h.decodeQueryVectors(raw, &req); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	if req.Queries == nil { // "query_vectors": null and no queries
		return req, http.StatusUnprocessableEntity, reqErr(typeMissing, `field "queries" is required (or "query_vectors")`, "queries")
	}
	if t, ok := raw["topk"]; ok && string(t) != "null" {
		k, err := intField("topk", t)
		if err != nil {
			return req, http.StatusUnprocessableEntity, err
		}
		switch {
		case k == 0 && h.o.Compat == CompatSearchR1:
			// The original's "if not request.topk": 0 is the server's default.
		case k < 1 || k > h.o.MaxTopK:
			return req, http.StatusUnprocessableEntity, reqErr(typeValueError,
				fmt.Sprintf(`field "topk" is %d, must be in [1, %d]`, k, h.o.MaxTopK), "topk")
		default:
			req.TopK = &k
		}
	}
	if h.o.Compat == CompatSearchR1 {
		for _, f := range []string{"topk_retrieval", "topk_rerank"} {
			if _, ok := raw[f]; ok {
				return req, http.StatusUnprocessableEntity, limitErr(ErrNoReranker, []any{f},
					`field %q is the retrieve-and-rerank server's; start the server with a reranker (serve --reranker)`, f)
			}
		}
	}
	if req.ReturnScores, err = returnScores(raw); err != nil {
		return req, http.StatusUnprocessableEntity, err
	}
	return req, 0, nil
}

// intField reads the integer field name of a request from its JSON v.
func intField(name string, v json.RawMessage) (int, error) {
	var k int
	if err := json.Unmarshal(v, &k); err != nil {
		typ := typeIntType
		var f float64
		if json.Unmarshal(v, &f) == nil && f != float64(int64(f)) {
			typ = typeIntFromFloat
		}
		return 0, reqErr(typ, fmt.Sprintf("field %q must be an integer", name), name)
	}
	return k, nil
}

// returnScores reads the optional boolean "return_scores" (false when missing or null).
func returnScores(raw map[string]json.RawMessage) (bool, error) {
	var b bool
	if rs, ok := raw["return_scores"]; ok && string(rs) != "null" {
		if err := json.Unmarshal(rs, &b); err != nil {
			return false, reqErr(typeBoolType, `field "return_scores" must be a boolean`, "return_scores")
		}
	}
	return b, nil
}

// readObject reads a JSON object body of at most limit bytes as raw fields. Field
// presence and types are checked by the caller on this raw view, so "queries": "x" or a
// missing field get 422 and only malformed JSON gets 400.
func readObject(w http.ResponseWriter, r *http.Request, limit int64) (map[string]json.RawMessage, int, error) {
	if o, ok := w.(*observed); ok {
		w = o.ResponseWriter // the server's own, which MaxBytesReader tells to close the connection
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, http.StatusRequestEntityTooLarge, &RequestError{Loc: []any{"body"}, Type: typeTooLarge,
				Msg: fmt.Sprintf("request body over %d bytes", limit), Err: ErrBodyTooLarge}
		}
		return nil, http.StatusBadRequest, reqErr(typeReadFailed, fmt.Sprintf("read body: %v", err))
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&raw); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, http.StatusUnprocessableEntity, reqErr(typeNotObject, "body must be a JSON object")
		}
		at := len(body)
		var se *json.SyntaxError
		if errors.As(err, &se) {
			at = int(se.Offset)
		}
		return nil, http.StatusBadRequest, reqErr(typeJSONInvalid, fmt.Sprintf("malformed JSON: %v", err), at)
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		// (Decoder.More alone lets a stray "}" or "]" after the object through.)
		return nil, http.StatusBadRequest, reqErr(typeJSONInvalid, "malformed JSON: data after the object", len(body)-len(rest))
	}
	if raw == nil {
		return nil, http.StatusUnprocessableEntity, reqErr(typeNotObject, "body must be a JSON object")
	}
	return raw, 0, nil
}

// checkQueries applies MaxQueries and MaxQueryBytes.
func (h *retrieveHandler) checkQueries(qs []string) error {
	if len(qs) > h.o.MaxQueries {
		return limitErr(ErrTooManyQueries, []any{"queries"}, `field "queries" has %d items, at most %d allowed (the server's max-queries limit)`, len(qs), h.o.MaxQueries)
	}
	for i, q := range qs {
		if len(q) > h.o.MaxQueryBytes {
			return limitErr(ErrQueryTooLong, []any{"queries", i}, "queries[%d] is %d bytes, the per-query cap is %d bytes", i, len(q), h.o.MaxQueryBytes)
		}
	}
	return nil
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

// fail answers err with status, its kind of failure recorded for the Observer.
func fail(w http.ResponseWriter, status int, err error) {
	setKind(w, errorKind(status, err))
	writeError(w, status, err.Error())
}
