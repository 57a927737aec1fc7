package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// evalFolder writes a two-document BEIR folder whose one query finds document 1 first.
func evalFolder(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, filepath.Join(dir, "corpus.jsonl"),
		`{"_id":"1","title":"Otters","text":"Sea otters hold hands while sleeping."}`+"\n"+
			`{"_id":"2","title":"Walrus","text":"Walruses use their tusks to haul out."}`+"\n")
	writeFile(t, filepath.Join(dir, "queries.jsonl"), `{"_id":"q1","text":"sleeping otters"}`+"\n")
	writeFile(t, filepath.Join(dir, "qrels", "test.tsv"), "query-id\tcorpus-id\tscore\nq1\t1\t1\n")
}

// TestEvalStoreSkipsCorpus: eval --store of a filled store reads only the queries and the
// judgments, so it evaluates whatever lies at corpus.jsonl (at 21M passages the corpus did
// not fit in memory: the whole file was read before the store was even looked at).
func TestEvalStoreSkipsCorpus(t *testing.T) {
	dir := t.TempDir()
	beirDir := filepath.Join(dir, "beir")
	evalFolder(t, beirDir)
	kept := filepath.Join(dir, "kept")
	out, _ := mustCLI(t, 0, "eval", "--data", beirDir, "--keep", kept)
	if !strings.Contains(out, "(2 docs, 1 queries)") || !strings.Contains(out, "docs/s") {
		t.Fatalf("eval --keep:\n%s", out)
	}
	corpus := filepath.Join(beirDir, "corpus.jsonl")
	tests := []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"garbage corpus", func(t *testing.T) { writeFile(t, corpus, "not JSON at all\n{\"_id\":\n") }},
		{"line over the cap", func(t *testing.T) { writeFile(t, corpus, strings.Repeat("x", 65<<20)) }},
		{"corpus is a directory", func(t *testing.T) {
			os.Remove(corpus)
			if err := os.Mkdir(corpus, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"no corpus", func(t *testing.T) { os.RemoveAll(corpus) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			out, errs := mustCLI(t, 0, "eval", "--data", beirDir, "--store", kept)
			for _, want := range []string{"(2 docs, 1 queries)", "nDCG@10      1.0000", "the corpus was not read"} {
				if !strings.Contains(out, want) {
					t.Errorf("eval --store: no %q in\n%s%s", want, out, errs)
				}
			}
		})
	}
}

// TestEvalBadCorpusWritesNothing: a malformed corpus line fails eval naming the file and
// line before anything is written: no --keep store is created, an empty --store stays
// empty (a half-filled store would be evaluated as it is next time).
func TestEvalBadCorpusWritesNothing(t *testing.T) {
	dir := t.TempDir()
	beirDir := filepath.Join(dir, "beir")
	evalFolder(t, beirDir)
	good, err := os.ReadFile(filepath.Join(beirDir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(beirDir, "corpus.jsonl"), string(good)+"\n{oops\n")
	corpusLine := filepath.Join(beirDir, "corpus.jsonl") + ":4"

	kept := filepath.Join(dir, "kept")
	if _, errs := mustCLI(t, 1, "eval", "--data", beirDir, "--keep", kept); !strings.Contains(errs, corpusLine) {
		t.Errorf("eval --keep: stderr %q does not name %s", errs, corpusLine)
	}
	if _, err := os.Stat(kept); err == nil {
		t.Errorf("eval --keep of a bad corpus created %s", kept)
	}
	if _, errs := mustCLI(t, 1, "eval", "--data", beirDir); !strings.Contains(errs, corpusLine) {
		t.Errorf("eval: stderr %q does not name %s", errs, corpusLine)
	}

	// An empty store given with --store.
	empty := filepath.Join(dir, "empty")
	emptyCorpus := filepath.Join(dir, "none.jsonl")
	writeFile(t, emptyCorpus, "")
	cli(t, "index", "--store", empty, emptyCorpus) // "nothing stored" (exit 1), the store is made
	if out, _ := mustCLI(t, 0, "count", "--store", empty); strings.TrimSpace(out) != "0" {
		t.Fatalf("empty store holds %q", out)
	}
	if _, errs := mustCLI(t, 1, "eval", "--data", beirDir, "--store", empty); !strings.Contains(errs, corpusLine) {
		t.Errorf("eval --store empty: stderr %q does not name %s", errs, corpusLine)
	}
	if out, _ := mustCLI(t, 0, "count", "--store", empty); strings.TrimSpace(out) != "0" {
		t.Fatalf("a bad corpus half-filled the store: it holds %q", out)
	}
	// Fixed, the corpus fills it in batches (the same documents as a temporary store).
	writeFile(t, filepath.Join(beirDir, "corpus.jsonl"), string(good))
	out, _ := mustCLI(t, 0, "eval", "--data", beirDir, "--store", empty)
	if !strings.Contains(out, "(2 docs, 1 queries)") || !strings.Contains(out, "nDCG@10      1.0000") || !strings.Contains(out, "docs/s") {
		t.Fatalf("eval --store of an empty store:\n%s", out)
	}
}
