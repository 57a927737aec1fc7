package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/store"
	bolt "go.etcd.io/bbolt"
)

// storeDamageCLI makes a store of 300 documents with vectors (hash embedder) with the CLI
// and returns its directory.
func storeDamageCLI(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	corpus := filepath.Join(dir, "corpus.jsonl")
	jsonl(t, corpus, 300, nil)
	st := filepath.Join(dir, "store")
	mustCLI(t, 0, "index", "--store", st, "--embedder", "hash:16", corpus)
	return st
}

// noCrashWords fails t when s holds the words of a Go crash.
func noCrashWords(t *testing.T, what, s string) {
	t.Helper()
	for _, w := range []string{"panic", "runtime error", "nil pointer", "goroutine "} {
		if strings.Contains(s, w) {
			t.Errorf("%s: the output holds %q:\n%s", what, w, s)
		}
	}
}

// memory check on a store.db whose docs branch page has the high byte of an element's
// pos flipped: bbolt's own check, which it ran, panicked with a slice out of range on a
// goroutine of its own and ended the process with status 2 (issue 39, point 3). Now the
// damage is a finding (exit 1, the page named, "restore"), and count, get and search
// answer or say the store is corrupt.
func TestCLICheckBranchFlip(t *testing.T) {
	st := storeDamageCLI(t)
	db := filepath.Join(st, "store.db")
	pages, err := store.Pages(db)
	if err != nil {
		t.Fatal(err)
	}
	var branch *store.PageInfo
	for i, p := range pages {
		if p.Branch && p.Bucket == "col/default/docs" {
			branch = &pages[i]
			break
		}
	}
	if branch == nil {
		t.Fatalf("the docs bucket has no branch page: %+v", pages)
	}
	raw, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	raw[branch.Offset+16+3] ^= 0x01 // element 0's pos, its high byte
	if err := os.WriteFile(db, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	out, errs := mustCLI(t, 1, "check", "--store", st)
	if !strings.Contains(out, "*/store.db: DISAGREES") || !strings.Contains(out, "page ") || !strings.Contains(errs, "restore") {
		t.Errorf("check:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	noCrashWords(t, "check", out+errs)
	for _, args := range [][]string{{"count"}, {"get", "d17"}, {"search", "document number 17"}} {
		code, out, errs := cli(t, append(append([]string{}, args[0], "--store", st), args[1:]...)...)
		noCrashWords(t, args[0], out+errs)
		if code != 0 && !strings.Contains(errs, "corrupt") {
			t.Errorf("%s: exit %d without saying the store is corrupt:\n%s", args[0], code, errs)
		}
		if code == 0 && args[0] == "count" && strings.TrimSpace(out) != "300" {
			t.Errorf("count: %s, want 300 or an error", out)
		}
	}
}

// A collection whose docs bucket's name is damaged ("docs" -> "docc"): count said 300,
// get "document not found", search 0 results, all exit 0, and check "invalid memory address
// or nil pointer dereference" (issue 39, point 4). Now each says the store is corrupt.
func TestCLIMissingDocsBucket(t *testing.T) {
	st := storeDamageCLI(t)
	rewriteStoreDB(t, st, func(tx *bolt.Tx) error {
		col := tx.Bucket([]byte("col")).Bucket([]byte("default"))
		docs := col.Bucket([]byte("docs"))
		docc, err := col.CreateBucket([]byte("docc"))
		if err != nil {
			return err
		}
		if err := docs.ForEach(func(k, v []byte) error { return docc.Put(k, v) }); err != nil {
			return err
		}
		return col.DeleteBucket([]byte("docs"))
	})
	for _, args := range [][]string{{"count"}, {"get", "d17"}, {"search", "document number 17"}, {"search", "--mode", "dense", "document"}} {
		code, out, errs := cli(t, append(append([]string{}, args[0], "--store", st), args[1:]...)...)
		if code == 0 || !strings.Contains(errs, "corrupt") || !strings.Contains(errs, "docs") {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
		}
		noCrashWords(t, args[0], out+errs)
	}
	out, errs := mustCLI(t, 1, "check", "--store", st)
	if !strings.Contains(out, "has no docs bucket") || !strings.Contains(errs, "restore") {
		t.Errorf("check:\nstdout:\n%s\nstderr:\n%s", out, errs)
	}
	noCrashWords(t, "check", out+errs)
}
