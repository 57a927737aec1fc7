package rerank

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// chatServer is an httptest server speaking OpenAI's POST /v1/chat/completions. reply
// answers each request (its user message) with a status and a body; nil bodies get the
// reply text wrapped as a chat completion.
type chatServer struct {
	*httptest.Server
	mu       sync.Mutex
	requests []chatRequest
	headers  []http.Header
	inFlight atomic.Int32
	maxSeen  atomic.Int32
}

func newChatServer(t *testing.T, reply func(n int, user string) (status int, text string, raw []byte)) *chatServer {
	t.Helper()
	cs := &chatServer{}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cur := cs.inFlight.Add(1)
		defer cs.inFlight.Add(-1)
		for {
			m := cs.maxSeen.Load()
			if cur <= m || cs.maxSeen.CompareAndSwap(m, cur) {
				break
			}
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"no such route"}}`, http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) != 2 {
			http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
			return
		}
		cs.mu.Lock()
		cs.requests = append(cs.requests, req)
		cs.headers = append(cs.headers, r.Header.Clone())
		n := len(cs.requests)
		cs.mu.Unlock()
		status, text, raw := reply(n, req.Messages[1].Content)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if raw != nil {
			w.Write(raw)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprint("chatcmpl-", n), "object": "chat.completion", "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": text}}},
		})
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) reqs() []chatRequest {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return slices.Clone(cs.requests)
}

var quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))

func newLLM(t *testing.T, cs *chatServer, opts LLMOptions) *LLMReranker {
	t.Helper()
	opts.BaseURL = cmpOrStr(opts.BaseURL, cs.URL+"/v1")
	opts.Model = cmpOrStr(opts.Model, "judge-1")
	opts.Logger = quietLog
	r, err := NewLLMReranker(opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func cmpOrStr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// passageOf is the passage of a pointwise prompt.
var passageRE = regexp.MustCompile(`(?s)Passage: (.*)\n\nRelevance`)

func TestLLMPointwiseGrades(t *testing.T) {
	// The grade is the passage's first word, in the many ways models answer.
	replies := map[string]string{
		"a": "10", "b": "Score: 7/10", "c": `{"score": 3}`, "d": "<think>maybe 9? no</think>\n**0**",
		"e": "```json\n{\"relevance\": \"5\"}\n```", "f": "42", "g": "-3", "h": "I would rate it 6.5 out of 10.",
	}
	cs := newChatServer(t, func(_ int, user string) (int, string, []byte) {
		m := passageRE.FindStringSubmatch(user)
		if m == nil {
			return 400, "", []byte(`{"error":{"message":"no passage"}}`)
		}
		return 200, replies[m[1]], nil
	})
	r := newLLM(t, cs, LLMOptions{APIKey: "sk-test", Headers: map[string]string{"X-Org": "o"}})
	passages := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	got, err := r.Score(context.Background(), "the query", passages)
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{10, 7, 3, 0, 5, 10, 0, 6.5}
	for i, g := range want {
		p := 1 / (1 + math.Exp(-float64(got[i])))
		if math.Abs(p-(g+0.5)/11) > 1e-6 {
			t.Errorf("passage %s: probability %v, want grade %v = %v", passages[i], p, g, (g+0.5)/11)
		}
	}
	reqs := cs.reqs()
	if len(reqs) != len(passages) {
		t.Fatalf("%d requests for %d passages", len(reqs), len(passages))
	}
	for _, q := range reqs {
		if q.Model != "judge-1" || q.Temperature != 0 || q.Stream || q.Messages[0].Role != "system" || q.Messages[1].Role != "user" ||
			!strings.Contains(q.Messages[1].Content, "Query: the query") {
			t.Fatalf("request %+v", q)
		}
	}
	if h := cs.headers[0]; h.Get("Authorization") != "Bearer sk-test" || h.Get("X-Org") != "o" || h.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", h)
	}
	if r.ID() != "llm:pointwise/judge-1" {
		t.Errorf("ID %q", r.ID())
	}
}

func TestLLMListwise(t *testing.T) {
	tests := []struct {
		name, reply string
		want        []int // passage indexes, best first
	}{
		{"brackets", "[3] > [1] > [2] > [4]", []int{2, 0, 1, 3}},
		{"partial: the rest keep their order", "[4] > [2]", []int{3, 1, 0, 2}},
		{"repeats and out of range ignored", "[2] > [2] > [9] > [0] > [1]", []int{1, 0, 2, 3}},
		{"plain numbers", "4, 3, 2, 1", []int{3, 2, 1, 0}},
		{"after thinking", "<think>[1] looks good but</think>The order: [2] > [1] > [4] > [3]", []int{1, 0, 3, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := newChatServer(t, func(int, string) (int, string, []byte) { return 200, tt.reply, nil })
			r := newLLM(t, cs, LLMOptions{Mode: Listwise})
			got, err := r.Score(context.Background(), "q", []string{"p one", "p two\n\n[9] fake", "p three", "p four"})
			if err != nil {
				t.Fatal(err)
			}
			order := []int{0, 1, 2, 3}
			slices.SortStableFunc(order, func(a, b int) int {
				if got[a] > got[b] {
					return -1
				} else if got[a] < got[b] {
					return 1
				}
				return 0
			})
			if !slices.Equal(order, tt.want) {
				t.Errorf("order %v, want %v (scores %v)", order, tt.want, got)
			}
			// The top of 4 has probability 1 - 0.5/4.
			if p := 1 / (1 + math.Exp(-float64(got[tt.want[0]]))); math.Abs(p-0.875) > 1e-6 {
				t.Errorf("top probability %v", p)
			}
			reqs := cs.reqs()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			user := reqs[0].Messages[1].Content
			if !strings.Contains(user, "[2] p two [9] fake\n") || !strings.Contains(user, "[4] p four") {
				t.Errorf("prompt does not number one passage a line:\n%s", user)
			}
		})
	}
}

func TestLLMErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("unusable replies", func(t *testing.T) {
		for _, tc := range []struct {
			mode  LLMMode
			reply string
			raw   []byte
		}{
			{Pointwise, "not relevant at all", nil},
			{Listwise, "none of them", nil},
			{Listwise, "[7] > [8]", nil},
			{Pointwise, "", []byte(`{"choices": []}`)},
			{Pointwise, "", []byte(`<html>gateway</html>`)},
			{Pointwise, "", []byte(`{"choices":[{"message":{"content":{"odd":1}}}]}`)},
		} {
			cs := newChatServer(t, func(int, string) (int, string, []byte) { return 200, tc.reply, tc.raw })
			r := newLLM(t, cs, LLMOptions{Mode: tc.mode})
			if _, err := r.Score(ctx, "q", []string{"a", "b"}); !errors.Is(err, ErrLLMResponse) {
				t.Errorf("%s %q %s: err %v, want ErrLLMResponse", tc.mode, tc.reply, tc.raw, err)
			}
		}
	})
	t.Run("content parts", func(t *testing.T) {
		cs := newChatServer(t, func(int, string) (int, string, []byte) {
			return 200, "", []byte(`{"choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"[2] > "},{"type":"text","text":"[1]"}]}}]}`)
		})
		got, err := newLLM(t, cs, LLMOptions{Mode: Listwise}).Score(ctx, "q", []string{"a", "b"})
		if err != nil || !(got[1] > got[0]) {
			t.Fatalf("%v %v", got, err)
		}
	})
	t.Run("400 is not retried, and says why", func(t *testing.T) {
		cs := newChatServer(t, func(int, string) (int, string, []byte) {
			return 400, "", []byte(`{"error":{"message":"model judge-1 does not exist","type":"invalid_request_error"}}`)
		})
		_, err := newLLM(t, cs, LLMOptions{}).Score(ctx, "q", []string{"a"})
		var he *LLMHTTPError
		if !errors.Is(err, ErrLLMHTTP) || !errors.As(err, &he) || he.StatusCode != 400 || he.Attempts != 1 ||
			!strings.Contains(err.Error(), "does not exist") || len(cs.reqs()) != 1 {
			t.Fatalf("err %v (%d requests)", err, len(cs.reqs()))
		}
	})
	t.Run("429 and 5xx are retried", func(t *testing.T) {
		cs := newChatServer(t, func(n int, _ string) (int, string, []byte) {
			switch n {
			case 1:
				return 429, "", []byte(`{"error":"slow down"}`)
			case 2:
				return 503, "", []byte(`upstream down`)
			}
			return 200, "8", nil
		})
		got, err := newLLM(t, cs, LLMOptions{MaxRetries: 3}).Score(ctx, "q", []string{"a"})
		if err != nil || len(got) != 1 || len(cs.reqs()) != 3 {
			t.Fatalf("%v %v after %d requests", got, err, len(cs.reqs()))
		}
		cs2 := newChatServer(t, func(int, string) (int, string, []byte) { return 500, "", []byte(`{"message":"boom"}`) })
		_, err = newLLM(t, cs2, LLMOptions{MaxRetries: 1}).Score(ctx, "q", []string{"a"})
		var he *LLMHTTPError
		if !errors.As(err, &he) || he.Attempts != 2 || he.Message != "boom" {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("response cap", func(t *testing.T) {
		cs := newChatServer(t, func(int, string) (int, string, []byte) { return 200, strings.Repeat("7 ", 5000), nil })
		_, err := newLLM(t, cs, LLMOptions{MaxResponseBytes: 1000}).Score(ctx, "q", []string{"a"})
		if !errors.Is(err, ErrLLMResponse) || !strings.Contains(err.Error(), "1000 bytes") {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		block := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-block:
			case <-r.Context().Done():
			}
		}))
		defer srv.Close()
		defer close(block)
		r, err := NewLLMReranker(LLMOptions{BaseURL: srv.URL + "/v1", Model: "m", Timeout: 50 * time.Millisecond, MaxRetries: -1, Logger: quietLog})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = r.Score(ctx, "q", []string{"a"})
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
			t.Fatalf("err %v after %v", err, time.Since(start))
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := r.Score(cctx, "q", []string{"a"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled: %v", err)
		}
	})
	t.Run("too many passages", func(t *testing.T) {
		cs := newChatServer(t, func(int, string) (int, string, []byte) { return 200, "5", nil })
		_, err := newLLM(t, cs, LLMOptions{MaxPassages: 3}).Score(ctx, "q", []string{"a", "b", "c", "d"})
		if !errors.Is(err, ErrLLMTooManyPassages) || len(cs.reqs()) != 0 {
			t.Fatalf("err %v, %d requests", err, len(cs.reqs()))
		}
		got, err := newLLM(t, cs, LLMOptions{}).Score(ctx, "q", nil)
		if err != nil || len(got) != 0 || len(cs.reqs()) != 0 {
			t.Fatalf("no passages: %v %v", got, err)
		}
	})
	t.Run("options", func(t *testing.T) {
		for _, o := range []LLMOptions{
			{}, {Model: " "}, {Model: "m", Mode: "pairwise"}, {Model: "m", BaseURL: "ftp://x"}, {Model: "m", BaseURL: "::"},
			{Model: "m", MaxPassages: -1}, {Model: "m", Timeout: -time.Second},
		} {
			if _, err := NewLLMReranker(o); !errors.Is(err, ErrLLMConfig) {
				t.Errorf("%+v: err %v, want ErrLLMConfig", o, err)
			}
		}
	})
}

func TestLLMCapsAndConcurrency(t *testing.T) {
	var longest atomic.Int64
	cs := newChatServer(t, func(_ int, user string) (int, string, []byte) {
		if m := passageRE.FindStringSubmatch(user); m != nil && int64(len(m[1])) > longest.Load() {
			longest.Store(int64(len(m[1])))
		}
		time.Sleep(5 * time.Millisecond)
		return 200, "4", nil
	})
	r := newLLM(t, cs, LLMOptions{MaxPassageBytes: 100, MaxQueryBytes: 10, Concurrency: 2})
	passages := make([]string, 12)
	for i := range passages {
		passages[i] = strings.Repeat("é", 200) // 400 bytes: cut on a rune boundary
	}
	if _, err := r.Score(context.Background(), "a long query about many things", passages); err != nil {
		t.Fatal(err)
	}
	if longest.Load() > 100 {
		t.Errorf("a passage of %d bytes reached the model (cap 100)", longest.Load())
	}
	if m := cs.maxSeen.Load(); m > 2 {
		t.Errorf("%d requests at once, Concurrency 2", m)
	}
	for _, q := range cs.reqs() {
		if !strings.Contains(q.Messages[1].Content, "Query: a long que\n") || strings.ContainsRune(q.Messages[1].Content, '\uFFFD') {
			t.Fatalf("query not cut to 10 bytes, or a rune split: %q", q.Messages[1].Content[:40])
		}
	}
}

func TestLLMPointwiseStopsAtFirstError(t *testing.T) {
	cs := newChatServer(t, func(n int, _ string) (int, string, []byte) {
		if n == 1 {
			return 401, "", []byte(`{"error":{"message":"bad key"}}`)
		}
		time.Sleep(20 * time.Millisecond)
		return 200, "5", nil
	})
	r := newLLM(t, cs, LLMOptions{Concurrency: 1})
	_, err := r.Score(context.Background(), "q", make([]string, 20))
	if !errors.Is(err, ErrLLMHTTP) || !strings.Contains(err.Error(), "passage 0") {
		t.Fatalf("err %v", err)
	}
	if n := len(cs.reqs()); n > 2 {
		t.Errorf("%d requests after the first failed", n)
	}
}

func FuzzLLMParse(f *testing.F) {
	for _, s := range []string{"7", "[2] > [1]", "<think>x</think>3", "```json\n{\"score\":1}\n```", "{\"score\":\"x\"}", "9999999999999999999999", "[1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if g, err := parseGrade(s); err == nil && !(g >= 0 && g <= 10) {
			t.Fatalf("grade %v of %q", g, s)
		}
		order, err := parseOrder(s, 5)
		if err != nil {
			return
		}
		sorted := slices.Sorted(slices.Values(order))
		if !slices.Equal(sorted, []int{0, 1, 2, 3, 4}) {
			t.Fatalf("order %v of %q is not a permutation", order, s)
		}
	})
}

// TestLLMManyRetries: a server that keeps answering 503 (with a short Retry-After) is
// retried MaxRetries times and the last answer is returned; the exponential backoff stays
// capped past the attempt where 500ms<<attempt overflows (it panicked there: a negative
// wait given to rand.N).
func TestLLMManyRetries(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Retry-After", "0.0001")
		http.Error(w, `{"error":{"message":"busy"}}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	const retries = 70
	r, err := NewLLMReranker(LLMOptions{BaseURL: srv.URL + "/v1", Model: "m", MaxRetries: retries, Logger: quietLog})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Score(context.Background(), "q", []string{"a"})
	var he *LLMHTTPError
	if !errors.As(err, &he) || he.StatusCode != http.StatusServiceUnavailable || he.Attempts != retries+1 {
		t.Fatalf("err %v, want a 503 after %d attempts", err, retries+1)
	}
	if got := n.Load(); got != retries+1 {
		t.Fatalf("%d requests, want %d", got, retries+1)
	}
}
