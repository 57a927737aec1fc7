//go:build cgo

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/environ"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/models"
	"github.com/agentmem/memory/vectorstore"
)

// e5Models makes a $MEMORY_MODELS holding the tiny fixture encoder as "e5-base-v2", laid
// out as the manifest entry's files (onnx/model.onnx).
func e5Models(t *testing.T) string {
	t.Helper()
	src := onnxtest.Model(t, "tiny-bert-encoder")
	root := t.TempDir()
	dst := filepath.Join(root, "e5-base-v2")
	m, err := models.Lookup("e5-base-v2")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range m.Files {
		from := filepath.Join(src, filepath.Base(f.Path))
		data, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dst, filepath.FromSlash(f.Path)), string(data))
	}
	return root
}

// TestE5PresetThroughTheStore: `index --embedder e5-base-v2` (the fixture under e5's
// name) builds with the e5 preset, the store records it, a later search reloads the same
// embedder without flags, `models info` shows the preset and the store's record, and a
// store built with --model-preset none keeps reopening without it.
func TestE5PresetThroughTheStore(t *testing.T) {
	t.Setenv("MEMORY_ORT_LIB", onnxtest.Library(t))
	t.Setenv(environ.Models, e5Models(t))
	t.Setenv(environ.Cache, t.TempDir())
	dir := t.TempDir()
	file := filepath.Join(dir, "wiki.jsonl")
	writeFile(t, file, `{"id": "1", "contents": "\"Paris\"\nParis is the capital of France."}`+"\n"+
		`{"id": "2", "contents": "\"Berlin\"\nBerlin is the capital of Germany."}`+"\n")

	store := filepath.Join(dir, "e5")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "e5-base-v2", file)
	m, err := memory.OpenExisting(store, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ := m.StoredEmbedder()
	m.Close()
	rec, ok := vectorstore.ParseONNXIdentity(id)
	if !ok || rec.Model != "e5-base-v2" || rec.Preset != vectorstore.PresetE5 || rec.PassagePrefix != "passage: " {
		t.Fatalf("recorded embedder %q (%+v)", id, rec)
	}
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", "dense", "capital of France")
	if !strings.Contains(out, "Paris") {
		t.Fatalf("dense search after reload:\n%s", out)
	}

	out, _ = mustCLI(t, 0, "models", "info", "e5-base-v2")
	for _, want := range []string{"intfloat/e5-base-v2", "e5 (chosen by the name)", `"query: "`, `"passage: "`, "mean", "256", "180", "+preset=e5"} {
		if !strings.Contains(out, want) {
			t.Errorf("models info lacks %q:\n%s", want, out)
		}
	}
	out, _ = mustCLI(t, 0, "models", "info", "--store", store)
	for _, want := range []string{id, "recorded preset", "e5", "180"} {
		if !strings.Contains(out, want) {
			t.Errorf("models info --store lacks %q:\n%s", want, out)
		}
	}
	out, _ = mustCLI(t, 0, "models", "info", "--model-preset", "bge", "--query-max-tokens", "64", "e5-base-v2")
	for _, want := range []string{"bge (asked for)", "Represent this sentence", "cls", "64"} {
		if !strings.Contains(out, want) {
			t.Errorf("models info --model-preset bge lacks %q:\n%s", want, out)
		}
	}
	out, _ = mustCLI(t, 0, "models", "info", "bge-large-en-v1.5")
	if !strings.Contains(out, "bge (chosen by the name)") || !strings.Contains(out, "not here") {
		t.Errorf("models info of an absent bge model:\n%s", out)
	}

	// Without the preset: the folder's own settings, and the identity stores had before
	// presets existed (no +preset), which reopens without one.
	plain := filepath.Join(dir, "plain")
	mustCLI(t, 0, "index", "--store", plain, "--embedder", "e5-base-v2", "--model-preset", "none", file)
	m, err = memory.OpenExisting(plain, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	id, _, _ = m.StoredEmbedder()
	m.Close()
	if strings.Contains(id, "+") {
		t.Fatalf("--model-preset none recorded %q", id)
	}
	mustCLI(t, 0, "search", "--store", plain, "--mode", "dense", "capital of France")

	// Caps as flags: a passage cap other than the preset's is recorded and reloaded.
	capped := filepath.Join(dir, "capped")
	mustCLI(t, 0, "index", "--store", capped, "--embedder", "e5-base-v2", "--passage-max-tokens", "64", file)
	mustCLI(t, 0, "search", "--store", capped, "--mode", "dense", "capital of France")
	if _, errs := mustCLI(t, 2, "search", "--store", capped, "--query-max-tokens", "-1", "x"); !strings.Contains(errs, "not negative") {
		t.Errorf("negative cap: %s", errs)
	}
}
