package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeCorpus writes n JSONL documents with metadata to dir/c.jsonl.
func writeCorpus(t *testing.T, dir string, n int) string {
	t.Helper()
	words := strings.Fields("memory store search vector keyword fusion rank agent recall index backup export import chunk token")
	var b strings.Builder
	for i := range n {
		line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("d%05d", i), "title": "T " + words[i%len(words)],
			"text":     fmt.Sprintf("%s %s and %s, note %d", words[(i*7)%len(words)], words[(i*3)%len(words)], words[(i*5+1)%len(words)], i),
			"metadata": map[string]any{"n": i, "tag": words[i%4]}})
		b.Write(append(line, '\n'))
	}
	p := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// searchIDs is the id and score of each result of a CLI search, one per line.
func searchIDs(t *testing.T, store, mode, query string) string {
	t.Helper()
	out, _ := mustCLI(t, 0, "search", "--store", store, "--mode", mode, "--k", "10", "--json", query)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			ID    string  `json:"id"`
			Score float64 `json:"score"`
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("search output %q: %v", l, err)
		}
		fmt.Fprintf(&b, "%s %v\n", r.ID, r.Score)
	}
	return b.String()
}

// sameSearches fails t unless stores a and b answer a few queries alike in every mode.
func sameSearches(t *testing.T, a, b string) {
	t.Helper()
	for _, q := range []string{"memory backup", "vector fusion", "note 17"} {
		for _, mode := range []string{"hybrid", "bm25", "dense"} {
			x, y := searchIDs(t, a, mode, q), searchIDs(t, b, mode, q)
			if x != y || x == "" {
				t.Fatalf("%q (%s): %s gives\n%s%s gives\n%s", q, mode, a, x, b, y)
			}
		}
	}
}

// TestBackupRestoreCLI: memory backup writes an archive (atomically: nothing else is left
// beside it), restore --check restores it into a store that check calls clean, with the
// same search results; a damaged archive fails and leaves nothing.
func TestBackupRestoreCLI(t *testing.T) {
	dir, _, src := indexedSource(t, 300)
	outDir := filepath.Join(dir, "out")
	if err := os.Mkdir(outDir, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(outDir, "s.tar")
	_, errs := mustCLI(t, 0, "backup", "--store", src, archive)
	if !strings.Contains(errs, "300 documents") {
		t.Fatalf("backup says: %s", errs)
	}
	if entries, _ := os.ReadDir(outDir); len(entries) != 1 {
		t.Fatalf("backup left %v", entries)
	}
	dst := filepath.Join(dir, "restored")
	out, _ := mustCLI(t, 0, "restore", archive, "--store", dst, "--check")
	if strings.Contains(out, "DISAGREES") || strings.Contains(out, "REPAIRED") || strings.Count(out, ": ok") < 5 {
		t.Fatalf("restore --check:\n%s", out)
	}
	out, _ = mustCLI(t, 0, "check", "--store", dst)
	if strings.Contains(out, "DISAGREES") || strings.Contains(out, "REPAIRED") {
		t.Fatalf("check of the restored store:\n%s", out)
	}
	sameSearches(t, src, dst)

	b, err := os.ReadFile(archive)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	bad := filepath.Join(dir, "bad.tar")
	if err := os.WriteFile(bad, b, 0o644); err != nil {
		t.Fatal(err)
	}
	dst2 := filepath.Join(dir, "restored2")
	code, _, errs := cli(t, "restore", bad, "--store", dst2)
	if code != 1 || !strings.Contains(errs, "not a valid backup archive") {
		t.Fatalf("restore of a damaged archive: exit %d\n%s", code, errs)
	}
	if _, err := os.Stat(dst2); !os.IsNotExist(err) {
		t.Fatalf("a failed restore left %s: %v", dst2, err)
	}
	if code, _, errs := cli(t, "restore", archive, "--store", dst); code != 1 || !strings.Contains(errs, "not empty") {
		t.Fatalf("restore over a store: exit %d\n%s", code, errs)
	}
}

// TestExportImportCLI: export then import (the embedder comes from the export's header)
// gives the same search results; a second import stores nothing; the export can be
// indexed; a store of another embedder refuses it.
func TestExportImportCLI(t *testing.T) {
	dir, corpus, src := indexedSource(t, 300)
	exp := filepath.Join(dir, "e.jsonl")
	mustCLI(t, 0, "export", "--store", src, exp)
	dst := filepath.Join(dir, "dst")
	out, _ := mustCLI(t, 0, "import", "--store", dst, exp)
	if !strings.Contains(out, "300 documents read, 300 stored, 0 already stored") {
		t.Fatalf("import: %s", out)
	}
	sameSearches(t, src, dst)
	out, _ = mustCLI(t, 0, "import", "--store", dst, exp)
	if !strings.Contains(out, "300 documents read, 0 stored, 300 already stored identically") {
		t.Fatalf("second import: %s", out)
	}
	out, errs := mustCLI(t, 0, "index", "--store", filepath.Join(dir, "indexed"), "--embedder-id", "hash-bigram-v1/32", "--strict", exp)
	if !strings.Contains(out, "stored 300 documents") {
		t.Fatalf("index of an export: %s\n%s", out, errs)
	}
	other := filepath.Join(dir, "other")
	mustCLI(t, 0, "index", "--store", other, "--embedder", "hash:16", corpus)
	code, _, errs := cli(t, "import", "--store", other, exp)
	if code != 1 || !strings.Contains(errs, "embedder does not match") {
		t.Fatalf("import into a store of another embedder: exit %d\n%s", code, errs)
	}
}

// TestImportCutExportCLI imports an export cut in the middle of a line (issue 39, item 5):
// every whole document line before the cut is stored (in one batch of the default size, so
// nothing was written before the cut), the command fails saying what it stored and where
// the cut is, and neither it nor import -h promises that running it again finishes.
func TestImportCutExportCLI(t *testing.T) {
	dir, _, src := indexedSource(t, 300)
	exp := filepath.Join(dir, "e.jsonl")
	mustCLI(t, 0, "export", "--store", src, exp)
	data, err := os.ReadFile(exp)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	whole := strings.Join(lines[:150], "") // the header and 149 documents
	cut := filepath.Join(dir, "cut.jsonl")
	writeFile(t, cut, whole+lines[150][:len(lines[150])/2])
	dst := filepath.Join(dir, "dst")
	code, out, errs := cli(t, "import", "--store", dst, cut)
	if code != 1 {
		t.Fatalf("import of a cut export: exit %d\n%s%s", code, out, errs)
	}
	for _, want := range []string{"149 stored", "every whole document line before the damage or the cut is stored",
		fmt.Sprintf("inside line 151 (which starts at byte %d", len(whole)), "stores nothing more"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "run the same import again to finish") {
		t.Errorf("a cut export is said to be finished by running the same import again:\n%s", errs)
	}
	if _, n := storeContents(t, dst); n != 149 {
		t.Fatalf("the store holds %d documents, want the 149 before the cut", n)
	}
	_, help := mustCLI(t, 0, "import", "-h")
	if !strings.Contains(help, "stores every whole document line before the cut") {
		t.Fatalf("import -h does not say what a cut export stores:\n%s", help)
	}
}

// TestImportKillResume kills `memory import` (a child process) at points spread over the
// run, chosen by its acknowledgements (a progress line after each batch), then runs it
// again: every run that is resumed finishes with the store holding exactly the exported
// documents, and documents stored before a kill are not written again.
func TestImportKillResume(t *testing.T) {
	dir, _, src := indexedSource(t, 3000)
	exp := filepath.Join(dir, "e.jsonl")
	mustCLI(t, 0, "export", "--store", src, exp)
	want, _ := storeContents(t, src)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	args := func(dst string) []string { return []string{"import", "--store", dst, "--batch", "100", exp} }
	// A whole import counts the acknowledgements to kill at.
	_, acks, _, code, errs := killRun(t, args(filepath.Join(dir, "dst")), -1)
	if code != 0 {
		t.Fatalf("import: exit %d\n%s", code, errs)
	}
	kills, resumed := 0, 0
	// Kill points past the first acknowledgement: each kill leaves a batch stored or more.
	for run, at := range killPoints(rng, 4, acks-3) {
		at++
		dst := filepath.Join(dir, fmt.Sprintf("dst%d", run))
		acked, _, exited, code, errs := killRun(t, args(dst), at)
		if exited { // it outran the kill (two batches and the end): it must have finished
			if code != 0 {
				t.Fatalf("run %d: exit %d\n%s", run, code, errs)
			}
			if got, n := storeContents(t, dst); n != len(want) || !maps.Equal(got, want) {
				t.Fatalf("run %d finished, and holds %d documents, want %d", run, n, len(want))
			}
			continue
		}
		kills++
		// Resume.
		out, _ := mustCLI(t, 0, args(dst)...)
		if !strings.Contains(out, "3000 documents read") {
			t.Fatalf("resume: %s", out)
		}
		if !strings.Contains(out, fmt.Sprintf(", %d already stored", 0)) {
			resumed++
		}
		got, n := storeContents(t, dst)
		if n != len(want) || !maps.Equal(got, want) {
			t.Fatalf("run %d (killed at acknowledgement %d of %d, %d acknowledged): the resumed import holds %d documents, want %d", run, at, acks, acked, n, len(want))
		}
		t.Logf("run %d killed at acknowledgement %d of %d (%d acknowledged); resumed: %s", run, at, acks, acked, strings.TrimSpace(out))
	}
	if kills == 0 {
		t.Fatal("every import outran its kill (sent when two batches were left): nothing was tested")
	}
	if resumed != kills {
		t.Fatalf("%d imports were killed after a batch was stored, and %d of them skipped stored documents on resume", kills, resumed)
	}
}

// indexedSource writes a corpus of n documents in a new folder dir and indexes it with
// memory index into the store dir/src (embedder hash:32).
func indexedSource(t *testing.T, n int) (dir, corpus, src string) {
	t.Helper()
	dir = t.TempDir()
	corpus = writeCorpus(t, dir, n)
	src = filepath.Join(dir, "src")
	mustCLI(t, 0, "index", "--store", src, "--embedder", "hash:32", corpus)
	return dir, corpus, src
}
