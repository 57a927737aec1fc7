package vectorstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/internal/httpretry"
)

// EmbeddingHTTPError is the error of a request the embedding server refused: its status
// and the message of its error body ({"error":{"message":...}} as OpenAI, Ollama, vLLM and
// llama.cpp send it, {"error":"..."} as TEI does, or the start of the raw body).
// errors.Is(err, ErrEmbeddingHTTP) holds for it.
type EmbeddingHTTPError struct {
	URL        string
	StatusCode int
	Message    string // the server's message
	Type       string // the server's error type or code, when it sends one
	Attempts   int    // requests made, retries included
}

// Error names the URL, the status, the server's message and how many attempts were made.
func (e *EmbeddingHTTPError) Error() string {
	s := fmt.Sprintf("vectorstore: embedding server %s answered %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Type != "" {
		s += " (" + e.Type + ")"
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s
}

// Is makes errors.Is(err, ErrEmbeddingHTTP) true.
func (e *EmbeddingHTTPError) Is(target error) bool { return target == ErrEmbeddingHTTP }

// Caps and defaults of the hosted embedder.
const (
	// openAIMaxBatch is the most texts sent in one request (OpenAI's limit of inputs per
	// request); a larger BatchSize is lowered to it.
	openAIMaxBatch = 2048
	// openAIDefaultBaseURL is OpenAI's API root.
	openAIDefaultBaseURL = "https://api.openai.com/v1"

	openAIDefaultBatch   = 64
	openAIDefaultTimeout = 60 * time.Second
	openAIDefaultRetries = 4
	openAIDefaultBackoff = 500 * time.Millisecond
	openAIMaxBackoff     = 30 * time.Second
	openAIMaxRetryAfter  = 2 * time.Minute
	openAIMaxErrorBody   = 64 << 10
)

// OpenAIOptions configures an [OpenAIEmbedder]. Only Model is required; the zero value of
// every other field is a sensible default.
type OpenAIOptions struct {
	// BaseURL is the API root the embedder POSTs BaseURL+"/embeddings" to: "" = OpenAI
	// (https://api.openai.com/v1); Ollama "http://localhost:11434/v1", vLLM and llama.cpp
	// "http://host:8000/v1", TEI "http://host:8080/v1". A URL already ending in
	// "/embeddings" is used as is.
	BaseURL string
	// Model is the server's model name ("text-embedding-3-small", "nomic-embed-text", ...).
	Model string
	// APIKey is sent as "Authorization: Bearer <key>"; "" sends none. It is never part of
	// the embedder's ID or its errors.
	APIKey string
	// Dim is the vector length the server must return; 0 = learn it from a one-text probe
	// request made by NewOpenAIEmbedder. Every response is checked against it.
	Dim int
	// RequestDimensions sends Dim as the request's "dimensions" field (OpenAI's
	// text-embedding-3 models shorten their vectors to it); needs Dim > 0.
	RequestDimensions bool
	// BatchSize is the number of texts per request; 0 = 64, at most OpenAIMaxBatch.
	BatchSize int
	// Timeout bounds each request (each attempt); 0 = 60s.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 408, 429, 500, 502, 503 or
	// 504 answer, a timeout or a transport error, with exponential backoff and jitter (or
	// the server's Retry-After); 0 = 4, negative = never.
	MaxRetries int
	// RetryBaseDelay is the first backoff; it doubles per retry up to 30s; 0 = 500ms.
	RetryBaseDelay time.Duration
	// HTTPClient sends the requests; nil = a client of its own (timeouts come from Timeout).
	HTTPClient *http.Client
	// Headers are extra request headers (for example "api-key" for Azure OpenAI).
	Headers map[string]string
	// QueryPrefix is prepended to search queries (EmbedQuery), PassagePrefix to everything
	// Embed embeds, for asymmetric models served behind the endpoint (E5: "query: " and
	// "passage: "). A non-empty PassagePrefix is part of the ID.
	QueryPrefix, PassagePrefix string
	// Logger receives a warning per retried request; nil = slog.Default().
	Logger *slog.Logger
}

// OpenAIEmbedder is an [Embedder] backed by an OpenAI-compatible POST /v1/embeddings
// endpoint (OpenAI, Ollama, vLLM, llama.cpp's server and Hugging Face TEI all speak it).
// Texts go in batches of BatchSize as the request's "input" array and come back in the
// order of the response's "index" fields; 429 and 5xx answers are retried with exponential
// backoff and jitter; every vector's length is checked. Its ID is "openai:" + model + "/" +
// dimension (plus the passage prefix when one is set), so a store refuses vectors from
// another model or size. It is safe for concurrent use.
type OpenAIEmbedder struct {
	url     string
	opts    OpenAIOptions
	client  *http.Client
	dim     int
	batch   int
	retries int
	backoff time.Duration
	timeout time.Duration
	log     *slog.Logger
}

var (
	_ Embedder           = (*OpenAIEmbedder)(nil)
	_ QueryEmbedder      = (*OpenAIEmbedder)(nil)
	_ BatchQueryEmbedder = (*OpenAIEmbedder)(nil)
)

// NewOpenAIEmbedder checks opts and, when opts.Dim is 0, asks the server for one embedding
// to learn the dimension (so the embedder needs the server up when it is built).
func NewOpenAIEmbedder(ctx context.Context, opts OpenAIOptions) (*OpenAIEmbedder, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, fmt.Errorf("%w: Model is required", errEmbedderConfig)
	}
	if opts.Dim < 0 || opts.BatchSize < 0 || opts.Timeout < 0 || opts.RetryBaseDelay < 0 {
		return nil, fmt.Errorf("%w: negative Dim, BatchSize, Timeout or RetryBaseDelay", errEmbedderConfig)
	}
	if opts.RequestDimensions && opts.Dim == 0 {
		return nil, fmt.Errorf("%w: RequestDimensions needs Dim", errEmbedderConfig)
	}
	base := strings.TrimSpace(opts.BaseURL)
	if base == "" {
		base = openAIDefaultBaseURL
	}
	if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("%w: BaseURL %q is not an http(s) URL", errEmbedderConfig, base)
	}
	url := strings.TrimRight(base, "/")
	if !strings.HasSuffix(url, "/embeddings") {
		url += "/embeddings"
	}
	e := &OpenAIEmbedder{url: url, opts: opts, client: opts.HTTPClient, dim: opts.Dim, log: opts.Logger}
	e.batch = opts.BatchSize
	if e.batch == 0 {
		e.batch = openAIDefaultBatch
	}
	e.batch = min(e.batch, openAIMaxBatch)
	e.retries = opts.MaxRetries
	switch {
	case e.retries == 0:
		e.retries = openAIDefaultRetries
	case e.retries < 0:
		e.retries = 0
	}
	e.backoff = opts.RetryBaseDelay
	if e.backoff == 0 {
		e.backoff = openAIDefaultBackoff
	}
	e.timeout = opts.Timeout
	if e.timeout == 0 {
		e.timeout = openAIDefaultTimeout
	}
	if e.client == nil {
		e.client = &http.Client{}
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.dim == 0 {
		vecs, err := e.request(ctx, []string{"dimension probe"}, 0)
		if err != nil {
			return nil, fmt.Errorf("vectorstore: learning the dimension of %q: %w", opts.Model, err)
		}
		if len(vecs[0]) == 0 {
			return nil, fmt.Errorf("%w: the server returned an empty vector", ErrEmbeddingResponse)
		}
		e.dim = len(vecs[0])
	}
	return e, nil
}

// ID is "openai:<model>/<dim>", with "+passage=<quoted prefix>" appended when a passage prefix is
// set. It never holds the API key or the URL.
func (e *OpenAIEmbedder) ID() string {
	id := fmt.Sprintf("openai:%s/%d", e.opts.Model, e.dim)
	if e.opts.PassagePrefix != "" {
		id += "+passage=" + strconv.Quote(e.opts.PassagePrefix)
	}
	return id
}

// Dim is the vector length.
func (e *OpenAIEmbedder) Dim() int { return e.dim }

// Embed returns one vector per text, in order, each with the passage prefix.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.opts.PassagePrefix, texts)
}

func (e *OpenAIEmbedder) embedWith(ctx context.Context, prefix string, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for lo := 0; lo < len(texts); lo += e.batch {
		batch := texts[lo:min(lo+e.batch, len(texts))]
		if p := prefix; p != "" {
			pre := make([]string, len(batch))
			for i, t := range batch {
				pre[i] = p + t
			}
			batch = pre
		}
		vecs, err := e.request(ctx, batch, e.dim)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// EmbedQuery embeds a search query with the query prefix.
func (e *OpenAIEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	vecs, err := e.request(ctx, []string{e.opts.QueryPrefix + text}, e.dim)
	if err != nil {
		return nil, err
	}
	return vecs[0], nil
}

// EmbedQueries embeds search queries with the query prefix, in batches like Embed.
func (e *OpenAIEmbedder) EmbedQueries(ctx context.Context, texts []string) ([][]float32, error) {
	return e.embedWith(ctx, e.opts.QueryPrefix, texts)
}

// openAIRequest is the body of POST /embeddings.
type openAIRequest struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// openAIResponse is the part of the answer the embedder reads.
type openAIResponse struct {
	Data []struct {
		Index     *int            `json:"index"`
		Embedding json.RawMessage `json:"embedding"`
	} `json:"data"`
}

// request embeds one batch, retrying as the options allow; dim 0 accepts any length (the
// probe).
func (e *OpenAIEmbedder) request(ctx context.Context, inputs []string, dim int) ([][]float32, error) {
	req := openAIRequest{Model: e.opts.Model, Input: inputs, EncodingFormat: "float"}
	if e.opts.RequestDimensions {
		req.Dimensions = e.opts.Dim
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		vecs, retryAfter, err := e.attempt(ctx, body, len(inputs), dim)
		if err == nil {
			return vecs, nil
		}
		var he *EmbeddingHTTPError
		if errors.As(err, &he) {
			he.Attempts = attempt
		}
		if retryAfter < 0 || attempt > e.retries || ctx.Err() != nil {
			return nil, err
		}
		wait := httpretry.Backoff{Base: e.backoff, Max: openAIMaxBackoff, MaxRetryAfter: openAIMaxRetryAfter}.Wait(attempt, retryAfter)
		e.log.Warn("vectorstore: retrying embeddings request", "url", e.url, "attempt", attempt, "wait", wait, "err", err)
		if err := httpretry.Sleep(ctx, wait, err); err != nil {
			return nil, err
		}
	}
}

// attempt makes one request. retryAfter is -1 when the error must not be retried, 0 when it
// may be after the backoff, and the server's Retry-After when it sent one.
func (e *OpenAIEmbedder) attempt(ctx context.Context, body []byte, n, dim int) (vecs [][]float32, retryAfter time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return nil, -1, fmt.Errorf("%w: %v", errEmbedderConfig, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	if e.opts.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+e.opts.APIKey)
	}
	for k, v := range e.opts.Headers {
		hreq.Header.Set(k, v)
	}
	resp, err := e.client.Do(hreq)
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		if actx.Err() != nil {
			return nil, 0, fmt.Errorf("vectorstore: embeddings request to %s timed out after %v: %w", e.url, e.timeout, context.DeadlineExceeded)
		}
		return nil, 0, fmt.Errorf("vectorstore: embeddings request to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, typ := openAIErrorMessage(io.LimitReader(resp.Body, openAIMaxErrorBody))
		herr := &EmbeddingHTTPError{URL: e.url, StatusCode: resp.StatusCode, Message: msg, Type: typ}
		switch resp.StatusCode {
		case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
			return nil, httpretry.RetryAfter(resp.Header.Get("Retry-After")), herr
		}
		return nil, -1, herr
	}
	// A response holds n vectors of dim floats, about 12 bytes each as JSON text.
	limit := int64(64 << 20)
	if dim > 0 {
		limit = max(limit, int64(n)*int64(dim)*40)
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		if ctx.Err() != nil {
			return nil, -1, ctx.Err()
		}
		if actx.Err() != nil {
			return nil, 0, fmt.Errorf("vectorstore: embeddings response from %s timed out after %v: %w", e.url, e.timeout, context.DeadlineExceeded)
		}
		return nil, 0, fmt.Errorf("vectorstore: reading the embeddings response of %s: %w", e.url, err)
	}
	if int64(len(raw)) > limit {
		return nil, -1, fmt.Errorf("%w: response over %d bytes", ErrEmbeddingResponse, limit)
	}
	vecs, err = decodeOpenAIResponse(raw, n, dim)
	if err != nil {
		return nil, -1, err
	}
	return vecs, 0, nil
}

// decodeOpenAIResponse returns the n vectors of raw in input order.
func decodeOpenAIResponse(raw []byte, n, dim int) ([][]float32, error) {
	var r openAIResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrEmbeddingResponse, err)
	}
	if len(r.Data) != n {
		return nil, fmt.Errorf("%w: %d embeddings for %d inputs", ErrEmbeddingResponse, len(r.Data), n)
	}
	out := make([][]float32, n)
	for pos, d := range r.Data {
		i := pos // a server that omits "index" answers in order
		if d.Index != nil {
			i = *d.Index
		}
		if i < 0 || i >= n {
			return nil, fmt.Errorf("%w: index %d out of range for %d inputs", ErrEmbeddingResponse, i, n)
		}
		if out[i] != nil {
			return nil, fmt.Errorf("%w: index %d appears twice", ErrEmbeddingResponse, i)
		}
		v, err := decodeEmbedding(d.Embedding)
		if err != nil {
			return nil, fmt.Errorf("%w: embedding %d: %v", ErrEmbeddingResponse, i, err)
		}
		if dim > 0 && len(v) != dim {
			return nil, fmt.Errorf("%w: the server returned %d values for input %d, the embedder's dimension is %d", ErrDimMismatch, len(v), i, dim)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, fmt.Errorf("%w: embedding %d holds NaN or Inf", ErrEmbeddingResponse, i)
			}
		}
		out[i] = v
	}
	return out, nil
}

// decodeEmbedding reads a JSON array of numbers or a base64 string of little-endian
// float32 (what servers send for encoding_format "base64").
func decodeEmbedding(raw json.RawMessage) ([]float32, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, err
		}
		if len(b)%4 != 0 {
			return nil, fmt.Errorf("base64 embedding of %d bytes", len(b))
		}
		v := make([]float32, len(b)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
		}
		return v, nil
	}
	var v []float32
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errors.New("no embedding")
	}
	return v, nil
}

// openAIErrorMessage extracts the message and type from an error body in the shapes the
// OpenAI-compatible servers use, or returns the start of the body.
func openAIErrorMessage(r io.Reader) (msg, typ string) {
	raw, _ := io.ReadAll(r)
	if msg, typ, ok := httpretry.ErrorMessage(raw); ok {
		return msg, typ
	}
	s := strings.TrimSpace(string(raw))
	if len(s) > 512 {
		s = s[:512] + "..."
	}
	return strings.ToValidUTF8(s, "?"), ""
}

func init() { RegisterEmbedder("openai:", loadOpenAI) }

// loadOpenAI loads "openai:MODEL/DIM", with "+passage=<quoted prefix>" when the identity
// records one, from the server $OPENAI_BASE_URL (default the OpenAI API) with the key
// $OPENAI_API_KEY.
func loadOpenAI(ctx context.Context, name string, o LoadOptions) (Embedder, error) {
	if err := onlyONNXDevice(name, o.ONNX); err != nil {
		return nil, err
	}
	rest := strings.TrimPrefix(name, "openai:")
	opts := OpenAIOptions{BaseURL: environ.Get(environ.OpenAIBaseURL), APIKey: environ.Get(environ.OpenAIKey)}
	if r, quoted, ok := strings.Cut(rest, "+passage="); ok {
		p, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("%w: embedder %q: passage prefix %s is not a quoted string", ErrBadConfig, name, quoted)
		}
		rest, opts.PassagePrefix = r, p
	}
	i := strings.LastIndex(rest, "/")
	dim, err := strconv.Atoi(rest[i+1:])
	if i <= 0 || err != nil || dim <= 0 {
		return nil, fmt.Errorf("%w: embedder %q: want openai:MODEL/DIM", ErrBadConfig, name)
	}
	opts.Model, opts.Dim = rest[:i], dim
	return NewOpenAIEmbedder(ctx, opts)
}
