package searchr1

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/agentmem/memory/internal/httpretry"
)

// Scripted is a [Generator] that returns canned outputs in order, for tests and examples.
// It records every prompt and stop list it receives. It is safe for concurrent use.
type Scripted struct {
	// Outputs are returned one per call.
	Outputs []string
	// OmitStop makes it behave like an OpenAI-compatible server: an output is cut just
	// before the first stop string it contains (the stop string omitted).
	OmitStop bool

	mu      sync.Mutex
	next    int
	prompts []string
	stops   [][]string
}

var _ Generator = (*Scripted)(nil)

// Generate returns the next output.
func (s *Scripted) Generate(ctx context.Context, prompt string, stop []string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prompts = append(s.prompts, prompt)
	s.stops = append(s.stops, append([]string(nil), stop...))
	if s.next >= len(s.Outputs) {
		return "", fmt.Errorf("%w after %d outputs", ErrScriptExhausted, len(s.Outputs))
	}
	out := s.Outputs[s.next]
	s.next++
	if s.OmitStop {
		cut := -1
		for _, st := range stop {
			if i := strings.Index(out, st); st != "" && i >= 0 && (cut < 0 || i < cut) {
				cut = i
			}
		}
		if cut >= 0 {
			out = out[:cut]
		}
	}
	return out, nil
}

// Prompts returns the prompts received so far.
func (s *Scripted) Prompts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.prompts...)
}

// Stops returns the stop lists received so far.
func (s *Scripted) Stops() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]string(nil), s.stops...)
}

// OpenAI is a [Generator] for OpenAI-compatible servers: vLLM, llama.cpp's llama-server,
// or a hosted API. It uses /completions by default and /chat/completions when Chat is set.
// The zero value needs at least BaseURL. It is safe for concurrent use.
type OpenAI struct {
	// BaseURL is the API root including the version, e.g. "http://127.0.0.1:8000/v1".
	BaseURL string
	// Model is sent as "model".
	Model string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// Chat selects the chat endpoint. The loop's transcript is sent as a user message
	// (the first prompt) and an assistant message (the text so far) that the server
	// continues: vLLM needs "continue_final_message", which is set for it; llama.cpp
	// continues a trailing assistant message by itself.
	Chat bool
	// System is an optional system message (chat only).
	System string
	// Temperature is sent as is (0: greedy).
	Temperature float64
	// MaxTokens caps each generation (default 500, Search-R1's max_response_length).
	MaxTokens int
	// Stop sequences are sent in addition to the loop's.
	Stop []string
	// Timeout bounds each HTTP attempt (default 120 s).
	Timeout time.Duration
	// Retries is how many times a 429, a 5xx or a network error is retried (default 3;
	// negative: none).
	Retries int
	// Backoff is the first retry delay (default 500 ms), doubled each retry up to 30 s; each
	// wait is a random time between half and all of it (internal/httpretry, the policy of
	// every HTTP client here). A Retry-After header (seconds or an HTTP date, at most 10
	// minutes) takes precedence.
	Backoff time.Duration
	// Extra fields are merged into every request body (e.g. "top_p", "seed").
	Extra map[string]any
	// HTTPClient is used for requests (default: a client without timeout that keeps up to
	// 256 idle connections per host, so a [Runner]'s concurrent generations reuse their
	// connections; Timeout applies per attempt).
	HTTPClient *http.Client
}

var (
	_ Generator = (*OpenAI)(nil)
	_ Continuer = (*OpenAI)(nil)
)

// Generate completes prompt.
func (o *OpenAI) Generate(ctx context.Context, prompt string, stop []string) (string, error) {
	return o.Continue(ctx, prompt, "", stop)
}

// Continue completes prompt followed by the assistant's text so far.
func (o *OpenAI) Continue(ctx context.Context, prompt, assistant string, stop []string) (string, error) {
	if o.BaseURL == "" {
		return "", fmt.Errorf("%w: OpenAI.BaseURL is empty", ErrInvalidOption)
	}
	body := map[string]any{}
	for k, v := range o.Extra {
		body[k] = v
	}
	if o.Model != "" {
		body["model"] = o.Model
	}
	body["temperature"] = o.Temperature
	body["max_tokens"] = defaultInt(o.MaxTokens, 500)
	if st := append(append([]string(nil), stop...), o.Stop...); len(st) > 0 {
		body["stop"] = st
	}
	endpoint := "/completions"
	if o.Chat {
		endpoint = "/chat/completions"
		var msgs []map[string]string
		if o.System != "" {
			msgs = append(msgs, map[string]string{"role": "system", "content": o.System})
		}
		msgs = append(msgs, map[string]string{"role": "user", "content": prompt})
		if assistant != "" {
			msgs = append(msgs, map[string]string{"role": "assistant", "content": assistant})
			if _, set := body["continue_final_message"]; !set {
				body["continue_final_message"] = true
				body["add_generation_prompt"] = false
			}
		}
		body["messages"] = msgs
	} else {
		body["prompt"] = prompt + assistant
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("searchr1: encode request: %w", err)
	}
	data, err := o.post(ctx, strings.TrimRight(o.BaseURL, "/")+endpoint, payload)
	if err != nil {
		return "", err
	}
	var resp struct {
		Choices []struct {
			Text    string `json:"text"`
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &resp); err != nil {
		return "", fmt.Errorf("%w: %v", ErrBadResponse, err)
	}
	if len(resp.Choices) == 0 {
		return "", fmt.Errorf("%w: no choices", ErrBadResponse)
	}
	if o.Chat {
		return resp.Choices[0].Message.Content, nil
	}
	return resp.Choices[0].Text, nil
}

// pooledClient is the default client of [OpenAI]: http.DefaultClient keeps two idle
// connections per host, so 64 concurrent generations would open and close a connection
// for most requests.
var pooledClient = func() *http.Client {
	t, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultClient
	}
	t = t.Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	return &http.Client{Transport: t}
}()

// maxResponseBytes bounds a model server's answer.
const maxResponseBytes = 32 << 20

func (o *OpenAI) post(ctx context.Context, url string, payload []byte) ([]byte, error) {
	client := o.HTTPClient
	if client == nil {
		client = pooledClient
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 120 * time.Second
	}
	retries := o.Retries
	if retries == 0 {
		retries = 3
	}
	if retries < 0 {
		retries = 0
	}
	backoff := o.Backoff
	if backoff <= 0 {
		backoff = 500 * time.Millisecond
	}
	var lastErr error
	for attempt := 0; ; attempt++ {
		data, retryAfter, err := o.attempt(ctx, client, url, payload, timeout)
		if err == nil {
			return data, nil
		}
		lastErr = err
		if ctx.Err() != nil || attempt >= retries || !retryable(err) {
			return nil, lastErr
		}
		delay := httpretry.Backoff{Base: backoff, Max: maxBackoff, MaxRetryAfter: maxRetryAfter}.Wait(attempt+1, retryAfter)
		if err := httpretry.Sleep(ctx, delay, lastErr); err != nil {
			return nil, errors.Join(lastErr, err)
		}
	}
}

// The longest wait between two tries of a generation request, and the longest
// Retry-After honoured.
const (
	maxBackoff    = 30 * time.Second
	maxRetryAfter = 10 * time.Minute
)

// statusError carries an HTTP status for the retry decision.
type statusError struct {
	code int
	body string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%v: %d %s: %s", ErrHTTPStatus, e.code, http.StatusText(e.code), e.body)
}

func (e *statusError) Unwrap() error { return ErrHTTPStatus }

func retryable(err error) bool {
	var se *statusError
	if errors.As(err, &se) {
		return se.code == http.StatusTooManyRequests || se.code >= 500
	}
	return !errors.Is(err, ErrBadResponse)
}

func (o *OpenAI) attempt(ctx context.Context, client *http.Client, url string, payload []byte, timeout time.Duration) ([]byte, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("searchr1: POST %s: %w", url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return nil, 0, fmt.Errorf("searchr1: read %s: %w", url, err)
	}
	if len(data) > maxResponseBytes {
		return nil, 0, fmt.Errorf("%w: response over %d bytes", ErrBadResponse, maxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		ra := httpretry.RetryAfter(resp.Header.Get("Retry-After"))
		snippet := string(data)
		if len(snippet) > 300 {
			snippet = snippet[:300]
		}
		return nil, ra, &statusError{code: resp.StatusCode, body: snippet}
	}
	return data, 0, nil
}
