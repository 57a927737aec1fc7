package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/bm25"
	bolt "go.etcd.io/bbolt"
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
	ix, err := bm25.OpenWith(filepath.Join(store, "bm25", "default"), bm25.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ix.Apply([]bm25.Doc{{ID: "ghost", Text: "ghost"}}, []string{"d17"}, ix.Seq()); err != nil {
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

// rewriteStoreDB changes a closed store's store.db with fn (one bbolt write transaction).
func rewriteStoreDB(t *testing.T, store string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(store, "store.db"), 0o644, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// memory check tells damage to the store of record from what a repair fixes (issue 21,
// point 9): a record whose id was damaged (stored under another key, as a flipped bit
// leaves it) is reported by id with "restore store.db from a backup" and no hint to run
// --repair, which cannot help; damaged counters are reported with the hint, and --repair
// fixes them. No output holds a Go panic's words.
func TestCheckCommandStoreDamage(t *testing.T) {
	dir := t.TempDir()
	jsonl(t, filepath.Join(dir, "docs.jsonl"), 40, nil)
	col := func(tx *bolt.Tx) *bolt.Bucket { return tx.Bucket([]byte("col")).Bucket([]byte("default")) }

	counters := filepath.Join(dir, "counters")
	mustCLI(t, 0, "index", "--store", counters, filepath.Join(dir, "docs.jsonl"))
	rewriteStoreDB(t, counters, func(tx *bolt.Tx) error {
		return col(tx).Bucket([]byte("info")).Put([]byte("ndocs"), []byte{0, 0, 0, 0, 0, 0, 0, 24})
	})
	if out, _ := mustCLI(t, 0, "count", "--store", counters); strings.TrimSpace(out) != "40" {
		t.Errorf("count with a damaged counter: %s, want 40", out)
	}
	out, errs := mustCLI(t, 1, "check", "--store", counters)
	if !strings.Contains(out, "default/counters: DISAGREES") || !strings.Contains(errs, "run memory check --repair") ||
		strings.Contains(errs, "restore") {
		t.Fatalf("damaged counters:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	if out, _ = mustCLI(t, 0, "check", "--store", counters, "--repair"); !strings.Contains(out, "default/counters: REPAIRED") {
		t.Fatalf("--repair:\n%s", out)
	}
	if out, _ = mustCLI(t, 0, "check", "--store", counters); !strings.Contains(out, "default/counters: ok (40 documents") {
		t.Fatalf("after --repair:\n%s", out)
	}

	keys := filepath.Join(dir, "keys")
	mustCLI(t, 0, "index", "--store", keys, filepath.Join(dir, "docs.jsonl"))
	rewriteStoreDB(t, keys, func(tx *bolt.Tx) error {
		docs := col(tx).Bucket([]byte("docs"))
		v := append([]byte(nil), docs.Get([]byte("d17"))...)
		if err := docs.Delete([]byte("d17")); err != nil {
			return err
		}
		return docs.Put([]byte("d16x"), v) // d17 -> d16x: the record under a damaged id
	})
	for _, id := range []string{"d17", "d16x"} {
		if _, errs := mustCLI(t, 1, "get", "--store", keys, id); !strings.Contains(errs, "corrupt") {
			t.Errorf("get %s of a record under a damaged id: %s", id, errs)
		}
	}
	out, errs = mustCLI(t, 1, "check", "--store", keys)
	if !strings.Contains(out, "default/store: DISAGREES") || !strings.Contains(errs, `"d16x"`) ||
		!strings.Contains(errs, "restore store.db from a backup") || strings.Contains(errs, "run memory check --repair") {
		t.Fatalf("a damaged id:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	for _, s := range []string{out, errs} {
		if strings.Contains(s, "panic") || strings.Contains(s, "runtime error") {
			t.Errorf("a Go panic's words in the output:\n%s", s)
		}
	}
}
