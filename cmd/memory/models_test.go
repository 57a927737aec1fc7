package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/models"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestModelsCLI(t *testing.T) {
	cache := t.TempDir()
	shared := t.TempDir()
	t.Setenv(environ.Cache, cache)
	t.Setenv(environ.Models, shared)

	// A ready potion folder in $MEMORY_MODELS (right sizes where pinned).
	m, err := models.Lookup("potion-base-2M")
	if err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(shared, m.Name)
	for _, f := range m.Files {
		p := filepath.Join(ready, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, f.Size), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	code, out, _ := runCLI(t, "models", "list")
	if code != 0 {
		t.Fatalf("list exit %d", code)
	}
	for _, want := range []string{"all-MiniLM-L6-v2", "ms-marco-MiniLM-L-6-v2", "potion-base-2M", ready, "not pulled", "87.1 MiB"} {
		if !strings.Contains(out, want) {
			t.Errorf("list output lacks %q:\n%s", want, out)
		}
	}

	if code, out, _ := runCLI(t, "models", "path", "potion-base-2M"); code != 0 || strings.TrimSpace(out) != ready {
		t.Fatalf("path: %d %q", code, out)
	}
	if code, _, errOut := runCLI(t, "models", "path", "all-MiniLM-L6-v2"); code != 1 || !strings.Contains(errOut, "not downloaded") {
		t.Fatalf("path of a missing model: %d %q", code, errOut)
	}
	if code, _, _ := runCLI(t, "models", "path"); code != 2 {
		t.Fatalf("path without a name: %d", code)
	}
	if code, _, _ := runCLI(t, "models", "frobnicate"); code != 2 {
		t.Fatalf("unknown subcommand: %d", code)
	}
	if code, _, _ := runCLI(t, "models"); code != 2 {
		t.Fatalf("no subcommand: %d", code)
	}

	// pull of a ready folder prints it; pull from a server without the files fails.
	if code, out, _ := runCLI(t, "models", "pull", "potion-base-2M"); code != 0 || strings.TrimSpace(out) != ready {
		t.Fatalf("pull ready: %d %q", code, out)
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	code, _, errOut := runCLI(t, "models", "pull", "--base-url", srv.URL, "--retries", "-1", "ms-marco-MiniLM-L-6-v2")
	if code != 1 || !strings.Contains(errOut, "not found on server") {
		t.Fatalf("pull 404: %d %q", code, errOut)
	}
	if code, _, errOut := runCLI(t, "models", "pull", "nope"); code != 1 || !strings.Contains(errOut, "unknown model") {
		t.Fatalf("pull unknown: %d %q", code, errOut)
	}
}

func TestModelsReporterPlain(t *testing.T) {
	var b bytes.Buffer
	r := newModelsReporter(&b)
	for _, done := range []int64{0, 10, 30, 60, 99, 100, 100} {
		r.update(models.Progress{Model: "m", File: "a.bin", FileIndex: 0, Files: 2, Done: done, Total: 100})
	}
	r.update(models.Progress{Model: "m", File: "b.json", FileIndex: 1, Files: 2, Done: 5, Total: -1})
	r.update(models.Progress{Model: "m", File: "b.json", FileIndex: 1, Files: 2, Done: 9, Total: -1})
	r.close()
	want := `m [1/2] a.bin: 0 B of 100 B (0%)
m [1/2] a.bin: 30 B of 100 B (30%)
m [1/2] a.bin: 60 B of 100 B (60%)
m [1/2] a.bin: 99 B of 100 B (99%)
m [1/2] a.bin: done (100 B)
m [2/2] b.json: downloading (size unknown)
`
	if b.String() != want {
		t.Fatalf("plain progress:\n%s\nwant:\n%s", b.String(), want)
	}
	if got := modelsHumanBytes(90387606); got != "86.2 MiB" {
		t.Fatalf("modelsHumanBytes = %s", got)
	}
}
