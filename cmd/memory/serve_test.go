package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lockedBuffer is a bytes.Buffer safe for concurrent writes and reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func seedStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	m, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(),
		memory.Document{ID: "fr", Title: "France", Text: "Paris is the capital of France."},
		memory.Document{ID: "de", Title: "Germany", Text: "Berlin is the capital of Germany."},
	); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

var listenRE = regexp.MustCompile(`memory serve: (\w+) listening on (http://\S+)`)

func waitAddrs(t *testing.T, stderr *lockedBuffer, n int, done <-chan error) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("serve exited early: %v\n%s", err, stderr.String())
		default:
		}
		ms := listenRE.FindAllStringSubmatch(stderr.String(), -1)
		if len(ms) == n {
			out := map[string]string{}
			for _, m := range ms {
				out[m[1]] = m[2]
			}
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("servers did not start:\n%s", stderr.String())
	return nil
}

func TestServeRetrieveAndMCPHTTP(t *testing.T) {
	dir := seedStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, []string{"--store", dir, "--retrieve", "127.0.0.1:0", "--mcp-http", "127.0.0.1:0", "--token", "tok"}, &stdout, &stderr)
	}()
	addrs := waitAddrs(t, &stderr, 2, done)

	// Exactly what Search-R1's client sends.
	body := `{"queries": ["What is the capital of France?"], "topk": 3, "return_scores": true}`
	resp, err := http.Post(addrs["retrieve"]+"/retrieve", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var r struct {
		Result [][]struct {
			Document struct {
				ID       string `json:"id"`
				Contents string `json:"contents"`
			} `json:"document"`
			Score float64 `json:"score"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 {
		t.Fatalf("retrieve: %d %s", resp.StatusCode, data)
	}
	if len(r.Result) != 1 || len(r.Result[0]) == 0 || r.Result[0][0].Document.ID != "fr" || r.Result[0][0].Document.Contents != "\"France\"\nParis is the capital of France." {
		t.Fatalf("retrieve result: %s", data)
	}
	if resp, err := http.Get(addrs["retrieve"] + "/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v", err)
	} else {
		resp.Body.Close()
	}

	// MCP over HTTP: 401 without the token, tools with it.
	resp, err = http.Post(addrs["mcp"], "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("mcp without token: %d", resp.StatusCode)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: addrs["mcp"], HTTPClient: &http.Client{Transport: bearer("tok")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 17 { // memory_* and sop_match (5), chroma_* (12)
		t.Fatalf("tools: %v %v", tools, err)
	}
	cs.Close()

	cancel() // what SIGINT/SIGTERM does through main's signal.NotifyContext
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not shut down")
	}
	if _, err := http.Get(addrs["retrieve"] + "/health"); err == nil {
		t.Fatal("server still answering after shutdown")
	}
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func TestServeMCPStdio(t *testing.T) {
	dir := seedStore(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	old := serveStdin
	serveStdin = inR
	defer func() { serveStdin = old }()
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(context.Background(), []string{"--store", dir, "--mcp"}, outW, &stderr)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_search", Arguments: map[string]any{"query": "capital of Germany", "top_k": 1}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	out, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(out), `"id":"de"`) {
		t.Fatalf("search over stdio: %s", out)
	}
	cs.Close() // closes stdin: the server stops
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop when stdin closed")
	}
}

func TestServeUsage(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{},
		{"--store", dir},
		{"--retrieve", "127.0.0.1:0"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--mode", "magic"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--topk", "0"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "extra"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--max-queries", "0"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--max-response-bytes", "-1"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--rerank-depth", "0"},
		{"--store", dir, "--retrieve", "127.0.0.1:0", "--read-timeout", "-1s"},
	}
	for _, args := range cases {
		var stderr lockedBuffer
		if err := runServe(context.Background(), args, io.Discard, &stderr); !errors.Is(err, errUsage) {
			t.Errorf("%q: %v", args, err)
		}
	}
	// An address that cannot be listened on is a plain error, not a usage error.
	var stderr lockedBuffer
	if err := runServe(context.Background(), []string{"--store", dir, "--retrieve", "256.0.0.1:1"}, io.Discard, &stderr); err == nil || errors.Is(err, errUsage) {
		t.Errorf("bad address: %v", err)
	}
}

// startServe runs `memory serve` with args on a seeded store and returns the /retrieve
// base URL; the server stops at the end of the test.
func startServe(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, append([]string{"--store", dir, "--retrieve", "127.0.0.1:0"}, args...), io.Discard, &stderr)
	}()
	addrs := waitAddrs(t, &stderr, 1, done)
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return addrs["retrieve"]
}

// searchR1Body is the body Search-R1's client sends (json.dumps separators).
func searchR1Body(n int) string {
	var b strings.Builder
	b.WriteString(`{"queries": [`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		if i%2 == 0 {
			b.WriteString(`"What is the capital of France?"`)
		} else {
			b.WriteString(`"capital of Germany"`)
		}
	}
	b.WriteString(`], "topk": 3, "return_scores": true}`)
	return b.String()
}

func TestServeRetrieveSearchR1Batch(t *testing.T) {
	base := startServe(t, seedStore(t))
	resp, err := http.Post(base+"/retrieve", "application/json", strings.NewReader(searchR1Body(2560)))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var r struct {
		Result [][]struct {
			Document struct{ ID string } `json:"document"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 || len(r.Result) != 2560 {
		t.Fatalf("2,560 queries: %d, %d lists (%v)", resp.StatusCode, len(r.Result), err)
	}
	for i, l := range r.Result {
		want := "fr"
		if i%2 == 1 {
			want = "de"
		}
		if len(l) == 0 || l[0].Document.ID != want {
			t.Fatalf("list %d: %+v, want %s first", i, l, want)
		}
	}
	resp, err = http.Post(base+"/retrieve", "application/json", strings.NewReader(searchR1Body(8193)))
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(data), "at most 8192") {
		t.Fatalf("8,193 queries: %d %s", resp.StatusCode, data)
	}

	// The cap is a flag.
	small := startServe(t, seedStore(t), "--max-queries", "4", "--max-response-bytes", "100000")
	resp, err = http.Post(small+"/retrieve", "application/json", strings.NewReader(searchR1Body(5)))
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(data), "at most 4") {
		t.Fatalf("--max-queries 4: %d %s", resp.StatusCode, data)
	}
	resp, err = http.Post(small+"/retrieve", "application/json", strings.NewReader(searchR1Body(4)))
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(data), "response budget of 100000 bytes") {
		t.Fatalf("--max-response-bytes: %d %s", resp.StatusCode, data)
	}
}

// TestServeTimeoutsCloseConnections uses raw TCP clients: a body that never finishes, a
// connection that never sends a request and an idle keep-alive connection must all be
// closed by the server.
func TestServeTimeoutsCloseConnections(t *testing.T) {
	base := startServe(t, seedStore(t), "--read-timeout", "300ms", "--idle-timeout", "300ms")
	addr := strings.TrimPrefix(base, "http://")
	// closedWithin reads until the server closes the connection.
	closedWithin := func(t *testing.T, c net.Conn, d time.Duration) string {
		t.Helper()
		c.SetReadDeadline(time.Now().Add(d))
		data, err := io.ReadAll(c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("connection still open after %v (read %q)", d, data)
		}
		return string(data)
	}
	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /retrieve HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"queries\": [")
		start := time.Now()
		for i := 0; i < 3; i++ { // trickle a byte now and then, slower than the timeout allows
			time.Sleep(150 * time.Millisecond)
			if _, err := c.Write([]byte(`"`)); err != nil {
				break
			}
		}
		closedWithin(t, c, 5*time.Second)
		if d := time.Since(start); d > 4*time.Second {
			t.Fatalf("slow body held the connection %v", d)
		}
	})
	t.Run("silent connection", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		closedWithin(t, c, 5*time.Second)
	})
	t.Run("idle keep-alive", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
		got := closedWithin(t, c, 5*time.Second)
		if !strings.HasPrefix(got, "HTTP/1.1 200") || !strings.Contains(got, `{"status":"ok"}`) {
			t.Fatalf("response %q", got)
		}
	})
}

func TestServeRerankFlag(t *testing.T) {
	dir := onnxtest.Model(t, "tiny-bert-cross-encoder")
	onnxtest.Library(t)
	base := startServe(t, seedStore(t), "--reranker", dir, "--rerank-depth", "5")
	body := `{"queries": ["capital"], "documents": [["\"A\"\nParis is the capital of France.", "\"B\"\nBread."]], "rerank_topk": 2, "return_scores": true}`
	resp, err := http.Post(base+"/rerank", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var r struct {
		Result [][]struct {
			Score float64 `json:"score"`
		} `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil || resp.StatusCode != 200 || len(r.Result) != 1 || len(r.Result[0]) != 2 ||
		r.Result[0][0].Score < r.Result[0][1].Score || r.Result[0][0].Score <= 0 || r.Result[0][0].Score >= 1 {
		t.Fatalf("/rerank: %d %s", resp.StatusCode, data)
	}
	resp, err = http.Post(base+"/retrieve", "application/json", strings.NewReader(`{"queries": ["capital of France"], "topk": 1, "return_scores": true}`))
	if err != nil {
		t.Fatal(err)
	}
	data, err = io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(data), `"score":0.`) {
		t.Fatalf("/retrieve with reranker (scores are sigmoids): %d %s", resp.StatusCode, data)
	}
}

// runServe runs `memory serve ARGS...` in this process as the CLI does (a usage error is
// printed on stderr and matches errUsage) and returns its error.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return execute(ctx, append([]string{"serve"}, args...), stdout, stderr)
}
