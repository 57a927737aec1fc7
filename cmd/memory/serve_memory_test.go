package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envServeChild, when set (to a store directory), makes TestServeMCPMemoryBound run
// `memory serve --mcp` on it over the process's stdin and stdout instead of testing.
const envServeChild = "MEMORY_TEST_SERVE_MCP_CHILD"

// vmHWM reads a process's peak resident set size from /proc.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// TestServeMCPMemoryBound runs `memory serve --mcp` as a child process and feeds it a
// memory_search with a $in of 1M items (11 MB: over the frame cap), one with a $in of
// 100,001 short items (under the argument cap, over MaxFilterInItems), a 100 MB frame,
// and 24 pipelined memory_add calls of 4.4 MB each (over MaxAddBytes, 106 MB in all):
// each gets a typed error (a JSON-RPC error or a tool error naming the cap), a good call
// still answers, and the child's VmHWM stays under 300 MB (450 MB under the race
// detector, whose shadow memory more than doubles it). On 377e589 the $in of 1M was
// decoded and run (515 MB) and the 100 MB frame ended the server.
func TestServeMCPMemoryBound(t *testing.T) {
	if dir := os.Getenv(envServeChild); dir != "" {
		serveStdin = os.Stdin
		os.Exit(runMain(context.Background(), []string{"serve", "--store", dir, "--mcp"}, os.Stdout, os.Stderr))
	}
	if testing.Short() {
		t.Skip("sends 250 MB to a child process")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads VmHWM from /proc")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeMCPMemoryBound$")
	cmd.Env = append(os.Environ(), envServeChild+"="+seedStore(t))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan string, 64)
	go func() {
		br := bufio.NewReader(stdout)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				lines <- line
			}
			if err != nil {
				close(lines)
				return
			}
		}
	}()
	w := bufio.NewWriterSize(stdin, 1<<20)
	send := func(parts ...string) {
		t.Helper()
		for _, p := range parts {
			if _, err := w.WriteString(p); err != nil {
				t.Fatalf("write: %v\n%s", err, stderr.String())
			}
		}
		if err := w.WriteByte('\n'); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil {
			t.Fatalf("flush: %v (the server exited?)\n%s", err, stderr.String())
		}
	}
	recv := func() string {
		t.Helper()
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("the server closed stdout (it exited?)\n%s", stderr.String())
			}
			return line
		case <-time.After(60 * time.Second):
			t.Fatalf("no answer in 60s\n%s", stderr.String())
		}
		return ""
	}
	expect := func(what, line string, want ...string) {
		t.Helper()
		for _, s := range want {
			if !strings.Contains(line, s) {
				t.Fatalf("%s: want %s in %.300s", what, s, line)
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	expect("initialize", recv(), `"id":0,"result"`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// (a) $in of 1M items: 11 MB, over the 8 MiB frame cap.
	var in bytes.Buffer
	for i := range 1_000_000 {
		if i > 0 {
			in.WriteByte(',')
		}
		fmt.Fprintf(&in, `"v%06d"`, i)
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"capital","where":{"lang":{"$in":[`, in.String(), `]}}}}}`)
	expect("$in of 1M items", recv(), `"id":1,"error":{"code":-32600`)
	// (a') $in of 100,001 items in 690 KB: through the frame and argument caps, stopped
	// by the filter's.
	in.Reset()
	for i := range 100_001 {
		if i > 0 {
			in.WriteByte(',')
		}
		fmt.Fprintf(&in, `"%d"`, i)
	}
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"capital","where":{"lang":{"$in":[`, in.String(), `]}}}}}`)
	expect("$in of 100,001 items", recv(), `"id":2,`, `"isError":true`, `MaxFilterInItems`)

	// (b) one frame of 100 MB, streamed.
	chunk := strings.Repeat("x", 1<<20)
	parts := []string{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"memory_add","arguments":{"documents":[{"id":"huge","text":"`}
	for range 100 {
		parts = append(parts, chunk)
	}
	send(append(parts, `"}]}}}`)...)
	expect("100 MB frame", recv(), `"id":3,"error":{"code":-32600`)

	// (b') 24 memory_add calls of 4.4 MB, written without waiting for the answers.
	docs := make([]string, 8)
	for j := range docs {
		docs[j] = fmt.Sprintf(`{"id":"o%d","text":"%s"}`, j, strings.Repeat("word ", 110_000))
	}
	body := `"arguments":{"documents":[` + strings.Join(docs, ",") + `]}}}`
	answers := make(chan error, 1)
	go func() {
		for i := range 24 {
			line := <-lines
			if !strings.Contains(line, `"isError":true`) || !strings.Contains(line, "MaxAddBytes") {
				answers <- fmt.Errorf("memory_add %d: %.300s", i, line)
				return
			}
		}
		answers <- nil
	}()
	for i := range 24 {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"memory_add",`, 100+i), body)
	}
	select {
	case err := <-answers:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(120 * time.Second):
		t.Fatalf("memory_add answers missing\n%s", stderr.String())
	}

	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"memory_search","arguments":{"query":"capital of Germany","top_k":1}}}`)
	expect("good call", recv(), `"id":4,"result"`, `\"id\":\"de\"`)
	hwm := vmHWM(t, cmd.Process.Pid)
	t.Logf("serve --mcp VmHWM %d MB", hwm>>20)
	limit := int64(300 << 20)
	if raceBuild {
		// The race detector's shadow memory: 132 against 305-308 MB for this child on the
		// same machine (session 52); the $in decoded and run (515 MB without it) still fails.
		limit = 450 << 20
	}
	if hwm > limit {
		t.Errorf("VmHWM %d MB, want under %d MB", hwm>>20, limit>>20)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v\n%s", err, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop when stdin closed")
	}
}
