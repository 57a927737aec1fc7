package searchr1

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/rerank"
)

// pythonBody is byte for byte what Search-R1's client sends:
// requests.post(url, json={"queries": [...], "topk": 3, "return_scores": True})
// (json.dumps with its default ", " and ": " separators).
const pythonBody = `{"queries": ["director of Inception", "Christopher Nolan birthplace"], "topk": 3, "return_scores": true}`

// postPython posts body to url's /retrieve with python-requests' headers (see postPythonTo).
func postPython(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	return postPythonTo(t, url+"/retrieve", body)
}

// postPythonTo posts body to url with the headers python-requests sends.
func postPythonTo(t *testing.T, url, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "python-requests/2.32.3")
	req.Header.Set("Accept-Encoding", "gzip, deflate")
	req.Header.Set("Accept", "*/*")
	req.Header.Set("Connection", "keep-alive")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func TestRetrievePythonClient(t *testing.T) {
	srv := httptest.NewServer(NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{}))
	defer srv.Close()
	resp, data := postPython(t, srv.URL, pythonBody)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), data)
	}
	golden := filepath.Join("testdata", "retrieve_scores.golden.json")
	if *update {
		if err := os.WriteFile(golden, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, want) {
		t.Fatalf("response:\n%s\nwant\n%s", data, want)
	}
	// What generation.py reads: response.json()['result'][i][j]['document']['contents'].
	var generic map[string][][]map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		t.Fatal(err)
	}
	hits := generic["result"]
	if len(hits) != 2 || len(hits[0]) != 2 || len(hits[1]) != 1 {
		t.Fatalf("shape: %v", hits)
	}
	for _, h := range hits[0] {
		if keys := sortedKeys(h); !reflect.DeepEqual(keys, []string{"document", "score"}) {
			t.Fatalf("hit keys %v", keys)
		}
		if keys := sortedKeys(h["document"].(map[string]any)); !reflect.DeepEqual(keys, []string{"contents", "id"}) {
			t.Fatalf("document keys %v", keys)
		}
	}
	if c := hits[0][0]["document"].(map[string]any)["contents"]; c != "\"Inception\"\nInception is a 2010 film directed by Christopher Nolan." {
		t.Fatalf("contents %q", c)
	}
	if hits[0][0]["score"] != 12.5 {
		t.Fatalf("score %v", hits[0][0]["score"])
	}
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := range ks {
		for j := i + 1; j < len(ks); j++ {
			if ks[j] < ks[i] {
				ks[i], ks[j] = ks[j], ks[i]
			}
		}
	}
	return ks
}

func TestRetrieveVariants(t *testing.T) {
	s := multiHopSearcher()
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{DefaultTopK: 1}))
	defer srv.Close()

	_, data := postPython(t, srv.URL, `{"queries": ["director of Inception"], "topk": 3, "return_scores": false}`)
	var noScores struct {
		Result [][]map[string]any `json:"result"`
	}
	if err := json.Unmarshal(data, &noScores); err != nil || len(noScores.Result[0]) != 2 {
		t.Fatalf("no scores: %s (%v)", data, err)
	}
	if keys := sortedKeys(noScores.Result[0][0]); !reflect.DeepEqual(keys, []string{"contents", "id"}) {
		t.Fatalf("doc keys %v", keys)
	}
	for _, body := range []string{
		`{"queries": ["director of Inception"], "topk": null, "return_scores": true}`,
		`{"queries": ["director of Inception"]}`,
	} {
		_, data := postPython(t, srv.URL, body)
		var r retrieveResponse
		if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 1 || len(r.Result[0]) != 1 {
			t.Fatalf("default topk for %s: %s", body, data)
		}
	}
	_, data = postPython(t, srv.URL, `{"queries": ["", "director of Inception"], "topk": 2, "return_scores": true}`)
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 2 || len(r.Result[0]) != 0 || len(r.Result[1]) != 2 {
		t.Fatalf("blank query: %s", data)
	}
	if !bytes.Contains(data, []byte(`"result":[[],[`)) {
		t.Fatalf("blank query must give an empty list, not null: %s", data)
	}
	_, data = postPython(t, srv.URL, `{"queries": [], "topk": 2}`)
	if string(data) != `{"result":[]}` {
		t.Fatalf("no queries: %s", data)
	}
}

func TestRetrieveErrors(t *testing.T) {
	srv := httptest.NewServer(NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{MaxQueries: 2, MaxBodyBytes: 256, MaxTopK: 10}))
	defer srv.Close()
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"get retrieve", "GET", "/retrieve", "", 405},
		{"malformed", "POST", "/retrieve", `{"queries": [`, 400},
		{"trailing data", "POST", "/retrieve", `{"queries": ["a"]} {}`, 400},
		{"not an object", "POST", "/retrieve", `["a"]`, 422},
		{"null body", "POST", "/retrieve", `null`, 422},
		{"missing queries", "POST", "/retrieve", `{"topk": 3}`, 422},
		{"queries not a list", "POST", "/retrieve", `{"queries": "a"}`, 422},
		{"query not a string", "POST", "/retrieve", `{"queries": [1]}`, 422},
		{"topk zero", "POST", "/retrieve", `{"queries": ["a"], "topk": 0}`, 422},
		{"topk too large", "POST", "/retrieve", `{"queries": ["a"], "topk": 11}`, 422},
		{"topk string", "POST", "/retrieve", `{"queries": ["a"], "topk": "3"}`, 422},
		{"return_scores string", "POST", "/retrieve", `{"queries": ["a"], "return_scores": "yes"}`, 422},
		{"too many queries", "POST", "/retrieve", `{"queries": ["a", "b", "c"]}`, 422},
		{"body too large", "POST", "/retrieve", `{"queries": ["` + strings.Repeat("x", 300) + `"]}`, 413},
		{"unknown path", "GET", "/nope", "", 404},
		{"post health", "POST", "/health", "", 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e map[string]string
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || e["detail"] == "" {
				t.Fatalf("error body not JSON {detail}: %v %v", e, err)
			}
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, c.status, e["detail"])
			}
			if c.status == 405 && resp.Header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	resp, err := http.Get(srv.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"status":"ok"}` {
		t.Fatalf("health: %d %s", resp.StatusCode, body)
	}
}

type blockingSearcher struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingSearcher) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	b.entered <- struct{}{}
	<-b.release
	return nil, nil
}

func TestRetrieveConcurrencyLimitAndFailures(t *testing.T) {
	b := &blockingSearcher{entered: make(chan struct{}, 4), release: make(chan struct{})}
	srv := httptest.NewServer(NewRetrieveHandler(b, RetrieveOptions{MaxConcurrent: 1, QueueTimeout: 50 * time.Millisecond}))
	defer srv.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["a"]}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-b.entered // the first request holds the only slot
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(`{"queries": ["b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("busy: status %d", resp.StatusCode)
	}
	close(b.release)
	wg.Wait()

	failing := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{err: errors.New("disk on fire")}, RetrieveOptions{}))
	defer failing.Close()
	resp, data := postPython(t, failing.URL, pythonBody)
	if resp.StatusCode != 500 || strings.Contains(string(data), "disk on fire") {
		t.Fatalf("search failure: %d %s", resp.StatusCode, data)
	}
	invalid := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{err: memory.ErrInvalidFilter}, RetrieveOptions{}))
	defer invalid.Close()
	if resp, _ := postPython(t, invalid.URL, pythonBody); resp.StatusCode != 422 {
		t.Fatalf("invalid option: %d", resp.StatusCode)
	}
}

func TestRetrieveRealStore(t *testing.T) {
	m, err := memory.Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Add(context.Background(),
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(NewRetrieveHandler(m, RetrieveOptions{}))
	defer srv.Close()
	_, data := postPython(t, srv.URL, `{"queries": ["What is the capital of France?"], "topk": 3, "return_scores": true}`)
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Result) != 1 || len(r.Result[0]) == 0 || r.Result[0][0].Document.ID != "fr" ||
		r.Result[0][0].Document.Contents != "\"France\"\nParis is the capital of France." || r.Result[0][0].Score <= 0 {
		t.Fatalf("response %s", data)
	}
}

// indexSearcher answers query "q<i>" with topk results whose IDs name i, after a random
// short pause, and records the peak number of concurrent searches.
type indexSearcher struct {
	active, peak atomic.Int64
	calls        atomic.Int64
	sleep        time.Duration
	failAt       int // query index that fails (-1: none)
	block        map[int]chan struct{}
}

func (s *indexSearcher) Search(ctx context.Context, q string, opts ...memory.SearchOption) ([]memory.Result, error) {
	n := s.active.Add(1)
	defer s.active.Add(-1)
	for {
		p := s.peak.Load()
		if n <= p || s.peak.CompareAndSwap(p, n) {
			break
		}
	}
	s.calls.Add(1)
	var so memory.SearchOptions
	for _, o := range opts {
		o(&so)
	}
	i, err := strconv.Atoi(strings.TrimPrefix(q, "q"))
	if err != nil {
		return nil, fmt.Errorf("bad query %q", q)
	}
	if ch, ok := s.block[i]; ok {
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.sleep > 0 {
		time.Sleep(time.Duration(rand.Int64N(int64(s.sleep))))
	}
	if i == s.failAt {
		return nil, errors.New("disk on fire")
	}
	out := make([]memory.Result, so.TopK)
	for j := range out {
		out[j] = memory.Result{ID: fmt.Sprintf("%d-%d", i, j), Title: "T", Text: "text of " + q, Score: float64(100 - j)}
	}
	return out, nil
}

// pythonQueries is the body Search-R1's client sends for n queries: json.dumps with its
// ", " and ": " separators.
func pythonQueries(n, topk int) string {
	var b strings.Builder
	b.WriteString(`{"queries": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(`"q` + strconv.Itoa(i) + `"`)
	}
	fmt.Fprintf(&b, `], "topk": %d, "return_scores": true}`, topk)
	return b.String()
}

func TestRetrieveSearchR1Batch(t *testing.T) {
	s := &indexSearcher{failAt: -1, sleep: 200 * time.Microsecond}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Workers: 4}))
	defer srv.Close()

	// 2,560 queries: Search-R1's stock GRPO step (train batch 512 x 5 rollouts).
	resp, data := postPython(t, srv.URL, pythonQueries(2560, 3))
	if resp.StatusCode != 200 {
		t.Fatalf("2,560 queries: %d %s", resp.StatusCode, data)
	}
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Result) != 2560 {
		t.Fatalf("%d result lists for 2,560 queries", len(r.Result))
	}
	for i, l := range r.Result {
		if len(l) != 3 || l[0].Document.ID != fmt.Sprintf("%d-0", i) || l[2].Document.ID != fmt.Sprintf("%d-2", i) {
			t.Fatalf("list %d out of order: %+v", i, l)
		}
	}
	if p := s.peak.Load(); p < 2 {
		t.Errorf("queries of one request ran %d at a time; want them in parallel", p)
	}

	// 8,192 is the default cap; 8,193 gets 422 naming it.
	resp, data = postPython(t, srv.URL, pythonQueries(8193, 3))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(data), "8192") || !strings.Contains(string(data), "max-queries") {
		t.Fatalf("8,193 queries: %d %s", resp.StatusCode, data)
	}
	calls := s.calls.Load()
	resp, data = postPython(t, srv.URL, pythonQueries(8192, 3))
	if resp.StatusCode != 200 {
		t.Fatalf("8,192 queries: %d %.200s", resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Result) != 8192 {
		t.Fatalf("8,192 queries: %d lists (%v)", len(r.Result), err)
	}
	if got := s.calls.Load() - calls; got != 8192 {
		t.Fatalf("%d searches for 8,192 queries", got)
	}
}

func TestRetrieveLimits(t *testing.T) {
	s := &indexSearcher{failAt: -1}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{
		MaxQueries: 10, MaxQueryBytes: 8, MaxPassageBytes: 1000, MaxResponseBytes: 10 * 3 * 1000, MaxTopK: 50,
	}))
	defer srv.Close()
	cases := []struct {
		name, body string
		status     int
		detail     string
	}{
		{"within budget", pythonQueries(10, 3), 200, ""},
		{"over budget", pythonQueries(10, 4), 413, "response budget of 30000 bytes"},
		{"over budget by topk", pythonQueries(1, 31), 413, "31 x 1000"},
		{"query over the byte cap", `{"queries": ["q1", "q123456789"]}`, 422, "queries[1] is 10 bytes, the per-query cap is 8 bytes"},
		{"too many", pythonQueries(11, 1), 422, "at most 10"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, data := postPython(t, srv.URL, c.body)
			if resp.StatusCode != c.status || !strings.Contains(string(data), c.detail) {
				t.Fatalf("%d %s; want %d naming %q", resp.StatusCode, data, c.status, c.detail)
			}
		})
	}
}

func TestRetrievePassageCap(t *testing.T) {
	long := strings.Repeat("é", 100) // 200 bytes
	s := &fakeSearcher{byQuery: map[string][]memory.Result{"q": {res("a", "", long, 1)}}}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{MaxPassageBytes: 51}))
	defer srv.Close()
	_, data := postPython(t, srv.URL, `{"queries": ["q"], "topk": 1, "return_scores": true}`)
	var r retrieveResponse
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	if c := r.Result[0][0].Document.Contents; c != strings.Repeat("é", 25) {
		t.Fatalf("contents not cut to 51 bytes at a rune boundary: %q", c)
	}
}

// batchOnly implements BatchSearcher and fails plain Search, so the test proves which
// path the handler took.
type batchOnly struct {
	mu      sync.Mutex
	batches [][]string
}

func (b *batchOnly) Search(context.Context, string, ...memory.SearchOption) ([]memory.Result, error) {
	return nil, errors.New("Search called on a BatchSearcher")
}

func (b *batchOnly) SearchBatch(ctx context.Context, qs []string, opts ...memory.SearchOption) ([][]memory.Result, error) {
	b.mu.Lock()
	b.batches = append(b.batches, append([]string(nil), qs...))
	b.mu.Unlock()
	out := make([][]memory.Result, len(qs))
	for i, q := range qs {
		if strings.TrimSpace(q) == "" {
			return nil, errors.New("blank query in a batch")
		}
		out[i] = []memory.Result{{ID: q, Text: q}}
	}
	return out, nil
}

func TestRetrieveUsesBatchSearcher(t *testing.T) {
	b := &batchOnly{}
	srv := httptest.NewServer(NewRetrieveHandler(b, RetrieveOptions{}))
	defer srv.Close()
	body := `{"queries": ["a", " ", "b", "", "c"], "topk": 1, "return_scores": false}`
	resp, data := postPython(t, srv.URL, body)
	if resp.StatusCode != 200 || string(data) != `{"result":[[{"id":"a","contents":"a"}],[],[{"id":"b","contents":"b"}],[],[{"id":"c","contents":"c"}]]}` {
		t.Fatalf("%d %s", resp.StatusCode, data)
	}
	if len(b.batches) != 1 || strings.Join(b.batches[0], ",") != "a,b,c" {
		t.Fatalf("batches %q", b.batches)
	}
	// A real store is a BatchSearcher.
	var _ BatchSearcher = (*memory.Collection)(nil)
}

func TestSearchQueriesPool(t *testing.T) {
	s := &indexSearcher{failAt: -1, sleep: 100 * time.Microsecond}
	qs := make([]string, 300)
	for i := range qs {
		qs[i] = "q" + strconv.Itoa(i)
	}
	qs[7] = "  "
	out, err := SearchQueries(context.Background(), s, qs, 3, memory.TopK(2))
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range out {
		if i == 7 {
			if len(l) != 0 {
				t.Fatalf("blank query got %v", l)
			}
			continue
		}
		if len(l) != 2 || l[0].ID != fmt.Sprintf("%d-0", i) {
			t.Fatalf("out[%d] = %v", i, l)
		}
	}
	if p := s.peak.Load(); p > 3 || p < 2 {
		t.Fatalf("peak concurrency %d with 3 workers", p)
	}
	s.failAt = 150
	if _, err := SearchQueries(context.Background(), s, qs, 3); err == nil || !strings.Contains(err.Error(), "queries[150]") {
		t.Fatalf("failure not reported with its index: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := SearchQueries(ctx, s, qs, 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestRetrieveStreams: the first lists reach the client while later queries are still
// being searched, so a response is never built whole in memory.
func TestRetrieveStreams(t *testing.T) {
	release := make(chan struct{})
	const n = 2000
	s := &indexSearcher{failAt: -1, block: map[int]chan struct{}{n - 1: release}}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Workers: 1}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(pythonQueries(n, 3)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	head := make([]byte, 64<<10)
	if _, err := io.ReadFull(br, head); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(head), `{"result":[[{"document":{"id":"0-0"`) {
		t.Fatalf("head %.80s", head)
	}
	close(release) // only now can the last query finish
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	var r retrieveResponse
	if err := json.Unmarshal(append(head, rest...), &r); err != nil || len(r.Result) != n {
		t.Fatalf("%d lists (%v)", len(r.Result), err)
	}
}

// TestRetrieveMidStreamFailureAborts: a search failing after the response began must not
// leave the client a well-formed but short answer.
func TestRetrieveMidStreamFailureAborts(t *testing.T) {
	s := &indexSearcher{failAt: 1900}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Workers: 1, Logger: discardLogger()}))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/retrieve", "application/json", strings.NewReader(pythonQueries(2000, 3)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err == nil {
		var r retrieveResponse
		if json.Unmarshal(data, &r) == nil {
			t.Fatalf("a failed search gave a complete answer of %d lists", len(r.Result))
		}
	}
	// Failure in the first chunk: a proper 500.
	s2 := &indexSearcher{failAt: 0}
	srv2 := httptest.NewServer(NewRetrieveHandler(s2, RetrieveOptions{Logger: discardLogger()}))
	defer srv2.Close()
	if resp, data := postPython(t, srv2.URL, pythonQueries(3, 3)); resp.StatusCode != 500 || strings.Contains(string(data), "fire") {
		t.Fatalf("first-chunk failure: %d %s", resp.StatusCode, data)
	}
}

// TestRetrieveClientGoneStopsSearch: cancelling the request stops the workers.
func TestRetrieveClientGoneStopsSearch(t *testing.T) {
	s := &indexSearcher{failAt: -1, sleep: 2 * time.Millisecond}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Workers: 2}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/retrieve", strings.NewReader(pythonQueries(8000, 3)))
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(100 * time.Millisecond)
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	time.Sleep(200 * time.Millisecond)
	before := s.calls.Load()
	time.Sleep(200 * time.Millisecond)
	if after := s.calls.Load(); after != before || after >= 8000 {
		t.Fatalf("searches went on after the client left: %d then %d of 8000", before, after)
	}
}

func tinyCrossEncoder(t *testing.T) *rerank.CrossEncoder {
	t.Helper()
	dir := onnxtest.Model(t, "tiny-bert-cross-encoder")
	ce, err := rerank.NewCrossEncoder(context.Background(), dir, rerank.CrossEncoderOptions{LibraryPath: onnxtest.Library(t), Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ce.Close() })
	return ce
}

func TestRetrieveRerankFollowsLogits(t *testing.T) {
	ce := tinyCrossEncoder(t)
	var hits []memory.Result
	words := []string{"paris", "france", "capital", "river", "seine", "berlin", "germany", "bread", "music", "tower", "art", "wine"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 12; i++ {
		var text []string
		for j := 0; j < 8; j++ {
			text = append(text, words[r.IntN(len(words))])
		}
		hits = append(hits, res(fmt.Sprintf("d%d", i), fmt.Sprintf("Title %d", i), strings.Join(text, " "), float64(20-i)))
	}
	const query = "what is the capital of france"
	s := &fakeSearcher{byQuery: map[string][]memory.Result{query: hits}}
	srv := httptest.NewServer(NewRetrieveHandler(s, RetrieveOptions{Reranker: ce, RerankDepth: 10}))
	defer srv.Close()
	_, data := postPython(t, srv.URL, `{"queries": ["`+query+`"], "topk": 4, "return_scores": true}`)
	var resp retrieveResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		t.Fatalf("%v: %s", err, data)
	}
	if s.topKs[0] != 10 {
		t.Fatalf("retrieved top %d, want the rerank depth 10", s.topKs[0])
	}
	// Expected: the 10 retrieved candidates ordered by the model's own logits.
	texts := make([]string, 10)
	for i, h := range hits[:10] {
		texts[i] = h.Title + "\n" + h.Text
	}
	logits, err := ce.Score(context.Background(), query, texts)
	if err != nil {
		t.Fatal(err)
	}
	order := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	sort.SliceStable(order, func(a, b int) bool { return logits[order[a]] > logits[order[b]] })
	got := resp.Result[0]
	if len(got) != 4 {
		t.Fatalf("%d results, want topk 4", len(got))
	}
	for k, i := range order[:4] {
		if got[k].Document.ID != hits[i].ID {
			t.Fatalf("rank %d: %s, want %s (logits %v)", k, got[k].Document.ID, hits[i].ID, logits)
		}
		if want := vecmath.Sigmoid(float64(logits[i])); math.Abs(got[k].Score-want) > 1e-6 {
			t.Fatalf("rank %d score %v, want sigmoid(logit) %v", k, got[k].Score, want)
		}
	}
	if order[0] == 0 && order[1] == 1 && order[2] == 2 && order[3] == 3 {
		t.Fatal("the model agrees with the retrieval order: the test would not see a missing rerank")
	}

	// /rerank with the same passages as /retrieve returns them (wrapped or bare).
	docs := make([]string, 10)
	for i, h := range hits[:10] {
		d, _ := json.Marshal(retrievedDoc{ID: h.ID, Contents: Contents(h)})
		if i%2 == 0 {
			d = []byte(`{"document": ` + string(d) + `, "score": 1.5}`)
		}
		docs[i] = string(d)
	}
	body := `{"queries": ["` + query + `", "empty"], "documents": [[` + strings.Join(docs, ", ") + `], []], "rerank_topk": 3, "return_scores": true}`
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/rerank", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	hr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(hr.Body)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != 200 {
		t.Fatalf("/rerank: %d %s", hr.StatusCode, data)
	}
	var rr retrieveResponse
	if err := json.Unmarshal(data, &rr); err != nil || len(rr.Result) != 2 || len(rr.Result[0]) != 3 || len(rr.Result[1]) != 0 {
		t.Fatalf("/rerank: %s (%v)", data, err)
	}
	for k, i := range order[:3] {
		if d := rr.Result[0][k].Document; d.ID != hits[i].ID || d.Contents != Contents(hits[i]) {
			t.Fatalf("/rerank rank %d: %+v, want %s", k, d, hits[i].ID)
		}
	}
}

func TestRerankEndpointErrors(t *testing.T) {
	plain := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{}))
	defer plain.Close()
	resp, err := http.Post(plain.URL+"/rerank", "application/json", strings.NewReader(`{"queries": ["a"], "documents": [[]]}`))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented || !strings.Contains(string(data), "--reranker") {
		t.Fatalf("/rerank without reranker: %d %s", resp.StatusCode, data)
	}

	srv := httptest.NewServer(NewRetrieveHandler(&fakeSearcher{}, RetrieveOptions{Reranker: constReranker{}, MaxRerankPairs: 3}))
	defer srv.Close()
	cases := []struct {
		name, body string
		status     int
	}{
		{"ok", `{"queries": ["a"], "documents": [["x", {"id": 7, "contents": "yyy"}]], "rerank_topk": 1}`, 200},
		{"missing documents", `{"queries": ["a"]}`, 422},
		{"length mismatch", `{"queries": ["a", "b"], "documents": [[]]}`, 422},
		{"doc without contents", `{"queries": ["a"], "documents": [[{"id": "x"}]]}`, 422},
		{"doc wrong type", `{"queries": ["a"], "documents": [[3]]}`, 422},
		{"too many pairs", `{"queries": ["a"], "documents": [["1", "2", "3", "4"]]}`, 422},
		{"bad topk", `{"queries": ["a"], "documents": [["1"]], "rerank_topk": 0}`, 422},
		{"malformed", `{"queries": [`, 400},
		{"get", ``, 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method := http.MethodPost
			if c.name == "get" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, srv.URL+"/rerank", strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			data, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("%d %s, want %d", resp.StatusCode, data, c.status)
			}
			if c.status == 200 && string(data) != `{"result":[[{"id":"7","contents":"yyy"}]]}` {
				t.Fatalf("body %s", data)
			}
		})
	}
}

// constReranker scores a passage by its length: longer is better.
type constReranker struct{}

func (constReranker) Score(_ context.Context, _ string, ps []string) ([]float32, error) {
	out := make([]float32, len(ps))
	for i, p := range ps {
		out[i] = float32(len(p))
	}
	return out, nil
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// FuzzRetrieveRequest feeds arbitrary bodies to /retrieve and /rerank: the answer is
// always one JSON document with a status of the protocol, never a panic or a 500.
func FuzzRetrieveRequest(f *testing.F) {
	for _, s := range []string{
		pythonBody, `{"queries": [], "topk": 2}`, `{"queries": ["", " "], "topk": null, "return_scores": false}`,
		`{"queries": ["a"], "documents": [["x", {"id": 7, "contents": "y"}, {"document": {"id": "d", "contents": "\"T\"\nz"}, "score": 1}]], "rerank_topk": 1}`,
		`{"queries": "x"}`, `[1]`, `null`, `{"queries": ["a"], "topk": 1e3}`, `{"queries": ["a"], "documents": [[{"contents": null}]]}`,
		`{"query_vectors": [[1, 2], null]}`, `{"queries": ["a", "b"], "query_vectors": [[0.5], null], "query_embedder": "x"}`, `{"query_vectors": [[1e39, null]]}`,
	} {
		f.Add(s)
	}
	h := NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{Reranker: constReranker{}, MaxQueries: 50, MaxBodyBytes: 4096, MaxRerankBodyBytes: 4096, Logger: discardLogger()})
	allowed := map[int]bool{200: true, 400: true, 413: true, 422: true}
	f.Fuzz(func(t *testing.T, body string) {
		for _, path := range []string{"/retrieve", "/rerank"} {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
			if !allowed[rec.Code] {
				t.Fatalf("%s %q: status %d %s", path, body, rec.Code, rec.Body)
			}
			var v map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
				t.Fatalf("%s %q: answer is not JSON: %v: %s", path, body, err, rec.Body)
			}
			if rec.Code == 200 {
				if _, ok := v["result"].([]any); !ok {
					t.Fatalf("%s %q: 200 without a result list: %s", path, body, rec.Body)
				}
			} else if d, _ := v["detail"].(string); d == "" {
				t.Fatalf("%s %q: error without detail: %s", path, body, rec.Body)
			}
		}
	})
}

// TestRetrieveTrailingData: anything but whitespace after the request object is malformed
// JSON (400), a stray closing bracket included.
func TestRetrieveTrailingData(t *testing.T) {
	h := NewRetrieveHandler(multiHopSearcher(), RetrieveOptions{Logger: discardLogger()})
	for body, want := range map[string]int{
		`{"queries": ["a"]}}`:      400,
		`{"queries": ["a"]}]`:      400,
		`{"queries": ["a"]} {}`:    400,
		`{"queries": ["a"]} x`:     400,
		"{\"queries\": [\"a\"]}\n": 200,
		`{"queries": ["a"]}  `:     200,
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/retrieve", strings.NewReader(body)))
		if rec.Code != want {
			t.Errorf("%q: status %d (%s), want %d", body, rec.Code, rec.Body, want)
		}
	}
}
