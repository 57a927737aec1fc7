package rerank

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/agentmem/memory/internal/httpretry"
)

// LLMHTTPError is the error of a request the chat server refused: its status and the
// message of its error body. errors.Is(err, ErrLLMHTTP) holds for it.
type LLMHTTPError struct {
	URL        string
	StatusCode int
	Message    string // the server's message ({"error":{"message":...}}, or the body's start)
	Attempts   int    // requests made, retries included
}

// Error names the URL, the status, the server's message and the attempts made.
func (e *LLMHTTPError) Error() string {
	s := fmt.Sprintf("rerank: chat server %s answered %d %s", e.URL, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" after %d attempts", e.Attempts)
	}
	return s
}

// Is makes errors.Is(err, ErrLLMHTTP) true.
func (e *LLMHTTPError) Is(target error) bool { return target == ErrLLMHTTP }

// LLMMode is how an [LLMReranker] asks the model.
type LLMMode string

const (
	// Pointwise asks for a 0-10 relevance grade of each passage, one request per passage
	// (Concurrency at a time). The grade g becomes the logit of (g+0.5)/11: 10 is a
	// probability of 0.95, 5 of 0.5, 0 of 0.05.
	Pointwise LLMMode = "pointwise"
	// Listwise sends every passage in one request, numbered [1]..[n], and asks for their
	// order ("[2] > [1] > [3]"). Passages the reply leaves out follow the ones it ranks,
	// in their given order. Rank r (0-based) of n becomes the logit of 1-(r+0.5)/n.
	Listwise LLMMode = "listwise"
)

// Defaults and caps of the LLM reranker.
const (
	// LLMDefaultBaseURL is OpenAI's API root.
	LLMDefaultBaseURL = "https://api.openai.com/v1"

	llmDefaultTimeout       = 60 * time.Second
	llmDefaultRetries       = 2
	llmDefaultBackoff       = 500 * time.Millisecond
	llmMaxBackoff           = 30 * time.Second
	llmDefaultMaxPassages   = 100
	llmDefaultPassageBytes  = 2000
	llmDefaultQueryBytes    = 1000
	llmDefaultConcurrency   = 4
	llmDefaultResponseBytes = 1 << 20
	llmMaxErrorBody         = 64 << 10
)

// LLMOptions configures an [LLMReranker]. Only Model is required.
type LLMOptions struct {
	// BaseURL is the API root the reranker POSTs BaseURL+"/chat/completions" to: "" =
	// OpenAI; Ollama "http://localhost:11434/v1", vLLM and llama.cpp "http://host:8000/v1".
	// A URL already ending in "/chat/completions" is used as is.
	BaseURL string
	// Model is the server's model name.
	Model string
	// APIKey is sent as "Authorization: Bearer <key>"; "" sends none. It is never part of
	// an error.
	APIKey string
	// Headers are extra request headers.
	Headers map[string]string
	// Mode is Pointwise ("" = Pointwise) or Listwise.
	Mode LLMMode
	// Timeout bounds each request (each attempt); 0 = 60s.
	Timeout time.Duration
	// MaxRetries is how many times a request is retried after a 408, 429 or 5xx answer, a
	// timeout or a transport error, with exponential backoff (or the server's
	// Retry-After, up to 30s); 0 = 2, negative = never.
	MaxRetries int
	// MaxPassages is the most passages one Score call takes (0 = 100); more is
	// ErrLLMTooManyPassages.
	MaxPassages int
	// MaxPassageBytes cuts each passage (0 = 2,000 bytes) and MaxQueryBytes the query
	// (0 = 1,000 bytes), on a UTF-8 boundary, before they go into a prompt.
	MaxPassageBytes, MaxQueryBytes int
	// Concurrency is how many pointwise requests run at once (0 = 4).
	Concurrency int
	// MaxResponseBytes caps a response body (0 = 1 MiB); a longer one is ErrLLMResponse.
	MaxResponseBytes int64
	// MaxTokens, when > 0, is sent as the request's max_tokens.
	MaxTokens int
	// HTTPClient sends the requests; nil = a client of its own.
	HTTPClient *http.Client
	// Logger receives a warning per retried request; nil = slog.Default().
	Logger *slog.Logger
}

// LLMReranker is a [Reranker] that asks a chat model behind an OpenAI-compatible
// POST /v1/chat/completions endpoint (OpenAI, Ollama, vLLM, llama.cpp's server) how
// relevant each passage is to the query, pointwise or listwise (see [LLMMode]), with
// temperature 0. Its scores are logits whose sigmoid is the grade or rank as a
// probability, so a store's Result.Score (the sigmoid) reads 0..1 as with a
// cross-encoder. It is safe for concurrent use.
type LLMReranker struct {
	url     string
	opts    LLMOptions
	client  *http.Client
	retries int
	log     *slog.Logger
}

var _ Reranker = (*LLMReranker)(nil)

// NewLLMReranker checks opts and returns the reranker; it makes no request.
func NewLLMReranker(opts LLMOptions) (*LLMReranker, error) {
	if strings.TrimSpace(opts.Model) == "" {
		return nil, fmt.Errorf("%w: no model", ErrLLMConfig)
	}
	switch opts.Mode {
	case "":
		opts.Mode = Pointwise
	case Pointwise, Listwise:
	default:
		return nil, fmt.Errorf("%w: mode %q (want pointwise or listwise)", ErrLLMConfig, opts.Mode)
	}
	if opts.Timeout < 0 || opts.MaxPassages < 0 || opts.MaxPassageBytes < 0 || opts.MaxQueryBytes < 0 ||
		opts.Concurrency < 0 || opts.MaxResponseBytes < 0 || opts.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: a negative timeout or cap", ErrLLMConfig)
	}
	base := opts.BaseURL
	if base == "" {
		base = LLMDefaultBaseURL
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: base URL %q (want http(s)://host/...)", ErrLLMConfig, base)
	}
	endpoint := strings.TrimRight(base, "/")
	if !strings.HasSuffix(endpoint, "/chat/completions") {
		endpoint += "/chat/completions"
	}
	opts.Timeout = cmpOr(opts.Timeout, llmDefaultTimeout)
	opts.MaxPassages = cmpOr(opts.MaxPassages, llmDefaultMaxPassages)
	opts.MaxPassageBytes = cmpOr(opts.MaxPassageBytes, llmDefaultPassageBytes)
	opts.MaxQueryBytes = cmpOr(opts.MaxQueryBytes, llmDefaultQueryBytes)
	opts.Concurrency = cmpOr(opts.Concurrency, llmDefaultConcurrency)
	opts.MaxResponseBytes = cmpOr(opts.MaxResponseBytes, llmDefaultResponseBytes)
	r := &LLMReranker{url: endpoint, opts: opts, client: opts.HTTPClient, log: opts.Logger}
	if r.client == nil {
		r.client = &http.Client{}
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	switch {
	case opts.MaxRetries < 0:
		r.retries = 0
	case opts.MaxRetries == 0:
		r.retries = llmDefaultRetries
	default:
		r.retries = opts.MaxRetries
	}
	return r, nil
}

func cmpOr[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// ID names the reranker: "llm:" + mode + "/" + model.
func (r *LLMReranker) ID() string { return "llm:" + string(r.opts.Mode) + "/" + r.opts.Model }

// Score returns a logit per passage, in passage order (see [LLMMode] for what it means).
// No passage: no request.
func (r *LLMReranker) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(passages) == 0 {
		return []float32{}, nil
	}
	if len(passages) > r.opts.MaxPassages {
		return nil, fmt.Errorf("%w: %d passages, at most %d (LLMOptions.MaxPassages)", ErrLLMTooManyPassages, len(passages), r.opts.MaxPassages)
	}
	query = cutUTF8(query, r.opts.MaxQueryBytes)
	if r.opts.Mode == Listwise {
		return r.listwise(ctx, query, passages)
	}
	return r.pointwise(ctx, query, passages)
}

const pointwiseSystem = `You judge search results. Given a query and a passage, rate how relevant the passage is to the query on a scale from 0 (unrelated) to 10 (answers it fully). Reply with the number only.`

const listwiseSystem = `You rank search results. Given a query and numbered passages, order the passages from most to least relevant to the query. Reply with the passage numbers only, most relevant first, in the form [2] > [1] > [3], listing every passage once.`

// pointwise grades each passage in a request of its own, Concurrency at a time; the first
// error stops the others.
func (r *LLMReranker) pointwise(ctx context.Context, query string, passages []string) ([]float32, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]float32, len(passages))
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	sem := make(chan struct{}, r.opts.Concurrency)
	for i, p := range passages {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			user := "Query: " + query + "\n\nPassage: " + cutUTF8(p, r.opts.MaxPassageBytes) + "\n\nRelevance (0-10):"
			reply, err := r.chat(ctx, pointwiseSystem, user)
			var grade float64
			if err == nil {
				grade, err = parseGrade(reply)
			}
			if err != nil {
				errOnce.Do(func() { firstErr = fmt.Errorf("passage %d: %w", i, err); cancel() })
				return
			}
			out[i] = probLogit((grade + 0.5) / 11)
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// listwise asks for the order of every passage in one request.
func (r *LLMReranker) listwise(ctx context.Context, query string, passages []string) ([]float32, error) {
	var b strings.Builder
	b.WriteString("Query: ")
	b.WriteString(query)
	b.WriteString("\n\n")
	for i, p := range passages {
		fmt.Fprintf(&b, "[%d] %s\n\n", i+1, oneLine(cutUTF8(p, r.opts.MaxPassageBytes)))
	}
	fmt.Fprintf(&b, "Order the %d passages, most relevant first:", len(passages))
	reply, err := r.chat(ctx, listwiseSystem, b.String())
	if err != nil {
		return nil, err
	}
	order, err := parseOrder(reply, len(passages))
	if err != nil {
		return nil, err
	}
	out := make([]float32, len(passages))
	n := float64(len(passages))
	for rank, i := range order {
		out[i] = probLogit(1 - (float64(rank)+0.5)/n)
	}
	return out, nil
}

// probLogit is the logit of p.
func probLogit(p float64) float32 { return float32(math.Log(p / (1 - p))) }

// thinkRE matches a reasoning model's <think>...</think> block, which comes before its answer.
var thinkRE = regexp.MustCompile(`(?s)<think>.*?</think>`)

var numberRE = regexp.MustCompile(`[-+]?\d+(?:\.\d+)?`)

// parseGrade reads a 0-10 grade from a reply: a JSON object's "score", "relevance" or
// "grade", else the first number of the text ("7", "Score: 7/10", "**8**"). A grade
// outside 0..10 is clamped into it.
func parseGrade(reply string) (float64, error) {
	text := strings.TrimSpace(thinkRE.ReplaceAllString(reply, ""))
	var obj map[string]any
	if json.Unmarshal([]byte(stripFence(text)), &obj) == nil {
		for _, k := range []string{"score", "relevance", "grade", "rating"} {
			switch v := obj[k].(type) {
			case float64:
				return clampGrade(v), nil
			case string:
				text = v
			}
		}
	}
	m := numberRE.FindString(text)
	if m == "" {
		return 0, fmt.Errorf("%w: no grade in the reply %q", ErrLLMResponse, shorten(reply))
	}
	g, err := strconv.ParseFloat(m, 64)
	if err != nil || math.IsNaN(g) {
		return 0, fmt.Errorf("%w: grade %q in the reply %q", ErrLLMResponse, m, shorten(reply))
	}
	return clampGrade(g), nil
}

func clampGrade(g float64) float64 { return min(max(g, 0), 10) }

var bracketRE = regexp.MustCompile(`\[\s*(\d+)\s*\]`)

// parseOrder reads the passage numbers of a listwise reply ("[2] > [1] > [3]", else the
// plain numbers "2, 1, 3") as 0-based indexes, most relevant first. Numbers out of range
// and repeats are ignored; passages the reply leaves out follow in their given order. A
// reply with no usable number is ErrLLMResponse.
func parseOrder(reply string, n int) ([]int, error) {
	text := thinkRE.ReplaceAllString(reply, "")
	var nums []string
	for _, m := range bracketRE.FindAllStringSubmatch(text, -1) {
		nums = append(nums, m[1])
	}
	if len(nums) == 0 {
		nums = numberRE.FindAllString(text, -1)
	}
	seen := make([]bool, n)
	order := make([]int, 0, n)
	for _, s := range nums {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > n || seen[v-1] {
			continue
		}
		seen[v-1] = true
		order = append(order, v-1)
	}
	if len(order) == 0 {
		return nil, fmt.Errorf("%w: no passage number (1..%d) in the reply %q", ErrLLMResponse, n, shorten(reply))
	}
	for i := range n {
		if !seen[i] {
			order = append(order, i)
		}
	}
	return order, nil
}

// stripFence removes a markdown code fence around a reply.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	s = strings.TrimPrefix(s, "```")
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:] // the fence's language tag
	}
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
}

// cutUTF8 cuts s to at most n bytes on a rune boundary (and mends invalid UTF-8).
func cutUTF8(s string, n int) string {
	if len(s) > n {
		for n > 0 && !utf8.RuneStart(s[n]) {
			n-- // back to the start of the rune s[n] is in
		}
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// oneLine folds a passage's whitespace runs into single spaces, so that its numbered line
// of a listwise prompt cannot look like another passage.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// shorten is the start of a reply, for an error.
func shorten(s string) string {
	if len(s) > 200 {
		return cutUTF8(s, 200) + "..."
	}
	return s
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Stream      bool          `json:"stream"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	} `json:"choices"`
}

// chat sends one conversation and returns the first choice's text, retrying as the
// options allow.
func (r *LLMReranker) chat(ctx context.Context, system, user string) (string, error) {
	body, err := json.Marshal(chatRequest{
		Model:     r.opts.Model,
		Messages:  []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: user}},
		MaxTokens: r.opts.MaxTokens,
	})
	if err != nil {
		return "", err
	}
	for attempt := 1; ; attempt++ {
		reply, retryAfter, err := r.attempt(ctx, body)
		if err == nil {
			return reply, nil
		}
		var he *LLMHTTPError
		if errors.As(err, &he) {
			he.Attempts = attempt
		}
		if retryAfter < 0 || attempt > r.retries || ctx.Err() != nil {
			return "", err
		}
		wait := httpretry.Backoff{Base: llmDefaultBackoff, Max: llmMaxBackoff, MaxRetryAfter: llmMaxBackoff}.Wait(attempt, retryAfter)
		r.log.Warn("rerank: retrying chat request", "url", r.url, "attempt", attempt, "wait", wait, "err", err)
		if err := httpretry.Sleep(ctx, wait, err); err != nil {
			return "", err
		}
	}
}

// attempt makes one request. retryAfter is -1 when the error must not be retried, 0 when
// it may be after the backoff, and the server's Retry-After when it sent one.
func (r *LLMReranker) attempt(ctx context.Context, body []byte) (reply string, retryAfter time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, r.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, r.url, bytes.NewReader(body))
	if err != nil {
		return "", -1, fmt.Errorf("%w: %v", ErrLLMConfig, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if r.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.APIKey)
	}
	for k, v := range r.opts.Headers {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", -1, ctx.Err()
		}
		if actx.Err() != nil {
			return "", 0, fmt.Errorf("rerank: chat request to %s timed out after %v: %w", r.url, r.opts.Timeout, context.DeadlineExceeded)
		}
		return "", 0, fmt.Errorf("rerank: chat request to %s: %w", r.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		herr := &LLMHTTPError{URL: r.url, StatusCode: resp.StatusCode, Message: chatErrorMessage(io.LimitReader(resp.Body, llmMaxErrorBody))}
		switch {
		case resp.StatusCode == http.StatusRequestTimeout, resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
			return "", httpretry.RetryAfter(resp.Header.Get("Retry-After")), herr
		}
		return "", -1, herr
	}
	raw, err := io.ReadAll(io.LimitReader(resp.Body, r.opts.MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return "", -1, ctx.Err()
		}
		if actx.Err() != nil {
			return "", 0, fmt.Errorf("rerank: chat response from %s timed out after %v: %w", r.url, r.opts.Timeout, context.DeadlineExceeded)
		}
		return "", 0, fmt.Errorf("rerank: reading the chat response of %s: %w", r.url, err)
	}
	if int64(len(raw)) > r.opts.MaxResponseBytes {
		return "", -1, fmt.Errorf("%w: response over %d bytes (LLMOptions.MaxResponseBytes)", ErrLLMResponse, r.opts.MaxResponseBytes)
	}
	reply, err = decodeChat(raw)
	if err != nil {
		return "", -1, err
	}
	return reply, 0, nil
}

// decodeChat returns the text of a chat completion's first choice: its content as a
// string, or the text parts of a content array.
func decodeChat(raw []byte) (string, error) {
	var cr chatResponse
	if err := json.Unmarshal(raw, &cr); err != nil {
		return "", fmt.Errorf("%w: %v", ErrLLMResponse, err)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("%w: no choices", ErrLLMResponse)
	}
	c := cr.Choices[0].Message.Content
	var s string
	if json.Unmarshal(c, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(c, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String(), nil
	}
	return "", fmt.Errorf("%w: message content is neither text nor text parts", ErrLLMResponse)
}

// chatErrorMessage extracts the message of an error body ({"error":{"message":...}},
// {"error":"..."}, {"message":...}) or returns the start of the body.
func chatErrorMessage(body io.Reader) string {
	raw, _ := io.ReadAll(body)
	if msg, _, ok := httpretry.ErrorMessage(raw); ok {
		return msg
	}
	return shorten(strings.TrimSpace(string(raw)))
}
