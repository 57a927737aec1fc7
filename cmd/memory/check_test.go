package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/hybrid"
)

// memory check prints one line per collection and index, exits 1 when one disagrees and
// was not repaired, and --repair rebuilds it.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	jsonl(t, filepath.Join(dir, "docs.jsonl"), 40, nil)
	mustCLI(t, 0, "index", "--store", store, filepath.Join(dir, "docs.jsonl"))

	out, _ := mustCLI(t, 0, "check", "--store", store)
	if !strings.Contains(out, "default/bm25: ok (store: 40 ids") {
		t.Fatalf("clean store:\n%s", out)
	}

	// Swap a stored id for a ghost in the BM25 index, keeping its sequence number.
	ix, err := hybrid.OpenBM25With(filepath.Join(store, "bm25", "default"), hybrid.BM25Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]hybrid.BM25Doc{{ID: "ghost", Text: "ghost"}}, []string{"d17"}, ix.Seq()); err != nil {
		t.Fatal(err)
	}
	ix.Close()

	out, errs := mustCLI(t, 1, "check", "--store", store)
	if !strings.Contains(out, "default/bm25: DISAGREES") || !strings.Contains(errs, "--repair") {
		t.Fatalf("damaged store:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	out, _ = mustCLI(t, 0, "check", "--store", store, "--repair")
	if !strings.Contains(out, "default/bm25: REPAIRED") {
		t.Fatalf("--repair:\n%s", out)
	}
	out, _ = mustCLI(t, 0, "check", "--store", store)
	if !strings.Contains(out, "default/bm25: ok") {
		t.Fatalf("after --repair:\n%s", out)
	}
	// A store that does not exist is an error naming it, and nothing is created.
	_, errs = mustCLI(t, 1, "check", "--store", filepath.Join(dir, "typo"))
	if !strings.Contains(errs, "typo") {
		t.Fatalf("missing store: %s", errs)
	}
}
