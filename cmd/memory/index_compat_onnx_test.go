//go:build cgo

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/vectorstore"
)

// TestIndexCompatE5: `index --compat search-r1 --embedder e5-base-v2` (the fixture encoder
// under e5's name) embeds each passage as the original's index builder does:
// "passage: " + contents (the quoted title included), cut at 256 tokens (build_index.sh's
// --max_length), which the store records; a dense search reloads that embedder.
func TestIndexCompatE5(t *testing.T) {
	t.Setenv("MEMORY_ORT_LIB", onnxtest.Library(t))
	t.Setenv(environ.Models, e5Models(t))
	t.Setenv(environ.Cache, t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "wiki.jsonl")
	contents := "\"Paris\"\nParis is the capital of France."
	corpusFile(t, file, map[string]string{"fr": contents, "de": "\"Berlin\"\nBerlin is the capital of Germany."})
	store := filepath.Join(dir, "s")
	_, errs := mustCLI(t, 0, "index", "--store", store, "--compat", "search-r1", "--embedder", "e5-base-v2", file)
	if !strings.Contains(errs, "passages embedded up to 256 tokens") {
		t.Errorf("index note:\n%s", errs)
	}
	m, err := memory.OpenExisting(store, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := m.StoredEmbedder()
	d, err := m.Get(context.Background(), "fr")
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := vectorstore.ParseONNXIdentity(id)
	if !ok || rec.Preset != vectorstore.PresetE5 || rec.PassagePrefix != "passage: " || rec.PassageMaxLength != 256 {
		t.Fatalf("recorded embedder %q (%+v), want e5 with passages cut at 256 tokens", id, rec)
	}
	e, err := loadEmbedderSpec(context.Background(), embedderSpec{name: "e5-base-v2", passageMaxTokens: 256})
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := e.(interface{ Close() error }); ok {
		defer c.Close()
	}
	vs, err := e.Embed(context.Background(), []string{contents, "Paris\nParis is the capital of France."})
	if err != nil {
		t.Fatal(err)
	}
	near := func(a, b []float32) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if d := a[i] - b[i]; d > 1e-5 || d < -1e-5 {
				return false
			}
		}
		return true
	}
	if !near(d.Embedding, vs[0]) || near(d.Embedding, vs[1]) {
		t.Errorf("the stored vector is not the embedding of \"passage: \" + the contents verbatim")
	}
	if out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "capital of France"); !strings.Contains(out, "fr") {
		t.Errorf("dense search after reload:\n%s", out)
	}
}
