package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape GETs url+"/metrics" and parses it with Prometheus' own text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// metricMatches reports whether m has every label of want.
func metricMatches(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// value sums the counters or gauges of family name with the labels of want (a histogram
// gives its count); -1 when the family is missing.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	sum := 0.0
	for _, m := range f.GetMetric() {
		if !metricMatches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

// histogram returns the histogram of family name with the labels of want.
func histogram(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]string) *dto.Histogram {
	t.Helper()
	for _, m := range fams[name].GetMetric() {
		if metricMatches(m, want) && m.Histogram != nil {
			return m.GetHistogram()
		}
	}
	t.Fatalf("no histogram %s%v", name, want)
	return nil
}

// waitReady polls url+"/ready" until it answers 200.
func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(url + "/ready")
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				if string(body) != `{"status":"ready"}` {
					t.Fatalf("/ready: %s", body)
				}
				return
			}
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Fatalf("/ready: %d %s", resp.StatusCode, body)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/ready did not turn 200: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestServeRetrieveMetrics sends /retrieve requests of known batch sizes from several
// clients at once, and some failing ones, then parses /metrics with Prometheus' text
// parser: requests, errors by kind, batch sizes (count, sum and buckets), queries,
// queue waits, per-stage search timings and the store's size match what was sent.
func TestServeRetrieveMetrics(t *testing.T) {
	base := startServe(t, seedStore(t), "--mode", "bm25")
	waitReady(t, base)

	sizes := []int{1, 2, 3, 5, 8, 13, 1, 1, 64, 200}
	const rounds = 5 // each size sent 5 times, by 5 clients at once
	var wg sync.WaitGroup
	for c := range rounds {
		wg.Go(func() {
			for i, n := range sizes {
				body := searchR1Body(n)
				if (c+i)%3 == 0 {
					body = strings.Replace(body, `"return_scores": true`, `"return_scores": false`, 1)
				}
				resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(body))
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					t.Errorf("retrieve of %d queries: %d", n, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	total, ones := 0, 0
	for _, n := range sizes {
		total += n
		if n == 1 {
			ones++
		}
	}
	// Failures: 2 missing queries (422 invalid), 1 topk 0 (422 invalid), 1 unknown path
	// (404), 1 GET /retrieve (405), 1 malformed JSON (400).
	for _, f := range []struct{ method, path, body string }{
		{"POST", "/retrieve", `{"topk": 3}`}, {"POST", "/retrieve", `{}`}, {"POST", "/retrieve", `{"queries": ["x"], "topk": 0}`},
		{"GET", "/nope", ""}, {"GET", "/retrieve", ""}, {"POST", "/retrieve", `{"queries": [`},
	} {
		req, _ := http.NewRequest(f.method, base+f.path, strings.NewReader(f.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}

	fams := scrape(t, base)
	ep := map[string]string{"endpoint": "/retrieve"}
	for _, c := range []struct {
		name string
		want map[string]string
		v    float64
	}{
		{"memory_retrieve_requests_total", map[string]string{"endpoint": "/retrieve", "code": "200"}, rounds * float64(len(sizes))},
		{"memory_retrieve_requests_total", map[string]string{"endpoint": "/retrieve", "code": "422"}, 3},
		{"memory_retrieve_requests_total", map[string]string{"endpoint": "/retrieve", "code": "400"}, 1},
		{"memory_retrieve_requests_total", map[string]string{"endpoint": "/retrieve", "code": "405"}, 1},
		{"memory_retrieve_requests_total", map[string]string{"endpoint": "other", "code": "404"}, 1},
		{"memory_retrieve_errors_total", map[string]string{"endpoint": "/retrieve", "kind": "invalid"}, 3},
		{"memory_retrieve_errors_total", map[string]string{"endpoint": "/retrieve", "kind": "malformed"}, 1},
		{"memory_retrieve_errors_total", map[string]string{"endpoint": "/retrieve", "kind": "method"}, 1},
		{"memory_retrieve_errors_total", map[string]string{"endpoint": "other", "kind": "not_found"}, 1},
		{"memory_retrieve_errors_total", ep, 5},
		{"memory_retrieve_request_duration_seconds", ep, rounds*float64(len(sizes)) + 5},
		{"memory_retrieve_queries_total", ep, rounds * float64(total)},
		{"memory_retrieve_batch_queries", ep, rounds * float64(len(sizes))},
		{"memory_retrieve_queue_wait_seconds", ep, rounds * float64(len(sizes))},
		{"memory_retrieve_stage_duration_seconds", map[string]string{"endpoint": "/retrieve", "stage": "write"}, rounds * float64(len(sizes))},
		// Every query is one search of the store, in BM25 mode.
		{"memory_search_stage_duration_seconds", map[string]string{"mode": "bm25", "stage": "total"}, rounds * float64(total)},
		{"memory_search_stage_duration_seconds", map[string]string{"mode": "bm25", "stage": "bm25"}, rounds * float64(total)},
		{"memory_search_stage_duration_seconds", map[string]string{"stage": "dense"}, 0},
		{"memory_retrieve_in_flight", nil, 0},
		{"memory_store_documents", nil, 2},
	} {
		if got := value(fams, c.name, c.want); got != c.v {
			t.Errorf("%s%v = %v, want %v", c.name, c.want, got, c.v)
		}
	}
	h := histogram(t, fams, "memory_retrieve_batch_queries", ep)
	if h.GetSampleSum() != rounds*float64(total) {
		t.Errorf("batch sizes sum %v, want %d", h.GetSampleSum(), rounds*total)
	}
	for _, b := range h.GetBucket() {
		want := 0
		for _, n := range sizes {
			if float64(n) <= b.GetUpperBound() {
				want += rounds
			}
		}
		if b.GetCumulativeCount() != uint64(want) {
			t.Errorf("batch bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
		}
	}
	if le1 := h.GetBucket()[0]; le1.GetUpperBound() != 1 || le1.GetCumulativeCount() != uint64(rounds*ones) {
		t.Errorf("first bucket %v", le1)
	}
	if v := value(fams, "memory_retrieve_stage_duration_seconds", map[string]string{"endpoint": "/retrieve", "stage": "search"}); v < rounds*float64(len(sizes)) {
		t.Errorf("search stage observed %v times, want at least one per request", v)
	}
	if v := value(fams, "memory_store_disk_bytes", nil); v <= 0 {
		t.Errorf("memory_store_disk_bytes %v", v)
	}
	if v := value(fams, "go_goroutines", nil); v <= 0 {
		t.Errorf("go_goroutines %v: the runtime's collector is missing", v)
	}
	// pprof is off by default; /openapi.json and /health are served.
	for path, code := range map[string]int{"/debug/pprof/": 404, "/openapi.json": 200, "/health": 200} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != code {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, code)
		}
	}
}

// TestServeMCPHTTPOps: the MCP listener answers /health, /ready and /metrics without the
// token (probes and scrapers carry none), counts tool calls by tool and outcome, and
// serves pprof only with --pprof, behind the token (and never /debug/pprof/cmdline,
// which would show it); the /retrieve listener of the same process has a registry of its
// own.
func TestServeMCPHTTPOps(t *testing.T) {
	dir := seedStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--store", dir, "--retrieve", "127.0.0.1:0", "--mcp-http", "127.0.0.1:0", "--token", "tok", "--pprof"}, io.Discard, &stderr)
	}()
	addrs := waitAddrs(t, &stderr, 2, done)
	base := strings.TrimSuffix(addrs["mcp"], "/")
	waitReady(t, base)
	waitReady(t, addrs["retrieve"])

	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: addrs["mcp"], HTTPClient: &http.Client{Transport: bearer("tok")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const searches = 7
	for i := range searches {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": fmt.Sprintf("capital %d", i)}})
		if err != nil || res.IsError {
			t.Fatalf("memory_search: %v %v", res, err)
		}
	}
	// A tool error: a missing document.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_get", Arguments: map[string]any{"id": "missing"}}); err != nil || !res.IsError {
		t.Fatalf("memory_get of a missing id: %v %v", res, err)
	}
	cs.Close()

	fams := scrape(t, base)
	for _, c := range []struct {
		name string
		want map[string]string
		v    float64
	}{
		{"memory_mcp_calls_total", map[string]string{"method": "tools/call", "tool": "memory_search", "outcome": "ok"}, searches},
		{"memory_mcp_calls_total", map[string]string{"method": "tools/call", "tool": "memory_get", "outcome": "tool_error"}, 1},
		{"memory_mcp_call_duration_seconds", map[string]string{"method": "tools/call", "tool": "memory_search"}, searches},
		{"memory_mcp_calls_total", map[string]string{"method": "initialize"}, 1},
		{"memory_search_stage_duration_seconds", map[string]string{"stage": "total"}, searches},
		{"memory_store_documents", nil, 2},
		// The retrieve listener's metrics are not in this registry.
		{"memory_retrieve_requests_total", nil, -1},
	} {
		if got := value(fams, c.name, c.want); got != c.v {
			t.Errorf("%s%v = %v, want %v", c.name, c.want, got, c.v)
		}
	}
	if v := value(fams, "memory_mcp_http_requests_total", map[string]string{"method": "post", "code": "200"}); v < searches {
		t.Errorf("memory_mcp_http_requests_total{post,200} = %v, want at least %d", v, searches)
	}
	rfams := scrape(t, addrs["retrieve"])
	if v := value(rfams, "memory_mcp_calls_total", nil); v != -1 {
		t.Errorf("the retrieve listener reports MCP calls: %v", v)
	}

	for _, c := range []struct {
		url, token string
		code       int
	}{
		{base + "/health", "", 200},
		{base + "/debug/pprof/", "", 401},
		{base + "/debug/pprof/", "tok", 200},
		{base + "/debug/pprof/cmdline", "tok", 404}, // not a profile: pprof.Index answers 404
		{addrs["retrieve"] + "/debug/pprof/", "", 200},
		{addrs["retrieve"] + "/debug/pprof/goroutine?debug=1", "", 200},
		{addrs["retrieve"] + "/debug/pprof/cmdline", "", 404},
	} {
		req, _ := http.NewRequest("GET", c.url, nil)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.code {
			t.Errorf("GET %s (token %q): %d, want %d", c.url, c.token, resp.StatusCode, c.code)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
}

// TestServeOpsReady: /ready is 503 until the served collection's indexes are open and
// caught up, 200 then (an empty new store too), and 503 again once the store is closed.
func TestServeOpsReady(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
	}{
		{"filled", seedStore},
		{"empty", func(t *testing.T) string { return t.TempDir() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := memory.Open(tc.dir(t))
			if err != nil {
				t.Fatal(err)
			}
			cold := &serveOps{m: m}
			if err := cold.ready(ctx); !errors.Is(err, errNotReady) {
				t.Fatalf("before the indexes are open: %v, want errNotReady", err)
			}
			ops := newServeOps(ctx, m, "", false, slog.New(slog.DiscardHandler))
			deadline := time.Now().Add(10 * time.Second)
			for ops.ready(ctx) != nil {
				if time.Now().After(deadline) {
					t.Fatalf("not ready: %v", ops.ready(ctx))
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := m.Close(); err != nil {
				t.Fatal(err)
			}
			if err := ops.ready(ctx); !errors.Is(err, memory.ErrClosed) {
				t.Fatalf("after Close: %v, want ErrClosed", err)
			}
		})
	}
}
