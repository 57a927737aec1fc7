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

	m, err := memory.Open("", memory.WithNoSync())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	var docs []memory.Document
	readJSONL(t, filepath.Join(dir, "corpus.jsonl"), func(r map[string]any) {
		docs = append(docs, memory.Document{ID: r["_id"].(string), Title: r["title"].(string), Text: r["text"].(string)})
	})
	t0 := time.Now()
	for i := 0; i < len(docs); i += 500 {
		if err := m.Add(ctx, docs[i:min(i+500, len(docs))]...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("indexed %d docs in %v", len(docs), time.Since(t0).Round(time.Millisecond))
	var queries []string
	readJSONL(t, filepath.Join(dir, "queries.jsonl"), func(r map[string]any) { queries = append(queries, r["text"].(string)) })

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	maxConc := 0 // the handler's default
	if n, err := fmt.Sscan(os.Getenv("MEMORY_LOAD_MAXCONC"), &maxConc); n != 1 || err != nil {
		maxConc = 0
	}
	srv := &http.Server{Handler: NewRetrieveHandler(m, RetrieveOptions{MaxConcurrent: maxConc}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String() + "/retrieve"

	tr := &http.Transport{MaxIdleConns: clients, MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	defer tr.CloseIdleConnections()

	deadline := time.Now().Add(duration)
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		firstErr  atomic.Value
		wg        sync.WaitGroup
	)
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var local []time.Duration
			for i := c; time.Now().Before(deadline); i += clients {
				q, _ := json.Marshal(queries[i%len(queries)])
				body := `{"queries": [` + string(q) + `], "topk": 3, "return_scores": true}`
				s := time.Now()
				resp, err := client.Post(url, "application/json", strings.NewReader(body))
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				var r RetrieveResponse
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
	elapsed := time.Since(start)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))]
	}
	t.Logf("max-concurrent=%d clients=%d duration=%v requests=%d errors=%d throughput=%.0f req/s p50=%v p90=%v p99=%v max=%v",
		maxConc, clients, elapsed.Round(time.Millisecond), len(latencies), errs.Load(), float64(len(latencies))/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.90).Round(time.Microsecond), pct(0.99).Round(time.Microsecond),
		pct(1).Round(time.Microsecond))
	if errs.Load() != 0 {
		t.Fatalf("%d errors, first: %v", errs.Load(), firstErr.Load())
	}
	if len(latencies) == 0 {
		t.Fatal("no request completed")
	}
}
