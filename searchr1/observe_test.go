package searchr1

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

// recObserver records what an Observer is told.
type recObserver struct {
	mu       sync.Mutex
	begun    int
	requests []string // "endpoint status kind"
	batches  []int
	queues   int
	stages   map[string]int
	searches int
}

func (o *recObserver) Begin(string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.begun++
}

func (o *recObserver) Request(endpoint string, status int, kind string, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests = append(o.requests, fmt.Sprintf("%s %d %s", endpoint, status, kind))
}

func (o *recObserver) Batch(_ string, n int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.batches = append(o.batches, n)
}

func (o *recObserver) Queue(string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.queues++
}

func (o *recObserver) Stage(_, stage string, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stages == nil {
		o.stages = map[string]int{}
	}
	o.stages[stage]++
}

func (o *recObserver) Search(memory.SearchStats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.searches++
}

func (o *recObserver) last() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.requests) == 0 {
		return ""
	}
	return o.requests[len(o.requests)-1]
}

// failAfter answers its first n searches and fails the rest.
type failAfter struct {
	n     int64
	calls atomic.Int64
}

func (f *failAfter) Search(context.Context, string, ...memory.SearchOption) ([]memory.Result, error) {
	if f.calls.Add(1) > f.n {
		return nil, errors.New("disk on fire")
	}
	return []memory.Result{res("a", "A", "text", 1)}, nil
}

// TestObserverKinds: every answer is reported once with its endpoint, status and kind of
// failure, the one aborted midway too.
func TestObserverKinds(t *testing.T) {
	m, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(context.Background(), memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."}); err != nil {
		t.Fatal(err)
	}
	many := `{"queries": [` + strings.Repeat(`"q",`, 3000) + `"q"], "topk": 1}`
	for _, tc := range []struct {
		name     string
		s        Searcher
		o        RetrieveOptions
		method   string
		path     string
		body     string
		want     string
		searches int
	}{
		{"ok", m, RetrieveOptions{}, "POST", "/retrieve", `{"queries": ["capital", "France", " "]}`, "/retrieve 200 ", 2},
		{"health", m, RetrieveOptions{}, "GET", "/health", "", "/health 200 ", 0},
		{"ready", m, RetrieveOptions{}, "GET", "/ready", "", "/ready 200 ", 0},
		{"not ready", m, RetrieveOptions{Ready: func(context.Context) error { return errors.New("no") }}, "GET", "/ready", "", "/ready 503 not_ready", 0},
		{"openapi", m, RetrieveOptions{}, "GET", "/openapi.json", "", "/openapi.json 200 ", 0},
		{"not found", m, RetrieveOptions{}, "GET", "/x", "", "other 404 not_found", 0},
		{"method", m, RetrieveOptions{}, "GET", "/retrieve", "", "/retrieve 405 method", 0},
		{"malformed", m, RetrieveOptions{}, "POST", "/retrieve", `{"queries": [`, "/retrieve 400 malformed", 0},
		{"invalid", m, RetrieveOptions{}, "POST", "/retrieve", `{"queries": "x"}`, "/retrieve 422 invalid", 0},
		{"too many", m, RetrieveOptions{MaxQueries: 2}, "POST", "/retrieve", `{"queries": ["a", "b", "c"]}`, "/retrieve 422 too_many_queries", 0},
		{"too long", m, RetrieveOptions{MaxQueryBytes: 2}, "POST", "/retrieve", `{"queries": ["abc"]}`, "/retrieve 422 query_too_long", 0},
		{"over budget", m, RetrieveOptions{MaxResponseBytes: 10}, "POST", "/retrieve", `{"queries": ["abc"]}`, "/retrieve 413 over_budget", 0},
		{"body too large", m, RetrieveOptions{MaxBodyBytes: 10}, "POST", "/retrieve", `{"queries": ["abcdefghijkl"]}`, "/retrieve 413 body_too_large", 0},
		{"no reranker", m, RetrieveOptions{}, "POST", "/rerank", `{"queries": ["a"], "documents": [["b"]]}`, "/rerank 501 no_reranker", 0},
		{"compat no reranker", m, RetrieveOptions{Compat: CompatSearchR1}, "POST", "/retrieve", `{"queries": ["a"], "topk_retrieval": 3}`, "/retrieve 422 no_reranker", 0},
		{"search failed", &fakeSearcher{err: errors.New("disk on fire")}, RetrieveOptions{}, "POST", "/retrieve", `{"queries": ["a"]}`, "/retrieve 500 search_failed", 0},
		{"aborted midway", &failAfter{n: 1000}, RetrieveOptions{Workers: 1}, "POST", "/retrieve", many, "/retrieve 200 aborted", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &recObserver{}
			tc.o.Observer = obs
			srv := httptest.NewServer(NewRetrieveHandler(tc.s, tc.o))
			defer srv.Close()
			req, _ := http.NewRequest(tc.method, srv.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				var sink [4096]byte
				for {
					if _, err := resp.Body.Read(sink[:]); err != nil {
						break
					}
				}
				resp.Body.Close()
			}
			srv.Close() // waits for the handler to return
			if got := obs.last(); got != tc.want || len(obs.requests) != 1 || obs.begun != 1 {
				t.Fatalf("observed %q (%d begun), want one %q", obs.requests, obs.begun, tc.want)
			}
			if obs.searches != tc.searches {
				t.Errorf("%d searches observed, want %d", obs.searches, tc.searches)
			}
			if strings.HasSuffix(tc.want, "200 ") && tc.path == "/retrieve" {
				if len(obs.batches) != 1 || obs.batches[0] != 3 || obs.queues != 1 || obs.stages["search"] == 0 || obs.stages["write"] != 1 {
					t.Errorf("batches %v, queues %d, stages %v", obs.batches, obs.queues, obs.stages)
				}
			}
		})
	}
}

// TestObserverBusy: a request that finds no slot is reported busy, its queue wait too.
func TestObserverBusy(t *testing.T) {
	b := &blockingSearcher{entered: make(chan struct{}, 4), release: make(chan struct{})}
	obs := &recObserver{}
	srv := httptest.NewServer(NewRetrieveHandler(b, RetrieveOptions{MaxConcurrent: 1, QueueTimeout: 20 * time.Millisecond, Observer: obs}))
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		if resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["a"]}`)); err == nil {
			resp.Body.Close()
		}
	})
	<-b.entered
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := obs.last(); got != "/retrieve 503 busy" {
		t.Fatalf("observed %q", obs.requests)
	}
	close(b.release)
	wg.Wait()
	srv.Close()
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.queues != 2 || len(obs.batches) != 2 || len(obs.requests) != 2 {
		t.Fatalf("queues %d, batches %v, requests %q", obs.queues, obs.batches, obs.requests)
	}
}
