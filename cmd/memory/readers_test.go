package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

// mcpChild is `memory serve --mcp` on a store, run as a child process (the test binary,
// through TestServeMCPMemoryBound's child hook), spoken to over its stdin and stdout.
type mcpChild struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string
	stderr *lockedBuffer
	nextID int
}

func startMCPChild(t *testing.T, dir string) *mcpChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeMCPMemoryBound$")
	cmd.Env = append(os.Environ(), envServeChild+"="+dir)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &mcpChild{cmd: cmd, in: in, lines: make(chan string, 16), stderr: &lockedBuffer{}}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		br := bufio.NewReader(out)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				c.lines <- line
			}
			if err != nil {
				close(c.lines)
				return
			}
		}
	}()
	c.call(t, "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}`)
	if _, err := fmt.Fprintln(in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	return c
}

// call sends one JSON-RPC request and returns its result.
func (c *mcpChild) call(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	c.nextID++
	if _, err := fmt.Fprintf(c.in, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.nextID, method, params); err != nil {
		t.Fatalf("write to the writer: %v\n%s", err, c.stderr.String())
	}
	select {
	case line, ok := <-c.lines:
		if !ok {
			t.Fatalf("the writer exited\n%s", c.stderr.String())
		}
		var r struct {
			Result json.RawMessage
			Error  json.RawMessage
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Result == nil {
			t.Fatalf("%s: %s (%v)", method, line, err)
		}
		return r.Result
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no answer in 60 s\n%s", method, c.stderr.String())
	}
	return nil
}

// hit is what the writer's memory_search and a CLI search --json both show of a result.
type hit struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// search runs memory_search on the writer.
func (c *mcpChild) search(t *testing.T, query string, k int) []hit {
	t.Helper()
	res := c.call(t, "tools/call", fmt.Sprintf(`{"name":"memory_search","arguments":{"query":%q,"top_k":%d}}`, query, k))
	var out struct {
		StructuredContent struct {
			Results []hit `json:"results"`
		} `json:"structuredContent"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.IsError {
		t.Fatalf("memory_search: %s (%v)", res, err)
	}
	return out.StructuredContent.Results
}

// cliChild runs `memory ARGS...` as a child process (the test binary, through TestMain's
// hook) and returns its exit code, stdout and stderr.
func cliChild(args ...string) (int, string, string, error) {
	a, _ := json.Marshal(args)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), indexChildEnv+"="+string(a))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code, err = ee.ExitCode(), nil
	}
	return code, stdout.String(), stderr.String(), err
}

func hitsOfJSONLines(t *testing.T, out string) []hit {
	t.Helper()
	var hits []hit
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var h hit
		if err := json.Unmarshal([]byte(line), &h); err != nil {
			t.Fatalf("search --json line %q: %v", line, err)
		}
		hits = append(hits, h)
	}
	return hits
}

// Issue 24: while `memory serve --mcp` holds a store writable (an agent's memory, always
// on), three CLI searches and a read-only Open in other processes run at once and answer
// with the writer's results; get, count and collections answer too; a CLI writer is refused
// with an error naming the serve process; the writer's later writes are seen.
func TestReadersBesideWriter(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	dir := filepath.Join(t.TempDir(), "store")
	m, err := memory.Open(dir, memory.WithEmbedder(vectorstore.NewHashEmbedder(16)))
	if err != nil {
		t.Fatal(err)
	}
	var docs []memory.Document
	for i := range 60 {
		docs = append(docs, memory.Document{ID: fmt.Sprintf("d%02d", i), Title: fmt.Sprintf("note %d", i),
			Text: fmt.Sprintf("note %d about %s and %s", i, []string{"otters", "rivers", "walruses", "puffins"}[i%4], []string{"fish", "ice", "cliffs"}[i%3])})
	}
	if err := m.Add(context.Background(), docs...); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	w := startMCPChild(t, dir)
	queries := []string{"otters and fish", "walruses on the ice", "puffins cliffs"}
	want := make([][]hit, len(queries))
	for i, q := range queries {
		if want[i] = w.search(t, q, 5); len(want[i]) != 5 {
			t.Fatalf("writer's %q: %v", q, want[i])
		}
	}

	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for i, q := range queries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, stderr, err := cliChild("search", "--store", dir, "-k", "5", "--json", q)
			if err != nil || code != 0 {
				errs <- fmt.Sprintf("search %q: exit %d, %v\n%s", q, code, err, stderr)
				return
			}
			if got := hitsOfJSONLines(t, out); fmt.Sprint(got) != fmt.Sprint(want[i]) {
				errs <- fmt.Sprintf("CLI search %q: %v, writer's %v", q, got, want[i])
			}
		}()
	}
	wg.Add(1)
	go func() { // a read-only Open in this process
		defer wg.Done()
		r, err := memory.OpenExisting(dir, memory.ReadOnly())
		if err != nil {
			errs <- fmt.Sprintf("read-only Open beside the writer: %v", err)
			return
		}
		defer r.Close()
		for i, q := range queries {
			res, err := r.Search(context.Background(), q, memory.TopK(5))
			got := make([]hit, len(res))
			for j, x := range res {
				got[j] = hit{x.ID, x.Score}
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want[i]) {
				errs <- fmt.Sprintf("read-only Open's %q: %v (%v), writer's %v", q, got, err, want[i])
			}
		}
	}()
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"count", "--store", dir}, "60\n"},
		{[]string{"get", "--store", dir, "--json", "d07"}, `"text":"note 7 about puffins and ice"`},
		{[]string{"collections", "--store", dir, "--json"}, `{"name":"default","count":60,"analyzer":"en","metadata":{}}`},
	} {
		code, out, stderr, err := cliChild(c.args...)
		if err != nil || code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%v beside the writer: exit %d, %v, %q (want %q)\n%s", c.args, code, err, out, c.want, stderr)
		}
	}

	// A CLI writer is refused (after --lock-timeout) with the holder named.
	pid := strconv.Itoa(w.cmd.Process.Pid)
	code, _, stderr, err := cliChild("delete", "--store", dir, "--lock-timeout", "300ms", "d01")
	if err != nil || code == 0 || !strings.Contains(stderr, "pid "+pid) || !strings.Contains(stderr, "TestServeMCPMemoryBound") || !strings.Contains(stderr, "since") {
		t.Errorf("delete beside the writer: exit %d, %v\n%s\nwant the lock error naming pid %s and its command", code, err, stderr, pid)
	}

	// The writer goes on writing, and the readers see it.
	w.call(t, "tools/call", `{"name":"memory_add","arguments":{"documents":[{"id":"zz","text":"zebras graze"}]}}`)
	code, out, stderr, err := cliChild("search", "--store", dir, "--mode", "bm25", "--json", "zebras")
	if err != nil || code != 0 || !strings.Contains(out, `"id":"zz"`) {
		t.Errorf("search after the writer's add: exit %d, %v, %q\n%s", code, err, out, stderr)
	}
}
