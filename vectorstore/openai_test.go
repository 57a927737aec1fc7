package vectorstore

import (
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
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/httpretry"
)

// fakeEmbeddingServer speaks POST /v1/embeddings: each input's vector is derived from its
// text (so tests can check order), with knobs for the failure modes of real servers.
type fakeEmbeddingServer struct {
	t   *testing.T
	dim int

	mu       sync.Mutex
	requests []openAIRequest
	headers  []http.Header

	// fail, when set, may answer a request itself (return true) before the normal answer.
	fail func(w http.ResponseWriter, r *http.Request, n int) bool
	// reverse answers with the data in reverse order (indexes still right).
	reverse bool
	// dimFor overrides the vector length of a response.
	dimFor func(n int) int
	// base64 sends embeddings as base64 strings.
	base64 bool
	calls  atomic.Int32
}

// fakeVec is the vector the fake server returns for text.
func fakeVec(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)) + float32(i)/100
	}
	if len(text) > 0 {
		v[0] = float32(text[len(text)-1])
	}
	return v
}

func (s *fakeEmbeddingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := int(s.calls.Add(1))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"no route","type":"invalid_request_error"}}`, http.StatusNotFound)
		return
	}
	var req openAIRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		s.t.Errorf("request body: %v", err)
		return
	}
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.headers = append(s.headers, r.Header.Clone())
	s.mu.Unlock()
	if s.fail != nil && s.fail(w, r, n) {
		return
	}
	dim := s.dim
	if s.dimFor != nil {
		dim = s.dimFor(n)
	}
	type item struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data := make([]item, len(req.Input))
	for i, text := range req.Input {
		v := fakeVec(text, dim)
		var emb any = v
		if s.base64 {
			b := make([]byte, 4*len(v))
			for j, x := range v {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(x))
			}
			emb = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = item{"embedding", i, emb}
	}
	if s.reverse {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": req.Model})
}

func newFakeEmbeddingServer(t *testing.T, dim int) (*fakeEmbeddingServer, *httptest.Server) {
	s := &fakeEmbeddingServer{t: t, dim: dim}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func quietOpts(ts *httptest.Server) OpenAIOptions {
	return OpenAIOptions{BaseURL: ts.URL + "/v1", Model: "test-embed", RetryBaseDelay: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)}
}

func TestOpenAIEmbedderBatchesAndOrder(t *testing.T) {
	s, ts := newFakeEmbeddingServer(t, 5)
	s.reverse = true // out-of-order indexes must be put back in input order
	ctx := context.Background()
	opts := quietOpts(ts)
	opts.APIKey = "sk-secret"
	opts.BatchSize = 3
	opts.Headers = map[string]string{"X-Extra": "1"}
	e, err := NewOpenAIEmbedder(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if e.Dim() != 5 {
		t.Fatalf("Dim %d, want 5 (learned by the probe)", e.Dim())
	}
	if id := e.ID(); id != "openai:test-embed/5" || strings.Contains(id, "secret") {
		t.Fatalf("ID %q", id)
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, text := range texts {
		want := fakeVec(text, 5)
		for j := range want {
			if vecs[i][j] != want[j] {
				t.Fatalf("vector %d = %v, want %v (order lost?)", i, vecs[i], want)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The probe, then batches of 3, 3 and 1.
	if len(s.requests) != 4 {
		t.Fatalf("%d requests, want 4", len(s.requests))
	}
	for i, want := range []int{1, 3, 3, 1} {
		if got := len(s.requests[i].Input); got != want {
			t.Errorf("request %d has %d inputs, want %d", i, got, want)
		}
		if s.requests[i].Model != "test-embed" || s.requests[i].EncodingFormat != "float" {
			t.Errorf("request %d: %+v", i, s.requests[i])
		}
		if s.requests[i].Dimensions != 0 {
			t.Errorf("request %d sent dimensions %d", i, s.requests[i].Dimensions)
		}
		if got := s.headers[i].Get("Authorization"); got != "Bearer sk-secret" {
			t.Errorf("request %d Authorization %q", i, got)
		}
		if got := s.headers[i].Get("X-Extra"); got != "1" {
			t.Errorf("request %d X-Extra %q", i, got)
		}
	}
}

func TestOpenAIEmbedderBase64AndDimensions(t *testing.T) {
	s, ts := newFakeEmbeddingServer(t, 4)
	s.base64 = true
	opts := quietOpts(ts)
	opts.Dim = 4
	opts.RequestDimensions = true
	e, err := NewOpenAIEmbedder(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	vecs, err := e.Embed(context.Background(), []string{"xyz"})
	if err != nil {
		t.Fatal(err)
	}
	if want := fakeVec("xyz", 4); vecs[0][0] != want[0] || vecs[0][3] != want[3] {
		t.Fatalf("base64 vector %v, want %v", vecs[0], want)
	}
	if s.calls.Load() != 1 {
		t.Fatalf("%d calls: a known Dim needs no probe", s.calls.Load())
	}
	if s.requests[0].Dimensions != 4 {
		t.Fatalf("dimensions %d, want 4", s.requests[0].Dimensions)
	}
}

func TestOpenAIEmbedderPrefixes(t *testing.T) {
	s, ts := newFakeEmbeddingServer(t, 3)
	opts := quietOpts(ts)
	opts.Dim = 3
	opts.QueryPrefix, opts.PassagePrefix = "query: ", "passage: "
	e, err := NewOpenAIEmbedder(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"doc"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.EmbedQuery(context.Background(), "q"); err != nil {
		t.Fatal(err)
	}
	if got := s.requests[0].Input[0]; got != "passage: doc" {
		t.Errorf("Embed sent %q", got)
	}
	if got := s.requests[1].Input[0]; got != "query: q" {
		t.Errorf("EmbedQuery sent %q", got)
	}
	vecs, err := EmbedQueries(context.Background(), e, []string{"a", "bb"})
	if err != nil || len(vecs) != 2 {
		t.Fatalf("EmbedQueries: %v, %v", vecs, err)
	}
	if got := s.requests[2].Input; len(s.requests) != 3 || len(got) != 2 || got[0] != "query: a" || got[1] != "query: bb" {
		t.Errorf("EmbedQueries sent %d requests, last %q (want one batch, prefixed)", len(s.requests), got)
	}
	if id := e.ID(); id != `openai:test-embed/3+passage="passage: "` {
		t.Errorf("ID %q", id)
	}
}

// TestOpenAIEmbedderErrors drives each failure mode through the protocol: error bodies in
// the shapes OpenAI/Ollama/vLLM/llama.cpp and TEI send, 429 then success (with Retry-After),
// 5xx until the retries run out, a wrong dimension, broken responses and timeouts.
func TestOpenAIEmbedderErrors(t *testing.T) {
	ctx := context.Background()
	status := func(code int, body string, hdr ...string) func(http.ResponseWriter, *http.Request, int) bool {
		return func(w http.ResponseWriter, r *http.Request, n int) bool {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(code)
			io.WriteString(w, body)
			return true
		}
	}
	cases := []struct {
		name      string
		fail      func(http.ResponseWriter, *http.Request, int) bool
		dimFor    func(int) int
		retries   int
		timeout   time.Duration
		wantIs    error
		wantCode  int
		wantMsg   string
		wantCalls int32
	}{
		{name: "openai 401 not retried", fail: status(401, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`),
			wantIs: ErrEmbeddingHTTP, wantCode: 401, wantMsg: "Incorrect API key provided", wantCalls: 1},
		{name: "ollama 404 model", fail: status(404, `{"error":{"message":"model \"nomic\" not found, try pulling it first","type":"api_error","param":null,"code":null}}`),
			wantIs: ErrEmbeddingHTTP, wantCode: 404, wantMsg: "try pulling it first", wantCalls: 1},
		{name: "tei 413", fail: status(413, `{"error":"batch size 5000 > maximum allowed batch size 32","error_type":"Validation"}`),
			wantIs: ErrEmbeddingHTTP, wantCode: 413, wantMsg: "maximum allowed batch size 32", wantCalls: 1},
		{name: "vllm top-level message", fail: status(400, `{"object":"error","message":"This model's maximum context length is 512 tokens","type":"BadRequestError","code":400}`),
			wantIs: ErrEmbeddingHTTP, wantCode: 400, wantMsg: "maximum context length is 512", wantCalls: 1},
		{name: "plain text body", fail: status(400, "bad things happened"),
			wantIs: ErrEmbeddingHTTP, wantCode: 400, wantMsg: "bad things happened", wantCalls: 1},
		{name: "500 exhausts retries", fail: status(500, `{"error":{"message":"overloaded","type":"server_error"}}`), retries: 2,
			wantIs: ErrEmbeddingHTTP, wantCode: 500, wantMsg: "after 3 attempts", wantCalls: 3},
		{name: "429 then success", retries: 3, wantCalls: 3,
			fail: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n > 2 {
					return false
				}
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`)
				return true
			}},
		{name: "503 then success", retries: 1, wantCalls: 2,
			fail: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n > 1 {
					return false
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			}},
		{name: "wrong dimension", dimFor: func(int) int { return 7 }, wantIs: ErrDimMismatch, wantCalls: 1},
		{name: "too few vectors", fail: status(200, `{"object":"list","data":[]}`), wantIs: ErrEmbeddingResponse, wantCalls: 1},
		{name: "index out of range", fail: status(200, `{"data":[{"index":3,"embedding":[1,2,3,4]}]}`), wantIs: ErrEmbeddingResponse, wantCalls: 1},
		{name: "not json", fail: status(200, `<html>proxy error</html>`), wantIs: ErrEmbeddingResponse, wantCalls: 1},
		{name: "timeout retried then fails", retries: 1, timeout: 50 * time.Millisecond, wantIs: context.DeadlineExceeded, wantCalls: 2,
			fail: func(w http.ResponseWriter, r *http.Request, n int) bool {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
				return true
			}},
		{name: "timeout then success", retries: 2, timeout: 50 * time.Millisecond, wantCalls: 2,
			fail: func(w http.ResponseWriter, r *http.Request, n int) bool {
				if n > 1 {
					return false
				}
				<-r.Context().Done()
				return true
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ts := newFakeEmbeddingServer(t, 4)
			s.fail, s.dimFor = c.fail, c.dimFor
			opts := quietOpts(ts)
			opts.Dim = 4
			opts.MaxRetries = c.retries
			if c.retries == 0 {
				opts.MaxRetries = -1
			}
			opts.Timeout = c.timeout
			e, err := NewOpenAIEmbedder(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			vecs, err := e.Embed(ctx, []string{"one", "two"})
			if got := s.calls.Load(); got != c.wantCalls {
				t.Errorf("%d requests, want %d", got, c.wantCalls)
			}
			if c.wantIs == nil {
				if err != nil || len(vecs) != 2 || vecs[1][0] != 'o' {
					t.Fatalf("got %v, %v", vecs, err)
				}
				return
			}
			if !errors.Is(err, c.wantIs) {
				t.Fatalf("error %v, want %v", err, c.wantIs)
			}
			if strings.Contains(err.Error(), "sk-") {
				t.Fatalf("error leaks a key: %v", err)
			}
			if c.wantCode != 0 {
				var he *EmbeddingHTTPError
				if !errors.As(err, &he) || he.StatusCode != c.wantCode {
					t.Fatalf("error %v, want an EmbeddingHTTPError with status %d", err, c.wantCode)
				}
			}
			if !strings.Contains(err.Error(), c.wantMsg) {
				t.Fatalf("error %q does not say %q", err, c.wantMsg)
			}
		})
	}
}

// TestOpenAIEmbedderRetryAfter checks that a Retry-After of 1s is honoured (the backoff
// alone would be a millisecond) and that cancelling the context ends the wait.
func TestOpenAIEmbedderRetryAfter(t *testing.T) {
	s, ts := newFakeEmbeddingServer(t, 2)
	s.fail = func(w http.ResponseWriter, r *http.Request, n int) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}
	opts := quietOpts(ts)
	opts.Dim = 2
	e, err := NewOpenAIEmbedder(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d < 900*time.Millisecond {
		t.Fatalf("retried after %v, before the server's Retry-After of 1s", d)
	}

	s.calls.Store(0)
	s.fail = func(w http.ResponseWriter, r *http.Request, n int) bool {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusTooManyRequests)
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	_, err = e.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want the context's deadline", err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Fatalf("cancelled wait took %v", d)
	}
}

func TestOpenAIEmbedderOptions(t *testing.T) {
	ctx := context.Background()
	for _, o := range []OpenAIOptions{
		{},
		{Model: "m", BaseURL: "localhost:11434"},
		{Model: "m", Dim: -1},
		{Model: "m", BatchSize: -5},
		{Model: "m", RequestDimensions: true},
	} {
		if _, err := NewOpenAIEmbedder(ctx, o); !errors.Is(err, errEmbedderConfig) {
			t.Errorf("%+v: error %v, want errEmbedderConfig", o, err)
		}
	}
	// Batch size capped; a URL that already names the endpoint is used as is.
	s, ts := newFakeEmbeddingServer(t, 2)
	e, err := NewOpenAIEmbedder(ctx, OpenAIOptions{BaseURL: ts.URL + "/v1/embeddings/", Model: "m", Dim: 2, BatchSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if e.batch != openAIMaxBatch {
		t.Fatalf("batch %d, want the cap %d", e.batch, openAIMaxBatch)
	}
	texts := make([]string, openAIMaxBatch+5)
	for i := range texts {
		texts[i] = fmt.Sprint(i)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil || len(vecs) != len(texts) {
		t.Fatalf("%d vectors, %v", len(vecs), err)
	}
	if len(s.requests) != 2 || len(s.requests[0].Input) != openAIMaxBatch {
		t.Fatalf("%d requests, first of %d inputs", len(s.requests), len(s.requests[0].Input))
	}
	if v := vecs[len(texts)-1]; v[0] != float32(texts[len(texts)-1][len(texts[len(texts)-1])-1]) {
		t.Fatalf("last vector %v", v)
	}
	// Empty input: no request.
	s.calls.Store(0)
	if vecs, err := e.Embed(ctx, nil); err != nil || len(vecs) != 0 || s.calls.Load() != 0 {
		t.Fatalf("empty input: %v, %v, %d calls", vecs, err, s.calls.Load())
	}
}

func TestParseRetryAfter(t *testing.T) {
	if d := httpretry.RetryAfter("2"); d != 2*time.Second {
		t.Errorf("2 -> %v", d)
	}
	if d := httpretry.RetryAfter("1.5"); d != 1500*time.Millisecond {
		t.Errorf("1.5 -> %v", d)
	}
	if d := httpretry.RetryAfter(""); d != 0 {
		t.Errorf("empty -> %v", d)
	}
	if d := httpretry.RetryAfter("soon"); d != 0 {
		t.Errorf("soon -> %v", d)
	}
	future := time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)
	if d := httpretry.RetryAfter(future); d < time.Second || d > 4*time.Second {
		t.Errorf("%s -> %v", future, d)
	}
}

// FuzzOpenAIErrorMessage: any error body yields valid UTF-8 of bounded length, never a panic.
func FuzzOpenAIErrorMessage(f *testing.F) {
	for _, s := range []string{`{"error":{"message":"x","code":429}}`, `{"error":"y"}`, `{"message":"z"}`, `{"error":null}`, "\xff\xfe", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		msg, _ := openAIErrorMessage(strings.NewReader(body))
		if len(msg) > 2*openAIMaxErrorBody {
			t.Fatalf("message of %d bytes", len(msg))
		}
	})
}

// queryOnly is an Embedder with EmbedQuery but no batch form.
type queryOnly struct{ *HashEmbedder }

func (q queryOnly) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	v, err := q.Embed(ctx, []string{"q " + text})
	if err != nil {
		return nil, err
	}
	return v[0], nil
}

func TestEmbedQueriesFallbacks(t *testing.T) {
	ctx := context.Background()
	h := NewHashEmbedder(16)
	texts := []string{"alpha beta", "gamma"}
	got, err := EmbedQueries(ctx, h, texts)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := h.Embed(ctx, texts)
	for i := range texts {
		if !sameVecs(got[i], want[i]) {
			t.Fatalf("symmetric embedder: query %d differs from Embed", i)
		}
	}
	got, err = EmbedQueries(ctx, queryOnly{h}, texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		want, _ := h.Embed(ctx, []string{"q " + text})
		if !sameVecs(got[i], want[0]) {
			t.Fatalf("QueryEmbedder: query %d was not embedded through EmbedQuery", i)
		}
	}
}

func sameVecs(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
