package searchr1

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

// repoRoot walks up from the working directory to go.mod.
func repoRoot(t testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// readJSONL calls fn for each line of a JSON-lines file.
func readJSONL(t testing.TB, path string, fn func(map[string]any)) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		fn(m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestRetrieveLoad runs 200 concurrent clients against POST /retrieve on 127.0.0.1 for
// 30 s (MEMORY_LOAD_DURATION, MEMORY_LOAD_CLIENTS and MEMORY_LOAD_MAXCONC override) over a real in-memory store
// holding the SciFact corpus, and requires zero errors. Run with MEMORY_LOAD=1.
func TestRetrieveLoad(t *testing.T) {
	if os.Getenv("MEMORY_LOAD") != "1" {
		t.Skip("set MEMORY_LOAD=1 to run the load test")
	}
	dir := os.Getenv("MEMORY_SCIFACT")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), "..", "shared", "data", "beir", "scifact")
	}
	duration := 30 * time.Second
	if d, err := time.ParseDuration(os.Getenv("MEMORY_LOAD_DURATION")); err == nil {
		duration = d
	}
	clients := 200
	if n, err := fmt.Sscan(os.Getenv("MEMORY_LOAD_CLIENTS"), &clients); n != 1 || err != nil {
		clients = 200
	}
	maxConc := 0 // the handler's default
	if n, err := fmt.Sscan(os.Getenv("MEMORY_LOAD_MAXCONC"), &maxConc); n != 1 || err != nil {
		maxConc = 0
	}

	m, queries := loadSciFact(t, dir)
	url := serveRetrieve(t, m, RetrieveOptions{MaxConcurrent: maxConc})
	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer tr.CloseIdleConnections()

	start := time.Now()
	res := hammerRetrieve(client, url, queries, clients, time.Now().Add(duration))
	elapsed := time.Since(start)
	latencies := res.latencies
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	t.Logf("max-concurrent=%d clients=%d duration=%v requests=%d errors=%d throughput=%.0f req/s p50=%v p90=%v p99=%v max=%v",
		maxConc, clients, elapsed.Round(time.Millisecond), len(latencies), res.errs, float64(len(latencies))/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		pct(1).Round(time.Microsecond))
	if res.errs != 0 {
		t.Fatalf("%d errors, first: %v", res.errs, res.firstErr)
	}
	if len(latencies) == 0 {
		t.Fatal("no request completed")
	}
}

// loadSciFact indexes the BEIR folder's corpus into a temporary store and returns it with
// the query texts.
func loadSciFact(t *testing.T, dir string) (*memory.Memory, []string) {
	t.Helper()
	m, err := memory.Open("", memory.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	var docs []memory.Document
	readJSONL(t, filepath.Join(dir, "corpus.jsonl"), func(r map[string]any) {
		docs = append(docs, memory.Document{ID: r["_id"].(string), Title: r["title"].(string), Text: r["text"].(string)})
	})
	t0 := time.Now()
	for i := 0; i < len(docs); i += 500 {
		if err := m.Add(context.Background(), docs[i:min(i+500, len(docs))]...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("indexed %d docs in %v", len(docs), time.Since(t0).Round(time.Millisecond))
	var queries []string
	readJSONL(t, filepath.Join(dir, "queries.jsonl"), func(r map[string]any) { queries = append(queries, r["text"].(string)) })
	return m, queries
}

// serveRetrieve serves s's /retrieve on a loopback port until the test ends and returns
// its URL.
func serveRetrieve(t *testing.T, s Searcher, opts RetrieveOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: NewRetrieveHandler(s, opts), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ErrServerClosed once the test ends
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/retrieve"
}

// loadResult is what the clients of a load run measured.
type loadResult struct {
	latencies []time.Duration // of the requests that succeeded
	errs      int64
	firstErr  any
}

// hammerRetrieve sends one-query /retrieve requests from clients goroutines, cycling
// through queries, until deadline.
func hammerRetrieve(client *http.Client, url string, queries []string, clients int, deadline time.Time) loadResult {
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		firstErr  atomic.Value
		wg        sync.WaitGroup
	)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var local []time.Duration
			for i := c; time.Now().Before(deadline); i += clients {
				q, _ := json.Marshal(queries[i%len(queries)]) // a string always marshals
				body := `{"queries": [` + string(q) + `], "topk": 3, "return_scores": true}`
				s := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				var r retrieveResponse
				derr := json.NewDecoder(resp.Body).Decode(&r)
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || derr != nil || len(r.Result) != 1 {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("status %d decode %v", resp.StatusCode, derr))
					continue
				}
				local = append(local, time.Since(s))
			}
			mu.Lock()
			latencies = append(latencies, local...)
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	return loadResult{latencies: latencies, errs: errs.Load(), firstErr: firstErr.Load()}
}
