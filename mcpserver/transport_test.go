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

// waitUntil waits until cond holds: it polls, with no deadline of its own (go test's
// -timeout reports a hang), so that a loaded machine only makes it slower.
func waitUntil(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// TestHTTPBackpressure: with a budget of one request, a second POST waits, unread, while
// the first is being served, and is served once it is done.
func TestHTTPBackpressure(t *testing.T) {
	srv, release, started := blockingServer()
	h, budget := newHTTPHandler(srv, HTTPOptions{MaxInFlightBytes: 1})
	hs := httptest.NewServer(h)
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
	send := func(id int) {
		go func() {
			_, body := post(session, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"block","arguments":{}}}`, id))
			answers <- body
		}()
	}
	send(1)
	waitUntil(func() bool { return started.Load() == 1 }) // the first holds the budget
	send(2)
	waitUntil(func() bool { return budget.waiters() == 1 }) // the second waits for it
	if n := started.Load(); n != 1 {
		t.Fatalf("%d calls started while the first held the budget, want 1", n)
	}
	unblock()
	for range 2 {
		if body := <-answers; !strings.Contains(body, `"result"`) {
			t.Fatalf("answer: %s", body)
		}
	}
	if n := started.Load(); n != 2 {
		t.Fatalf("%d calls ran, want 2", n)
	}
}

// connTransport is a StdioTransport that hands its connection to the test.
type connTransport struct {
	StdioTransport
	conn chan *stdioConn
}

func (t *connTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.StdioTransport.Connect(ctx)
	if err == nil {
		t.conn <- c.(*stdioConn)
	}
	return c, err
}

// serveRaw serves srv over a StdioTransport on pipes and returns the client's ends and
// the connection; the server's output ends (EOF) once Run has returned.
func serveRaw(t *testing.T, srv *mcp.Server, tr StdioTransport) (io.WriteCloser, *bufio.Reader, *stdioConn) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tr.Reader, tr.Writer = inR, outW
	ct := &connTransport{StdioTransport: tr, conn: make(chan *stdioConn, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx, ct); outW.Close() }()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		go io.Copy(io.Discard, outR) // lets a server writing its last answers end
		<-done
	})
	return inW, bufio.NewReader(outR), <-ct.conn
}

// rawSession is serveRaw after the client's initialize and initialized.
func rawSession(t *testing.T, srv *mcp.Server, tr StdioTransport) (io.WriteCloser, *bufio.Reader) {
	t.Helper()
	inW, br, _ := rawSessionConn(t, srv, tr)
	return inW, br
}

// rawSessionConn is rawSession, and the connection.
func rawSessionConn(t *testing.T, srv *mcp.Server, tr StdioTransport) (io.WriteCloser, *bufio.Reader, *stdioConn) {
	t.Helper()
	inW, br, conn := serveRaw(t, srv, tr)
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
	return inW, br, conn
}

// TestStdioBackpressure: with a budget of unanswered calls, a pipelined call is not read
// (nor decoded, nor queued) while earlier calls hold the budget; it runs once they are
// answered. A call reusing the id of an unanswered one is refused at once.
func TestStdioBackpressure(t *testing.T) {
	srv, release, started := blockingServer()
	in, out, conn := rawSessionConn(t, srv, StdioTransport{MaxInFlightBytes: 1})
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
	waitUntil(func() bool { return started.Load() == 1 }) // the first holds the budget
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
	waitUntil(func() bool { return conn.budget.waiters() == 1 }) // read, and waiting for it
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

// deepCall is a tools/call frame whose arguments nest depth levels, with its "id" member
// (raw JSON, "" for none) before or after them.
func deepCall(id string, depth int, idLast bool) string {
	args := strings.Repeat(`{"a":[`, depth) + `1` + strings.Repeat(`]}`, depth)
	params := `"method":"tools/call","params":{"name":"block","arguments":` + args + `}`
	switch {
	case id == "":
		return `{"jsonrpc":"2.0",` + params + `}`
	case idLast:
		return `{"jsonrpc":"2.0",` + params + `,"id":` + id + `}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,` + params + `}`
}

// TestStdioDeepCallGetsItsID: a call nested deeper than the depth cap is answered with a
// JSON-RPC error carrying its own id (issue 39, item 6), wherever the id member sits and
// however deep the frame (past encoding/json's own 10,000 levels too), so that the client's
// call ends; a frame whose id cannot be read gets id null; the session goes on.
func TestStdioDeepCallGetsItsID(t *testing.T) {
	srv, _, started := blockingServer()
	in, out := rawSession(t, srv, StdioTransport{})
	for _, c := range []struct {
		frame, id string
	}{
		{deepCall(`42`, 200, false), `42`},
		{deepCall(`"deep"`, 200, true), `"deep"`},
		{deepCall(`7`, 20000, true), `7`},
		{deepCall(`8`, 20000, false), `8`},
		{`{"jsonrpc":"2.0","\u0069d":9,"method":"x","params":` + strings.Repeat("[", 300) + strings.Repeat("]", 300) + `}`, `9`},
		{deepCall(``, 200, false), `null`},
		{deepCall(`{"x":1}`, 200, false), `null`}, // not a valid id
	} {
		if _, err := io.WriteString(in, c.frame+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSpace(line)
		checkErrorResponse(t, []byte(line))
		var resp struct {
			ID    json.RawMessage
			Error struct {
				Code    int64
				Message string
			}
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil {
			t.Fatal(err)
		}
		if string(resp.ID) != c.id || resp.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(resp.Error.Message, "nested deeper than 128") {
			t.Fatalf("frame of %d bytes, id %s: answered %s", len(c.frame), c.id, line)
		}
	}
	if n := started.Load(); n != 0 {
		t.Fatalf("%d deep calls reached the tool", n)
	}
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":10,"method":"ping"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := out.ReadString('\n'); err != nil || !strings.Contains(line, `"id":10,"result"`) {
		t.Fatalf("after the deep calls: %q %v", line, err)
	}
}

// TestFrameIDOnePass: frameID reads a frame's id in one pass over it, however deep its
// other members nest (it looks at each byte at most twice, where one token ends and the
// next starts: the cost bound of a deep frame's answer, counted rather than timed), and
// gives none for an id it cannot read whole.
func TestFrameIDOnePass(t *testing.T) {
	for _, depth := range []int{1, 129, 5000, 100000} {
		for _, last := range []bool{false, true} {
			frame := []byte(deepCall(`"x"`, depth, last))
			sc := idScanner{data: frame}
			if id := sc.id(); string(id) != `"x"` {
				t.Fatalf("depth %d (id last %v): id %s", depth, last, id)
			}
			if sc.steps > 2*len(frame) {
				t.Fatalf("depth %d (id last %v): %d steps over a %d-byte frame", depth, last, sc.steps, len(frame))
			}
		}
	}
	for frame, want := range map[string]string{
		`{"id":123}`:                     `123`,
		`{"id":12`:                       ``, // cut: 12 of 123?
		`{"id":"a`:                       ``,
		`{"a":[[[{"id":1}]]],"id":2}`:    `2`, // nested ids are not the frame's
		`{"a":[[[{"id":1}]]]`:            ``,
		`{"id":1,"id":2}`:                `2`, // the last, as encoding/json reads it
		`{"id":1.5}`:                     ``,
		`{"id":null}`:                    ``,
		`{"s":"}\"{","id":"q"}`:          `"q"`,
		` { "id" : 3 , "m" : [ ] } `:     `3`,
		`[{"id":1}]`:                     ``,
		`{"id":true}`:                    ``,
		`{"i\u0064":4,"method":"x"}`:     `4`,
		`{"x":1e400,"id":5,"y":[1,2,3]}`: `5`,
	} {
		if got := frameID([]byte(frame)); string(got) != want {
			t.Errorf("%s: id %q, want %q", frame, got, want)
		}
	}
}

// TestStdioAnswersReadCallsAtEOF: calls read before the input ends are answered before
// the session ends (issue 39, item 6): initialize and tools/list, then EOF, get both
// answers.
func TestStdioAnswersReadCallsAtEOF(t *testing.T) {
	for run := range 3 {
		in, out, _ := serveRaw(t, New(newStore(t), Options{}), StdioTransport{})
		go func() {
			_, _ = io.WriteString(in, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`+"\n"+
				`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`+"\n")
			in.Close()
		}()
		answered := map[string]bool{}
		for {
			line, err := out.ReadString('\n')
			if err != nil {
				break // the server ended
			}
			var resp struct {
				ID     json.RawMessage
				Result json.RawMessage
			}
			if err := json.Unmarshal([]byte(line), &resp); err != nil || resp.Result == nil {
				t.Fatalf("run %d: %q: %v", run, line, err)
			}
			answered[string(resp.ID)] = true
			if string(resp.ID) == "2" && !strings.Contains(line, toolSearch) {
				t.Fatalf("run %d: tools/list answered %s", run, line)
			}
		}
		if !answered["1"] || !answered["2"] {
			t.Fatalf("run %d: answered %v, want ids 1 and 2", run, answered)
		}
	}
}

// TestStdioDrainTimeout: a call still running DrainTimeout after the input ended is
// answered with a "server is closing" error, once, and the session ends.
func TestStdioDrainTimeout(t *testing.T) {
	srv, _, started := blockingServer() // never released: only the session's end stops it
	in, out := rawSession(t, srv, StdioTransport{DrainTimeout: time.Nanosecond})
	if _, err := io.WriteString(in, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"block","arguments":{}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	waitUntil(func() bool { return started.Load() == 1 })
	in.Close()
	var lines []string
	for {
		line, err := out.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, line)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"id":5,"error":{"code":-32004`) || !strings.Contains(lines[0], "DrainTimeout") {
		t.Fatalf("answers after the end of the input: %q", lines)
	}
}
