package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// mcpPipe is a raw newline-delimited JSON client of `memory serve --mcp`: it writes
// frames as given, however malformed, and reads the server's answers line by line.
type mcpPipe struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan string
	done  chan error
	errb  *lockedBuffer
}

// startMCPPipe runs `memory serve --mcp` on dir (with extra flags) over pipes set as
// serveStdin and stdout; the server is stopped at the end of the test.
func startMCPPipe(t *testing.T, dir string, extra ...string) *mcpPipe {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	old := serveStdin
	serveStdin = inR
	t.Cleanup(func() { serveStdin = old })
	p := &mcpPipe{t: t, in: inW, lines: make(chan string, 16), done: make(chan error, 1), errb: &lockedBuffer{}}
	go func() {
		err := runServe(context.Background(), append([]string{"--store", dir, "--mcp"}, extra...), outW, p.errb)
		outW.Close()
		inR.CloseWithError(errors.New("serve returned")) // a later frame fails rather than blocks
		p.done <- err
	}()
	go func() {
		br := bufio.NewReader(outR)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				p.lines <- line
			}
			if err != nil {
				close(p.lines)
				return
			}
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-p.done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop when stdin closed")
		}
	})
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if got := p.recv(); !strings.Contains(got, `"id":0,"result"`) {
		t.Fatalf("initialize: %s", got)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

// send writes one frame and its newline.
func (p *mcpPipe) send(frame string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, frame+"\n"); err != nil {
		p.t.Fatalf("writing a frame (%.60q...): %v (the server is gone?)\n%s", frame, err, p.errb.String())
	}
}

// recv reads the next answer.
func (p *mcpPipe) recv() string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("the server closed stdout (it exited?)\n%s", p.errb.String())
		}
		return line
	case <-time.After(20 * time.Second):
		p.t.Fatalf("no answer in 20s\n%s", p.errb.String())
	}
	return ""
}

// rpcError checks that line is a valid JSON-RPC 2.0 error response (jsonrpc "2.0", an
// id that is null, a number or a string, an error object with an integer code and a
// message, no result) and returns its code and id.
func rpcError(t *testing.T, line string) (code int, id string) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v: %s", err, line)
	}
	if string(m["jsonrpc"]) != `"2.0"` {
		t.Fatalf("jsonrpc is %s: %s", m["jsonrpc"], line)
	}
	rawID, ok := m["id"]
	if !ok {
		t.Fatalf("error response without an id member: %s", line)
	}
	if _, ok := m["result"]; ok {
		t.Fatalf("error response with a result: %s", line)
	}
	var e struct {
		Code    *int    `json:"code"`
		Message *string `json:"message"`
	}
	if err := json.Unmarshal(m["error"], &e); err != nil || e.Code == nil || e.Message == nil || *e.Message == "" {
		t.Fatalf("error member is not {code, message}: %s", line)
	}
	if s := string(rawID); s != "null" && s[0] != '"' && (s[0] < '0' || s[0] > '9') && s[0] != '-' {
		t.Fatalf("id %s is not null, a number or a string: %s", s, line)
	}
	return *e.Code, string(rawID)
}

// TestServeMCPSurvivesBadFrames feeds `memory serve --mcp` 20 malformed frames between
// good calls: every bad frame gets its JSON-RPC error (-32700 or -32600, with the id when
// it can be known), every good call after it still answers, and the server exits 0 when
// stdin closes. On 377e589 the first bad frame ended the server.
func TestServeMCPSurvivesBadFrames(t *testing.T) {
	p := startMCPPipe(t, seedStore(t))
	overCap := `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"` +
		strings.Repeat("a", 9<<20) + `"}}}`
	bad := []struct {
		name, frame string
		code        int
		id          string
	}{
		{"cut object", `{"jsonrpc":"2.0","id":1,"method":"ping"`, -32700, "null"},
		{"not JSON", `hello server`, -32700, "null"},
		{"NaN", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"x","top_k":NaN}}}`, -32700, "null"},
		{"Infinity", `{"jsonrpc":"2.0","id":3,"method":"ping","params":Infinity}`, -32700, "null"},
		{"nested 2000 deep", `{"jsonrpc":"2.0","id":4,"method":"ping","params":{"a":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}}`, -32600, "4"}, // its top-level id is read however deep the frame (mcpserver frameID)
		{"1M open brackets", strings.Repeat("[", 1<<20), -32600, "null"},
		{"over the frame cap", overCap, -32600, "8"},
		{"empty batch", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":9,"method":"ping"}]`, -32600, "null"},
		{"number", `42`, -32600, "null"},
		{"string", `"ping"`, -32600, "null"},
		{"null", `null`, -32600, "null"},
		{"no jsonrpc member", `{"id":10,"method":"ping"}`, -32600, "10"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":11,"method":"ping"}`, -32600, "11"},
		{"method not a string", `{"jsonrpc":"2.0","id":12,"method":5}`, -32600, "12"},
		{"id an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null"},
		{"no method nor result", `{"jsonrpc":"2.0","id":"x13"}`, -32600, `"x13"`},
		{"two values on a line", `{"jsonrpc":"2.0","id":14,"method":"ping"} {"jsonrpc":"2.0","id":15,"method":"ping"}`, -32700, "null"},
		{"invalid UTF-8 outside strings", "\xff\xfe{}", -32700, "null"},
		{"closing bracket first", `]}{"jsonrpc":"2.0"}`, -32700, "null"},
	}
	if len(bad) != 20 {
		t.Fatalf("%d bad frames, want 20", len(bad))
	}
	good := func(i int) {
		t.Helper()
		p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"capital of Germany","top_k":1}}}`, 1000+i))
		got := p.recv()
		if !strings.Contains(got, fmt.Sprintf(`"id":%d,"result"`, 1000+i)) || !strings.Contains(got, `\"id\":\"de\"`) || strings.Contains(got, `"isError":true`) {
			t.Fatalf("good call %d after a bad frame: %.300s", i, got)
		}
	}
	good(0)
	for i, b := range bad {
		p.send(b.frame)
		code, id := rpcError(t, p.recv())
		if code != b.code || id != b.id {
			t.Errorf("%s: code %d id %s, want code %d id %s", b.name, code, id, b.code, b.id)
		}
		good(i + 1)
	}
	// Calls the SDK and the tools refuse: answered too, and serving goes on.
	in := make([]string, 100_001)
	for i := range in {
		in[i] = fmt.Sprint(i)
	}
	calls := []struct {
		name, frame, want string
	}{
		{"unknown method", `{"jsonrpc":"2.0","id":20,"method":"no/such"}`, `"code":-32601`},
		{"unknown tool", `{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"nope","arguments":{}}}`, `"error"`},
		{"$in over MaxFilterInItems", `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"x","where":{"lang":{"$in":["` +
			strings.Join(in, `","`) + `"]}}}}}`, `MaxFilterInItems`},
		{"memory_add over MaxAddBytes", `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"memory_add","arguments":{"documents":[{"id":"big","text":"` +
			strings.Repeat("b", 5<<20) + `"}]}}}`, `MaxAddBytes`},
		{"query over MaxQueryBytes", `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"` +
			strings.Repeat("q", 20<<10) + `"}}}`, `MaxQueryBytes`},
	}
	for i, c := range calls {
		p.send(c.frame)
		if got := p.recv(); !strings.Contains(got, c.want) {
			t.Errorf("%s: %.300s", c.name, got)
		}
		good(100 + i)
	}
	p.in.Close()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		if err != nil {
			t.Fatalf("serve returned %v\n%s", err, p.errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop when stdin closed")
	}
}

// TestServeMCPFrameCapFlag: --mcp-max-frame-bytes sets the stdio frame cap (a frame over
// it is refused, one under it served), and a cap below 1 is a usage error.
func TestServeMCPFrameCapFlag(t *testing.T) {
	p := startMCPPipe(t, seedStore(t), "--mcp-max-frame-bytes", "4096")
	p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"` + strings.Repeat("x ", 3000) + `"}}}`)
	if code, id := rpcError(t, p.recv()); code != -32600 || id != "1" {
		t.Fatalf("frame over a 4096-byte cap: code %d id %s", code, id)
	}
	p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"capital of France","top_k":1}}}`)
	if got := p.recv(); !strings.Contains(got, `\"id\":\"fr\"`) {
		t.Fatalf("frame under the cap: %.300s", got)
	}
	var stderr lockedBuffer
	if err := runServe(context.Background(), []string{"--store", t.TempDir(), "--mcp", "--mcp-max-frame-bytes", "0"}, io.Discard, &stderr); !errors.Is(err, errUsage) {
		t.Fatalf("--mcp-max-frame-bytes 0: %v", err)
	}
}
