//go:build cgo

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/vectorstore"
)

// e5Fixture is the tiny encoder fixture with E5-style prompts in its folder.
func e5Fixture(t *testing.T) string {
	t.Helper()
	src := onnxtest.Model(t, "tiny-bert-encoder")
	dir := filepath.Join(t.TempDir(), "tiny-e5")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		abs, err := filepath.Abs(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(dir, "config_sentence_transformers.json"), `{"prompts": {"query": "query: ", "passage": "passage: "}}`)
	return dir
}

func TestPrefixFlags(t *testing.T) {
	t.Setenv("MEMORY_ORT_LIB", onnxtest.Library(t))
	ctx := context.Background()
	dir := e5Fixture(t)
	static := onnxtest.Model(t, "potion-base-2M")
	str := func(s string) *string { return &s }
	embedQuery := func(e vectorstore.Embedder, q string) []float32 {
		t.Helper()
		v, err := e.(vectorstore.QueryEmbedder).EmbedQuery(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	passage := func(e vectorstore.Embedder, p string) []float32 {
		t.Helper()
		v, err := e.Embed(ctx, []string{p})
		if err != nil {
			t.Fatal(err)
		}
		return v[0]
	}
	load := func(spec embedderSpec) vectorstore.Embedder {
		t.Helper()
		spec.name = dir
		e, err := loadEmbedderSpec(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	def := load(embedderSpec{})
	off := load(embedderSpec{queryPrefix: str(""), passagePrefix: str("")})
	custom := load(embedderSpec{queryPrefix: str("search: "), passagePrefix: str("doc: ")})
	// The folder's prompts are the default, "" turns them off, a flag overrides them.
	if !strings.HasSuffix(def.ID(), `+passage="passage: "`) || strings.Contains(off.ID(), "+passage") ||
		!strings.HasSuffix(custom.ID(), `+passage="doc: "`) {
		t.Fatalf("ids: %s | %s | %s", def.ID(), off.ID(), custom.ID())
	}
	if !slices.Equal(embedQuery(def, "otters"), passage(off, "query: otters")) {
		t.Fatal("default query prefix is not the folder's \"query: \"")
	}
	if !slices.Equal(embedQuery(custom, "otters"), passage(off, "search: otters")) {
		t.Fatal("--query-prefix not applied")
	}
	if !slices.Equal(passage(custom, "otters"), passage(off, "doc: otters")) {
		t.Fatal("--passage-prefix not applied")
	}

	// Through the CLI: a store built with a passage prefix is reopened with that prefix by a
	// bare search (whatever the folder says), and another prefix is a mismatch.
	models := filepath.Dir(dir)
	t.Setenv("MEMORY_MODELS", models)
	store := filepath.Join(t.TempDir(), "s")
	file := filepath.Join(t.TempDir(), "c.jsonl")
	jsonl(t, file, 8, nil)
	mustCLI(t, 0, "index", "--store", store, "--embedder", "tiny-e5", "--passage-prefix", "doc: ", file)
	m := openTest(t, store)
	id, _, ok := m.StoredEmbedder()
	if !ok {
		t.Fatal("no embedder recorded")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(id, `+passage="doc: "`) {
		t.Fatalf("recorded %q", id)
	}
	out, errs := mustCLI(t, 0, "search", "--store", store, "--json", "--k", "1", "otters")
	if !strings.Contains(out, `"dense"`) || strings.Contains(errs, "BM25 only") {
		t.Fatalf("bare search: %s\n%s", out, errs)
	}
	mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "--query-prefix", "", "otters")
	_, errs = mustCLI(t, 1, "search", "--store", store, "--passage-prefix", "passage: ", "otters")
	if !strings.Contains(errs, "does not match") {
		t.Fatalf("other passage prefix: %s", errs)
	}
	// Static and hash embedders take no prefixes.
	if _, err := loadEmbedderSpec(ctx, embedderSpec{name: static, queryPrefix: str("q: ")}); err == nil {
		t.Fatal("prefix accepted for a Model2Vec model")
	}
}
