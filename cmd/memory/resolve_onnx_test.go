//go:build cgo

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
)

// TestBareSearchReloadsONNXEmbedder: a store built with --embedder tiny-bert-encoder (an ONNX
// fixture from $MEMORY_MODELS) is searched in hybrid mode by a bare `memory search`.
func TestBareSearchReloadsONNXEmbedder(t *testing.T) {
	t.Setenv("MEMORY_ORT_LIB", onnxtest.Library(t))
	models := onnxtest.ModelsDir(t)
	abs, err := filepath.Abs(models)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("MEMORY_MODELS", abs)
	dir := t.TempDir()
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 12, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "tiny-bert-encoder", file)
	out, errs := mustCLI(t, 0, "search", "--store", store, "--json", "--k", "2", "otters")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Contains(errs, "BM25 only") {
		t.Fatalf("results: %s\n%s", out, errs)
	}
	for _, l := range lines {
		var r memory.Result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Explain.Mode != memory.Hybrid || r.Explain.Dense == nil {
			t.Fatalf("not hybrid: %s", l)
		}
	}
	// Without the model where the CLI looks, the store says which model it needs and a
	// bare search falls back to BM25.
	t.Setenv("MEMORY_MODELS", t.TempDir())
	t.Setenv("MEMORY_CACHE", t.TempDir())
	out, errs = mustCLI(t, 0, "search", "--store", store, "otters")
	if !strings.Contains(errs, "tiny-bert-encoder") || !strings.Contains(errs, "BM25 only") || !strings.Contains(out, "Doc") {
		t.Fatalf("fallback: %s\n%s", out, errs)
	}
	_, errs = mustCLI(t, 1, "search", "--store", store, "--mode", "dense", "otters")
	if !strings.Contains(errs, "tiny-bert-encoder") {
		t.Fatalf("dense without the model: %s", errs)
	}
}
