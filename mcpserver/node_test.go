package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory"
)

// nodeSDK returns the installed Node MCP SDK's directory, installing it with
// scripts/deps-node.sh when it is missing; the test is skipped only when node is absent.
func nodeSDK(t *testing.T) (node, sdk string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: the Node MCP SDK interoperability test needs Node.js (>= 18) and npm")
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	deps := os.Getenv("MEMORY_DEPS")
	if deps == "" {
		deps = filepath.Join(root, ".deps")
	}
	sdk = filepath.Join(deps, "node", "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(filepath.Join(sdk, "package.json")); err != nil {
		cmd := exec.Command("bash", filepath.Join(root, "scripts", "deps-node.sh"))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("scripts/deps-node.sh: %v\n%s", err, out)
		}
	}
	return node, sdk
}

// buildMemory builds the memory command into a temporary directory.
func buildMemory(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "memory")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/agentmem/memory/cmd/memory")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// sopDir writes the procedure library the script's prompts/get reads.
func sopDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	const deploy = `{"name": "deploy_service", "description": "Ship a service.", "trigger": "deploy, release", "category": "devops", "priority": 5,
 "steps": [{"action": "Build the image."}, {"action": "Roll it out.", "condition": "tests pass"}]}`
	if err := os.WriteFile(filepath.Join(dir, "deploy_service.json"), []byte(deploy), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// newStoreDir creates an empty store (BM25 only) for the server to open.
func newStoreDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	m, err := memory.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runNode runs the Chroma-style script and checks that it completes. It has no clock of its
// own: a loaded machine only makes it slower; the script is killed a little before the
// test binary's own deadline (go test -timeout), so that a hang is reported with its output.
func runNode(t *testing.T, node string, args ...string) {
	t.Helper()
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join("testdata", "chroma_client.mjs")}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("node script: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ok "+args[1]+" ") {
		t.Fatalf("node script did not finish:\n%s", out.String())
	}
	t.Logf("%s", strings.TrimSpace(lastLine(out.String())))
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// TestNodeSDKClient: an MCP client written against Chroma's MCP tool shapes, on the
// official Node SDK (@modelcontextprotocol/sdk), runs its whole script — list and create
// collections, add with metadata, query with where, where_document and include, get,
// update, delete, count, peek, resources, prompts, hostile arguments — against the built
// `memory serve --mcp`, over stdio and over streamable HTTP.
func TestNodeSDKClient(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the memory command and runs Node.js")
	}
	node, sdk := nodeSDK(t)
	bin := buildMemory(t)
	sops := sopDir(t)

	t.Run("stdio", func(t *testing.T) {
		runNode(t, node, sdk, "stdio", bin, newStoreDir(t), sops)
	})

	t.Run("streamable HTTP", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		const token = "node-test-token"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv := exec.CommandContext(ctx, bin, "serve", "--store", newStoreDir(t), "--mcp-http", addr, "--token", token, "--sops", sops)
		// The server says when it listens (on its standard error): the test waits for
		// that line, not for a clock.
		pr, pw := io.Pipe()
		srv.Stdout, srv.Stderr = pw, pw
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		listening, logged := make(chan bool, 1), make(chan struct{})
		go func() {
			defer close(logged)
			sc := bufio.NewScanner(pr)
			said := false
			for sc.Scan() {
				logs.WriteString(sc.Text() + "\n")
				if !said && strings.Contains(sc.Text(), "listening on http://"+addr) {
					said = true
					listening <- true
				}
			}
			if !said {
				listening <- false
			}
			_, _ = io.Copy(io.Discard, pr)
		}()
		exited := make(chan error, 1)
		go func() {
			exited <- srv.Wait()
			pw.Close()
		}()
		defer func() {
			cancel()
			<-exited
			<-logged
			if t.Failed() {
				t.Logf("server log:\n%s", logs.String())
			}
		}()
		if !<-listening {
			t.Fatalf("the server ended before it listened on %s", addr)
		}
		runNode(t, node, sdk, "http", fmt.Sprintf("http://%s/", addr), token)
	})
}
