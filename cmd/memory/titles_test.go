package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/searchr1"
)

// TestIndexContentsKeepsTitleQuotes: a Search-R1 corpus line's title loses only the pair
// of quotes that wraps it, so a title that begins or ends with a quote keeps it and the
// /retrieve "contents" are the corpus line's own.
func TestIndexContentsKeepsTitleQuotes(t *testing.T) {
	dir := t.TempDir()
	corpus := map[string]string{
		"weird":  "\"\"Weird Al\" Yankovic\"\nAlfred Matthew Yankovic is an American singer.",
		"quote":  "\"\"Heroes\"\"\nA song by David Bowie.",
		"plain":  "\"Paris\"\nParis is the capital of France.",
		"inner":  "\"The \"Best\" Band\"\nA band.",
		"single": "\"\nA title that is one quote.",
	}
	want := map[string]string{"weird": `"Weird Al" Yankovic`, "quote": `"Heroes"`, "plain": "Paris", "inner": `The "Best" Band`, "single": `"`}
	var b strings.Builder
	for id, c := range corpus {
		line, _ := json.Marshal(map[string]string{"id": id, "contents": c})
		b.Write(line)
		b.WriteByte('\n')
	}
	file := filepath.Join(dir, "wiki.jsonl")
	writeFile(t, file, b.String())
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, file)

	m, err := memory.OpenExisting(store, memory.ReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for id, c := range corpus {
		d, err := m.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if d.Title != want[id] {
			t.Errorf("%s: title %q, want %q", id, d.Title, want[id])
		}
		if id == "single" {
			continue // a one-quote title has no pair to remove: not rendered back as it was
		}
		if got := searchr1.Contents(memory.Result{Title: d.Title, Text: d.Text}); got != c {
			t.Errorf("%s: contents %q, want the corpus line's %q", id, got, c)
		}
	}
}
