package weaviate

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory/internal/httpretry"
)

// fastBackoff keeps retries in tests from sleeping long; no test asserts on timing.
var fastBackoff = httpretry.Backoff{Base: time.Millisecond, Max: 2 * time.Millisecond, MaxRetryAfter: 2 * time.Millisecond}

func newClient(t *testing.T, cfg Config) *Client {
	t.Helper()
	if cfg.Backoff == (httpretry.Backoff{}) {
		cfg.Backoff = fastBackoff
	}
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// deadEndpoint is an address nothing listens on (a listener opened and closed).
func deadEndpoint(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// recorded is one request a fake saw.
type recorded struct {
	Method, Path, Query string
	Body                []byte
}

// fake is an httptest server answering with the function's status and body, recording every
// request.
type fake struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []recorded
}

func newFake(t *testing.T, answer func(n int, r *http.Request, body []byte) (int, string)) *fake {
	t.Helper()
	f := &fake{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.Method, r.URL.Path, r.URL.RawQuery, body})
		n := len(f.reqs)
		f.mu.Unlock()
		status, out := answer(n, r, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, out)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

func ok() func(int, *http.Request, []byte) (int, string) {
	return func(int, *http.Request, []byte) (int, string) { return 200, `{}` }
}

func TestFailover(t *testing.T) {
	cases := []struct {
		name      string
		dead      int // dead endpoints before the live one
		tries     int
		wantErr   error
		wantCalls int
	}{
		{"first node up", 0, 3, nil, 1},
		{"one dead node, then a live one", 1, 3, nil, 1},
		{"two dead nodes, then a live one", 2, 3, nil, 1},
		{"too few attempts to reach the live node", 2, 2, ErrUnavailable, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			live := newFake(t, ok())
			var eps []string
			for range tc.dead {
				eps = append(eps, deadEndpoint(t))
			}
			eps = append(eps, live.URL)
			c := newClient(t, Config{Endpoints: eps, MaxAttempts: tc.tries})
			err := c.Ready(context.Background())
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := len(live.requests()); got != tc.wantCalls {
				t.Fatalf("live node got %d requests, want %d", got, tc.wantCalls)
			}
			if err == nil {
				// the node that answered is tried first next time
				if err := c.Ready(context.Background()); err != nil {
					t.Fatal(err)
				}
				if got := len(live.requests()); got != 2 {
					t.Fatalf("second call: live node got %d requests in all, want 2", got)
				}
			}
		})
	}
}

func TestRetry(t *testing.T) {
	cases := []struct {
		name      string
		answers   []int // status per call; the last repeats
		tries     int
		wantErr   error
		wantCalls int
	}{
		{"503 then 200", []int{503, 200}, 4, nil, 2},
		{"500 twice then 200", []int{500, 500, 200}, 4, nil, 3},
		{"429 then 200", []int{429, 200}, 4, nil, 2},
		{"always 503: bounded", []int{503}, 3, ErrUnavailable, 3},
		{"404 is not retried", []int{404}, 4, ErrNotFound, 1},
		{"422 is not retried", []int{422}, 4, ErrInvalid, 1},
		{"400 is not retried", []int{400}, 4, ErrInvalid, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(n int, _ *http.Request, _ []byte) (int, string) {
				s := tc.answers[min(n, len(tc.answers))-1]
				if s == 200 {
					return 200, `{}`
				}
				return s, `{"error":[{"message":"boom ` + http.StatusText(s) + `"}]}`
			})
			c := newClient(t, Config{Endpoints: []string{f.URL}, MaxAttempts: tc.tries})
			err := c.Ready(context.Background())
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := len(f.requests()); got != tc.wantCalls {
				t.Fatalf("%d calls, want %d", got, tc.wantCalls)
			}
			if err != nil && !strings.Contains(err.Error(), "boom") {
				t.Fatalf("error %q lacks the server's message", err)
			}
		})
	}
}

// hang answers only when the request's context ends (the client gave up) or the test ends.
func hang(t *testing.T) *fake {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return newFake(t, func(_ int, r *http.Request, _ []byte) (int, string) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
		return 200, `{}`
	})
}

// TestTimeout: hanging nodes time out and fail over. The timeouts are seconds, not
// milliseconds, so that a node that answers always answers within them and a hanging
// one has always received its request by then, even on a busy machine.
func TestTimeout(t *testing.T) {
	t.Run("every node hangs", func(t *testing.T) {
		a, b := hang(t), hang(t)
		c := newClient(t, Config{Endpoints: []string{a.URL, b.URL}, Timeout: 2 * time.Second, MaxAttempts: 3})
		err := c.Ready(context.Background())
		if !errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want ErrTimeout", err)
		}
		var we *Error
		if !errors.As(err, &we) || we.Tries != 3 {
			t.Fatalf("err = %#v, want an *Error after 3 tries", err)
		}
		if len(a.requests())+len(b.requests()) != 3 {
			t.Fatalf("requests: %d + %d, want 3", len(a.requests()), len(b.requests()))
		}
	})
	t.Run("a hanging node fails over", func(t *testing.T) {
		a, b := hang(t), newFake(t, ok())
		c := newClient(t, Config{Endpoints: []string{a.URL, b.URL}, Timeout: 2 * time.Second, MaxAttempts: 3})
		if err := c.Ready(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(b.requests()) != 1 {
			t.Fatalf("second node got %d requests", len(b.requests()))
		}
	})
	t.Run("caller's deadline", func(t *testing.T) {
		a := hang(t)
		c := newClient(t, Config{Endpoints: []string{a.URL}, Timeout: time.Hour, MaxAttempts: 3})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		err := c.Ready(ctx)
		if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want ErrTimeout and context.DeadlineExceeded", err)
		}
		if len(a.requests()) != 1 {
			t.Fatalf("%d requests after the caller's deadline, want 1", len(a.requests()))
		}
	})
	t.Run("caller cancels", func(t *testing.T) {
		a := hang(t)
		c := newClient(t, Config{Endpoints: []string{a.URL}, Timeout: time.Hour})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for len(a.requests()) == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		err := c.Ready(ctx)
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
			t.Fatalf("err = %v, want context.Canceled, not ErrTimeout", err)
		}
	})
}

func TestErrorMapping(t *testing.T) {
	long := strings.Repeat("x", 5000)
	cases := []struct {
		name    string
		status  int
		body    string
		call    string // "get", "bm25", "put", "create", "delete", "exists"
		want    error
		wantMsg string
	}{
		{"404 get", 404, ``, "get", ErrNotFound, ""},
		{"422 create", 422, `{"error":[{"message":"class name \"x\" is invalid"}]}`, "create", ErrInvalid, `class name "x" is invalid`},
		{"400 swagger style", 400, `{"code":601,"message":"bad property"}`, "create", ErrInvalid, "bad property"},
		{"500 consistency on put", 500, `{"error":[{"message":"cannot achieve consistency level \"ALL\": read error"}]}`, "get", ErrConsistency, "cannot achieve consistency level"},
		{"500 other", 500, `{"error":[{"message":"shard down"}]}`, "get", ErrUnavailable, "shard down"},
		{"graphql validation", 200, `{"errors":[{"message":"Cannot query field \"nope\" on type \"Doc\"."}]}`, "bm25", ErrInvalid, "Cannot query field"},
		{"graphql consistency", 200, `{"errors":[{"message":"cannot achieve consistency level \"ALL\""}]}`, "bm25", ErrConsistency, "consistency"},
		{"graphql unavailable", 200, `{"errors":[{"message":"dial tcp 127.0.0.4:7103: connection refused"}]}`, "bm25", ErrUnavailable, "connection refused"},
		{"graphql missing data", 200, `{"data":{"Get":{}}}`, "bm25", ErrUnavailable, "no Get.Doc"},
		{"malformed json", 200, `{"data":`, "bm25", ErrUnavailable, "malformed"},
		{"message capped", 422, `{"error":[{"message":"` + long + `"}]}`, "create", ErrInvalid, "xxx…"},
		{"delete missing class succeeds", 404, ``, "delete", nil, ""},
		{"exists: 404 is false, no error", 404, ``, "exists", nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, func(int, *http.Request, []byte) (int, string) { return tc.status, tc.body })
			c := newClient(t, Config{Endpoints: []string{f.URL}, MaxAttempts: 2})
			ctx := context.Background()
			var err error
			switch tc.call {
			case "get":
				_, err = c.Get(ctx, "Doc", Quorum, "a")
			case "bm25":
				_, err = c.BM25(ctx, Query{Class: "Doc", Text: "q", Limit: 3})
			case "create":
				err = c.CreateClass(ctx, ClassConfig{Name: "Doc"})
			case "delete":
				err = c.DeleteClass(ctx, "Doc")
			case "exists":
				var found bool
				found, err = c.ClassExists(ctx, "Doc")
				if found {
					t.Fatal("exists on 404")
				}
			}
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %q, want it to contain %q", err, tc.wantMsg)
			}
			if len(err.Error()) > MaxMessage+200 {
				t.Fatalf("error message not capped: %d bytes", len(err.Error()))
			}
		})
	}
}

func TestBodyCap(t *testing.T) {
	f := newFake(t, func(int, *http.Request, []byte) (int, string) {
		return 200, `{"x":"` + strings.Repeat("y", 4096) + `"}`
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}, MaxBody: 1024})
	if err := c.Ready(context.Background()); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "over 1024 bytes") {
		t.Fatalf("err = %v, want ErrInvalid over 1024 bytes", err)
	}
}

func TestCreateClassRequest(t *testing.T) {
	f := newFake(t, ok())
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	err := c.CreateClass(context.Background(), ClassConfig{
		Name: "Doc", Replication: 3, Shards: 1, BM25: &BM25Params{K1: 0.9, B: 0.4}, Tokenization: "lowercase",
		Stopwords: "none", Distance: "dot", BlockMaxWAND: ptr(false),
		Fields: []Field{{Name: "tags", Type: TypeTextList}, {Name: "year", Type: TypeInt}},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 1 || reqs[0].Method != "POST" || reqs[0].Path != "/v1/schema" {
		t.Fatalf("requests %+v", reqs)
	}
	var got map[string]any
	if err := json.Unmarshal(reqs[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"class": "Doc", "vectorizer": "none",
		"replicationConfig":   map[string]any{"factor": 3.0},
		"invertedIndexConfig": map[string]any{"bm25": map[string]any{"k1": 0.9, "b": 0.4}, "stopwords": map[string]any{"preset": "none"}, "usingBlockMaxWAND": false},
		"vectorIndexConfig":   map[string]any{"distance": "dot"},
		"shardingConfig":      map[string]any{"desiredCount": 1.0},
	}
	for k, v := range want {
		if !jsonEqual(got[k], v) {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	props := map[string]map[string]any{}
	for _, p := range got["properties"].([]any) {
		pm := p.(map[string]any)
		props[pm["name"].(string)] = pm
	}
	checks := []struct {
		prop, key string
		want      any
	}{
		{"docId", "tokenization", "field"},
		{"docId", "indexSearchable", false},
		{"title", "tokenization", "lowercase"},
		{"text", "tokenization", "lowercase"},
		{"text", "dataType", []any{"text"}},
		{"tags", "dataType", []any{"text[]"}},
		{"tags", "tokenization", "field"},
		{"year", "dataType", []any{"int"}},
	}
	for _, ch := range checks {
		if !jsonEqual(props[ch.prop][ch.key], ch.want) {
			t.Errorf("property %s.%s = %v, want %v", ch.prop, ch.key, props[ch.prop][ch.key], ch.want)
		}
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestCreateClassInvalid(t *testing.T) {
	cases := []ClassConfig{
		{Name: "doc"},
		{Name: "Doc", Replication: -1},
		{Name: "Doc", Shards: -1},
		{Name: "Doc", Fields: []Field{{Name: "text", Type: TypeText}}},
		{Name: "Doc", Fields: []Field{{Name: "id", Type: TypeText}}},
		{Name: "Doc", Fields: []Field{{Name: "x", Type: "geo"}}},
	}
	f := newFake(t, ok())
	c := newClient(t, Config{Endpoints: []string{f.URL}})
	for _, cfg := range cases {
		if err := c.CreateClass(context.Background(), cfg); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: err = %v, want ErrInvalid", cfg, err)
		}
	}
	if n := len(f.requests()); n != 0 {
		t.Fatalf("%d requests sent for invalid configs", n)
	}
}

func TestCreateClassRetryFindsItCreated(t *testing.T) {
	// The first attempt times out after Weaviate created the class; the retry is told it
	// exists: success.
	var calls atomic.Int32
	done := make(chan struct{})
	defer close(done)
	f := newFake(t, func(n int, r *http.Request, _ []byte) (int, string) {
		calls.Add(1)
		if n == 1 {
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return 200, `{}`
		}
		return 422, `{"error":[{"message":"class name \"Doc\" already exists"}]}`
	})
	c := newClient(t, Config{Endpoints: []string{f.URL}, Timeout: 2 * time.Second})
	if err := c.CreateClass(context.Background(), ClassConfig{Name: "Doc"}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls", calls.Load())
	}
}

func TestUUID(t *testing.T) {
	ids := []string{"", "a", "doc-1", "doc-2", "ünïcode", strings.Repeat("z", 1000)}
	seen := map[string]string{}
	for _, id := range ids {
		u := UUID(id)
		if u != UUID(id) {
			t.Fatalf("UUID(%q) not deterministic", id)
		}
		if len(u) != 36 || u[14] != '5' || !strings.ContainsRune("89ab", rune(u[19])) {
			t.Fatalf("UUID(%q) = %s: not a version 5, RFC 4122 variant UUID", id, u)
		}
		if prev, dup := seen[u]; dup {
			t.Fatalf("UUID(%q) == UUID(%q)", id, prev)
		}
		seen[u] = id
	}
}

func TestParseEndpoints(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"weaviate://127.0.0.2:8080,127.0.0.3:8080,127.0.0.4:8080 grpc://127.0.0.2:50051,127.0.0.3:50052", []string{"http://127.0.0.2:8080", "http://127.0.0.3:8080", "http://127.0.0.4:8080"}},
		{"127.0.0.5:8080", []string{"http://127.0.0.5:8080"}},
		{"http://a:1, https://b:2", []string{"http://a:1", "https://b:2"}},
		{"", nil},
	}
	for _, tc := range cases {
		if got := ParseEndpoints(tc.in); !jsonEqual(got, tc.want) {
			t.Errorf("ParseEndpoints(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestNewInvalid(t *testing.T) {
	for _, eps := range [][]string{nil, {""}, {"ftp://x:1"}, {"http://"}} {
		if _, err := New(context.Background(), Config{Endpoints: eps}); !errors.Is(err, ErrInvalid) {
			t.Errorf("New(%q): err = %v, want ErrInvalid", eps, err)
		}
	}
}

// TestKindOfMessage: how errors found in 200 answers are classified.
func TestKindOfMessage(t *testing.T) {
	for _, c := range []struct {
		msg   string
		kind  error
		retry bool
	}{
		{`Cannot query field "Memory_x" on type "GetObjectsObj". Did you mean "Memory_y"?`, ErrNotFound, true},
		{`Cannot query field "Memory_x" on type "AggregateObjectsObj".`, ErrNotFound, true},
		{`Cannot query field "nope" on type "Memory_x".`, ErrInvalid, false},
		{`cannot achieve consistency level "ALL": read error`, ErrConsistency, true},
		{`broadcast: cannot reach enough replicas`, ErrConsistency, true},
		{`connection refused`, ErrUnavailable, true},
		{`class Foo does not exist`, ErrNotFound, false},
		{`invalid filter`, ErrInvalid, false},
	} {
		kind, retry := kindOfMessage(c.msg)
		if kind != c.kind || retry != c.retry {
			t.Errorf("%q: %v, %v; want %v, %v", c.msg, kind, retry, c.kind, c.retry)
		}
	}
}
