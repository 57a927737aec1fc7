package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/memtest"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolArgumentCaps: each cap of Options refuses a call over it with a tool error
// wrapping ErrTooLarge that names the cap, before anything is stored; a call at the cap
// goes through.
func TestToolArgumentCaps(t *testing.T) {
	m := newStore(t)
	o := Options{MaxArgBytes: 2000, MaxAddBytes: 3000, MaxAddDocs: 2, MaxDeleteIDs: 2, MaxQueryBytes: 100, SOPs: newLibrary(t)}
	cs := connect(t, New(m, o))
	doc := func(id string, n int) map[string]any {
		return map[string]any{"id": id, "text": strings.Repeat("w ", n/2)}
	}
	cases := []struct {
		name, tool string
		args       map[string]any
		capName    string // "" = accepted
	}{
		{"add at the caps", toolAdd, map[string]any{"documents": []any{doc("a", 1000), doc("b", 1000)}}, ""},
		{"add over MaxAddBytes", toolAdd, map[string]any{"documents": []any{doc("c", 3100)}}, "MaxAddBytes"},
		{"add over MaxAddDocs", toolAdd, map[string]any{"documents": []any{doc("c", 1), doc("d", 1), doc("e", 1)}}, "MaxAddDocs"},
		{"search at MaxQueryBytes", toolSearch, map[string]any{"query": strings.Repeat("w", 100)}, ""},
		{"search over MaxQueryBytes", toolSearch, map[string]any{"query": strings.Repeat("w", 101)}, "MaxQueryBytes"},
		{"search over MaxArgBytes", toolSearch, map[string]any{"query": "w", "where": map[string]any{"k": strings.Repeat("v", 2000)}}, "MaxArgBytes"},
		{"search over a filter cap", toolSearch, map[string]any{"query": "w", "where": nestedWhere(memory.MaxFilterDepth + 1)}, "MaxFilterDepth"},
		{"sop over MaxQueryBytes", toolSOP, map[string]any{"query": strings.Repeat("w", 101)}, "MaxQueryBytes"},
		{"get over MaxArgBytes", toolGet, map[string]any{"id": strings.Repeat("i", 2001)}, "MaxArgBytes"},
		{"delete over MaxDeleteIDs", toolDelete, map[string]any{"ids": []string{"a", "b", "c"}}, "MaxDeleteIDs"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := call(t, cs, c.tool, c.args, nil)
			if c.capName == "" {
				if res.IsError {
					t.Fatalf("refused at the cap: %s", errorText(res))
				}
				return
			}
			if !res.IsError || !strings.Contains(errorText(res), c.capName) || !strings.Contains(errorText(res), "too large") {
				t.Fatalf("isError %v %q, want an error naming %s", res.IsError, errorText(res), c.capName)
			}
		})
	}
	if n := memtest.Count(t, m.Collection("")); n != 2 {
		t.Fatalf("%d documents stored, want the 2 of the accepted call", n)
	}
	if !errors.Is(ErrTooLarge, ErrInvalidInput) {
		t.Fatal("ErrTooLarge does not match ErrInvalidInput")
	}
}

func nestedWhere(depth int) map[string]any {
	w := map[string]any{"k": "v"}
	for range depth {
		w = map[string]any{"$or": []any{w}}
	}
	return w
}

// TestHTTPBodyCap: a streamable HTTP request body over MaxBodyBytes gets 413; one under
// it is served.
func TestHTTPBodyCap(t *testing.T) {
	hs := httptest.NewServer(NewHTTPHandler(New(newStore(t), Options{}), HTTPOptions{MaxBodyBytes: 4096}))
	defer hs.Close()
	post := func(body string) int {
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"},"pad":"%s"}}`
	if code := post(fmt.Sprintf(init, strings.Repeat("p", 8000))); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("body over the cap: status %d, want 413", code)
	}
	if code := post(fmt.Sprintf(init, "")); code != http.StatusOK {
		t.Fatalf("body under the cap: status %d", code)
	}
}

// blockingServer is a server whose one tool, "block", counts its calls in started and
// returns when release is closed (or its call is cancelled).
func blockingServer() (srv *mcp.Server, release chan struct{}, started *atomic.Int32) {
	srv = mcp.NewServer(&mcp.Implementation{Name: "t", Version: "0"}, nil)
	release, started = make(chan struct{}), new(atomic.Int32)
	mcp.AddTool(srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		started.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil, struct{}{}, nil
	})
	return srv, release, started
}

// TestHTTPBackpressure: with a budget of one request, a second POST waits, unread, while
// the first is being served, and is served once it is done.
func TestHTTPBackpressure(t *testing.T) {
	srv, release, started := blockingServer()
	hs := httptest.NewServer(NewHTTPHandler(srv, HTTPOptions{MaxInFlightBytes: 1}))
	defer hs.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before hs.Close, which waits for the handlers
	post := func(session, body string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, ""
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp, string(data)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if resp == nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %v", resp)
	}
	session := resp.Header.Get("Mcp-Session-Id")
	post(session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	answers := make(chan string, 2)
	for id := 1; id <= 2; id++ {
		go func() {
			_, body := post(session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{}}}`, id))
			answers <- body
		}()
		time.Sleep(200 * time.Millisecond)
	}
	if n := started.Load(); n != 1 {
		t.Fatalf("%d calls started while the first held the budget, want 1", n)
	}
	unblock()
	for range 2 {
		select {
		case body := <-answers:
			if !strings.Contains(body, `"result"`) {
				t.Fatalf("answer: %s", body)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no answer")
		}
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d calls ran, want 2", n)
	}
}

// rawSession serves srv over a StdioTransport on pipes and returns the client's ends.
func rawSession(t *testing.T, srv *mcp.Server, tr StdioTransport) (io.WriteCloser, *bufio.Reader) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr.Reader, tr.Writer = inR, outW
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, &tr); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		<-done
	})
	br := bufio.NewReader(outR)
	write := func(s string) {
		if _, err := io.WriteString(inW, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if line, err := br.ReadString('\n'); err != nil || !strings.Contains(line, `"id":0`) {
		t.Fatalf("initialize: %q %v", line, err)
	}
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return inW, br
}

// TestStdioBackpressure: with a budget of unanswered calls, a pipelined call is not read
// (nor decoded, nor queued) while earlier calls hold the budget; it runs once they are
// answered. A call reusing the id of an unanswered one is refused at once.
func TestStdioBackpressure(t *testing.T) {
	srv, release, started := blockingServer()
	in, out := rawSession(t, srv, StdioTransport{MaxInFlightBytes: 1})
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	line, _ := out.ReadString('\n')
	if !strings.Contains(line, `"id":1,"error":{"code":-32600`) || !strings.Contains(line, "already in use") {
		t.Fatalf("duplicate id of an unanswered call: %s", line)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	time.Sleep(200 * time.Millisecond)
	if n := started.Load(); n != 1 {
		t.Fatalf("%d calls started while the first held the budget, want 1", n)
	}
	close(release)
	for _, id := range []string{`"id":1,"result"`, `"id":2,"result"`} {
		line, err := out.ReadString('\n')
		if err != nil || !strings.Contains(line, id) {
			t.Fatalf("want %s: %q %v", id, line, err)
		}
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d calls ran, want 2", n)
	}
}

// zeroReader yields an endless run of 'a'.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

// TestFrameReaderDiscardsOverCapStreaming: a 256 MiB frame is refused with the id of its
// start, having allocated a small fraction of its size (it is never buffered whole), and
// the frame after it is read.
func TestFrameReaderDiscardsOverCapStreaming(t *testing.T) {
	const size = 256 << 20
	r := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":"big","method":"ping","params":{"pad":"`),
		io.LimitReader(zeroReader{}, size), strings.NewReader("\"}}\n"+`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n"))
	fr := newFrameReader(r, 1<<20, 0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	msg, ferr, err := fr.next()
	runtime.ReadMemStats(&after)
	if err != nil || msg != nil || ferr == nil || ferr.Code != jsonrpc.CodeInvalidRequest || string(ferr.ID) != `"big"` {
		t.Fatalf("over-cap frame: msg %v ferr %+v err %v", msg, ferr, err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("reading a %d-byte frame over a 1 MiB cap allocated %d bytes", size, alloc)
	}
	msg, ferr, err = fr.next()
	if req, ok := msg.(*jsonrpc.Request); err != nil || ferr != nil || !ok || req.Method != "ping" {
		t.Fatalf("frame after the big one: %v %+v %v", msg, ferr, err)
	}
	if _, _, err := fr.next(); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
}

// checkErrorResponse fails unless data is a JSON-RPC 2.0 error response: exactly the
// members jsonrpc "2.0", id (null, a number or a string) and error {code, message}.
func checkErrorResponse(t *testing.T, data []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || len(m) != 3 || string(m["jsonrpc"]) != `"2.0"` || bytes.ContainsAny(data, "\n") {
		t.Fatalf("not a JSON-RPC 2.0 error response (%v): %s", err, data)
	}
	var id any
	if err := json.Unmarshal(m["id"], &id); err != nil {
		t.Fatalf("id: %v: %s", err, data)
	}
	switch id.(type) {
	case nil, string, float64:
	default:
		t.Fatalf("id %s is not null, a number or a string", m["id"])
	}
	var e map[string]any
	if err := json.Unmarshal(m["error"], &e); err != nil || len(e) != 2 {
		t.Fatalf("error member: %v: %s", err, data)
	}
	code, _ := e["code"].(float64)
	if msg, _ := e["message"].(string); msg == "" || (code != jsonrpc.CodeParseError && code != jsonrpc.CodeInvalidRequest) {
		t.Fatalf("error %v: %s", e, data)
	}
}

// FuzzFrameReader: whatever the input, the frame reader never panics, never holds more
// than its cap (or the id prefix of an over-cap frame) of one frame, answers every frame
// it refuses with a valid JSON-RPC 2.0 error response, and ends with the input.
func FuzzFrameReader(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n",
		`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","arguments":{"q":NaN}}}`,
		"[1,2]\n\n  \r\n{\n",
		`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"p":"` + strings.Repeat("x", 300) + `"}}` + "\n",
		strings.Repeat("[", 100) + "\n" + strings.Repeat("{\"a\":", 40),
		`{"jsonrpc":"2.0","id":{"x":1}}` + "\n" + `{"jsonrpc":"2.0","id":2,"result":{}}`,
		"\xff\xfe\"\\u0000\"\n", `{"id":1e400,"jsonrpc":"2.0","method":"x"}`,
	} {
		f.Add([]byte(s))
	}
	const maxFrame, maxDepth = 256, 16
	f.Fuzz(func(t *testing.T, data []byte) {
		fr := newFrameReader(bytes.NewReader(data), maxFrame, maxDepth)
		for range len(data) + 2 {
			line, over, err := fr.readLine()
			if limit := max(maxFrame+1, idPrefixBytes); len(line) > limit {
				t.Fatalf("a frame held %d bytes, cap %d (over %v)", len(line), limit, over)
			}
			if !over && len(bytes.TrimRight(line, "\n")) > maxFrame {
				t.Fatalf("a %d-byte frame not reported over the %d cap", len(line), maxFrame)
			}
			if err != nil {
				break
			}
		}
		fr = newFrameReader(bytes.NewReader(data), maxFrame, maxDepth)
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatal("the reader does not end")
			}
			msg, ferr, err := fr.next()
			if err != nil {
				if err != io.EOF {
					t.Fatalf("read error %v", err)
				}
				break
			}
			switch {
			case ferr != nil:
				checkErrorResponse(t, ferr.response())
			case msg == nil:
				t.Fatal("no message and no error")
			default:
				if _, err := jsonrpc.EncodeMessage(msg); err != nil {
					t.Fatalf("decoded message does not encode: %v", err)
				}
			}
		}
	})
}
