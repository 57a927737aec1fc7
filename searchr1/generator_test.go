package searchr1

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

type capturedRequest struct {
	path string
	auth string
	body map[string]any
}

func openAIServer(t *testing.T, fail []int, reply func(body map[string]any) string) (*httptest.Server, chan capturedRequest, *atomic.Int32) {
	t.Helper()
	reqs := make(chan capturedRequest, 16)
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("request body of %s: %v", r.URL.Path, err)
		}
		reqs <- capturedRequest{path: r.URL.Path, auth: r.Header.Get("Authorization"), body: body}
		// Response writes may fail when a client gave up (the timeout tests): the client
		// side asserts what it received.
		if i < len(fail) {
			w.WriteHeader(fail[i])
			_, _ = w.Write([]byte(`{"error":"nope"}`))
			return
		}
		text := reply(body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}}}})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"text": text}}})
	}))
	t.Cleanup(srv.Close)
	return srv, reqs, &n
}

func TestOpenAICompletions(t *testing.T) {
	srv, reqs, _ := openAIServer(t, nil, func(map[string]any) string { return "<answer>42</answer>" })
	g := &OpenAI{BaseURL: srv.URL + "/v1/", Model: "m", APIKey: "k", Temperature: 0.5, MaxTokens: 64, Stop: []string{"\n\n\n"}}
	out, err := g.Generate(context.Background(), "prompt", []string{"</search>", "</answer>"})
	if err != nil || out != "<answer>42</answer>" {
		t.Fatalf("Generate = %q, %v", out, err)
	}
	r := <-reqs
	if r.path != "/v1/completions" || r.auth != "Bearer k" {
		t.Fatalf("request %s auth %q", r.path, r.auth)
	}
	if r.body["model"] != "m" || r.body["prompt"] != "prompt" || r.body["temperature"] != 0.5 || r.body["max_tokens"] != 64.0 {
		t.Fatalf("body = %v", r.body)
	}
	if stops, _ := json.Marshal(r.body["stop"]); string(stops) != `["\u003c/search\u003e","\u003c/answer\u003e","\n\n\n"]` {
		t.Fatalf("stop = %s", stops)
	}
}

func TestOpenAIChatInLoop(t *testing.T) {
	turn := 0
	srv, reqs, _ := openAIServer(t, nil, func(map[string]any) string {
		turn++
		if turn == 1 {
			return "<search>capital of France" // the server omits the stop string
		}
		return "<answer>Paris"
	})
	g := &OpenAI{BaseURL: srv.URL, Chat: true, System: "sys"}
	s := &fakeSearcher{byQuery: map[string][]memory.Result{"capital of France": {res("fr", "France", "Paris.", 1)}}}
	ep, err := Loop{}.Run(context.Background(), g, s, "Capital?")
	if err != nil || ep.Answer != "Paris" {
		t.Fatalf("episode %+v, %v", ep, err)
	}
	first, second := <-reqs, <-reqs
	if first.path != "/chat/completions" {
		t.Fatalf("path %s", first.path)
	}
	msgs := second.body["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v", msgs)
	}
	last := msgs[2].(map[string]any)
	if last["role"] != "assistant" || !strings.HasPrefix(last["content"].(string), "<search>capital of France</search>\n\n<context>Doc 1(Title: \"France\") Paris.") {
		t.Fatalf("assistant message = %v", last)
	}
	if second.body["continue_final_message"] != true || second.body["add_generation_prompt"] != false {
		t.Fatalf("continuation flags missing: %v", second.body)
	}
	if _, ok := first.body["continue_final_message"]; ok {
		t.Fatal("first request must not continue a message")
	}
}

func TestOpenAIRetries(t *testing.T) {
	srv, _, n := openAIServer(t, []int{429, 503}, func(map[string]any) string { return "ok" })
	g := &OpenAI{BaseURL: srv.URL, Backoff: time.Millisecond}
	if out, err := g.Generate(context.Background(), "p", nil); err != nil || out != "ok" {
		t.Fatalf("Generate = %q, %v", out, err)
	}
	if n.Load() != 3 {
		t.Fatalf("%d attempts, want 3", n.Load())
	}

	srv, _, n = openAIServer(t, []int{400}, func(map[string]any) string { return "ok" })
	g = &OpenAI{BaseURL: srv.URL, Backoff: time.Millisecond}
	if _, err := g.Generate(context.Background(), "p", nil); !errors.Is(err, ErrHTTPStatus) || n.Load() != 1 {
		t.Fatalf("400: err %v after %d attempts", err, n.Load())
	}

	srv, _, n = openAIServer(t, []int{500, 500, 500}, func(map[string]any) string { return "ok" })
	g = &OpenAI{BaseURL: srv.URL, Backoff: time.Millisecond, Retries: 2}
	if _, err := g.Generate(context.Background(), "p", nil); !errors.Is(err, ErrHTTPStatus) || n.Load() != 3 {
		t.Fatalf("500s: err %v after %d attempts", err, n.Load())
	}
}

func TestOpenAITimeoutAndBadResponse(t *testing.T) {
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer slow.Close()
	defer close(release)
	g := &OpenAI{BaseURL: slow.URL, Timeout: 50 * time.Millisecond, Retries: -1}
	start := time.Now()
	if _, err := g.Generate(context.Background(), "p", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Fatal("timeout not applied")
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{"choices":[]}`)) }))
	defer bad.Close()
	if _, err := (&OpenAI{BaseURL: bad.URL}).Generate(context.Background(), "p", nil); !errors.Is(err, ErrBadResponse) {
		t.Fatalf("no choices: %v", err)
	}
	if _, err := (&OpenAI{}).Generate(context.Background(), "p", nil); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("no base URL: %v", err)
	}
}

func TestHyDE(t *testing.T) {
	s := &fakeSearcher{byQuery: map[string][]memory.Result{
		"capital?\nParis is the capital of France.": {res("joint", "", "", 1)},
		"capital?":                        {res("a", "", "", 1), res("b", "", "", 1)},
		"Paris is the capital of France.": {res("b", "", "", 1), res("c", "", "", 1)},
	}}
	gen := &Scripted{Outputs: []string{"  Paris is the capital of France.  ", "Paris is the capital of France."}}
	h := &HyDE{Generator: gen, Searcher: s}
	got, err := h.Search(context.Background(), "capital?", memory.TopK(3))
	if err != nil || len(got) != 1 || got[0].ID != "joint" {
		t.Fatalf("joint HyDE = %+v, %v", got, err)
	}
	if p := gen.Prompts()[0]; !strings.Contains(p, "Question: capital?") {
		t.Fatalf("HyDE prompt = %q", p)
	}
	h.Separate = true
	got, err = h.Search(context.Background(), "capital?", memory.TopK(2))
	if err != nil || len(got) != 2 || got[0].ID != "b" {
		t.Fatalf("fused HyDE = %+v, %v", got, err)
	}
	if _, err := (&HyDE{Searcher: s}).Search(context.Background(), "q"); !errors.Is(err, errNoGenerator) {
		t.Fatalf("no generator: %v", err)
	}
}

// A Retry-After given as an HTTP date is honoured (the shared httpretry policy reads both
// forms; the generator used to read seconds only), and cancelling while waiting to retry
// ends the call with the context's error and the failure that was being retried.
func TestGeneratorRetryAfterForms(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Retry-After", time.Now().Add(-time.Second).UTC().Format(http.TimeFormat))
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"choices":[{"text":"ok","finish_reason":"stop"}]}`))
	}))
	defer srv.Close()
	g := &OpenAI{BaseURL: srv.URL, Backoff: time.Hour} // only the header can make this quick
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := g.Generate(ctx, "q", nil); err != nil {
		t.Fatalf("after a Retry-After date in the past: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls, want 2", calls.Load())
	}

	srv2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusInternalServerError)
	}))
	defer srv2.Close()
	g = &OpenAI{BaseURL: srv2.URL, Backoff: time.Hour}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := g.Generate(ctx, "q", nil)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrHTTPStatus) {
		t.Fatalf("err %v, want the deadline and ErrHTTPStatus", err)
	}
}

// TestOpenAIReusesConnections: 32 concurrent episodes of 10 generations each reuse their
// connections. With http.DefaultClient (2 idle connections a host) most of the 320
// requests opened a new connection: a rollout runner at 64 in flight churned through
// thousands of sockets (TIME_WAIT) a step.
func TestOpenAIReusesConnections(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"choices":[{"text":"<answer> x </answer>"}]}`))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	g := &OpenAI{BaseURL: srv.URL + "/v1"}
	const workers, calls = 32, 10
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for j := 0; j < calls; j++ {
				if _, err := g.Generate(context.Background(), "p", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if n := conns.Load(); n > 2*workers {
		t.Errorf("%d connections for %d requests from %d workers, want at most %d", n, workers*calls, workers, 2*workers)
	}
}
