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

// TestImportKillResume kills `memory import` (a child process) at random moments, then
// runs it again: every run that is resumed finishes with the store holding exactly the
// exported documents, and documents stored before a kill are not written again.
func TestImportKillResume(t *testing.T) {
	dir, _, src := indexedSource(t, 3000)
	exp := filepath.Join(dir, "e.jsonl")
	mustCLI(t, 0, "export", "--store", src, exp)
	want, _ := storeContents(t, src)
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	kills, resumed := 0, 0
	var window time.Duration
	for run := range 4 {
		dst := filepath.Join(dir, fmt.Sprintf("dst%d", run))
		args := []string{"import", "--store", dst, "--batch", "100", exp}
		start := time.Now()
		if run == 0 { // the window to kill in
			if _, _, code, errs := killRun(t, args, 0); code != 0 {
				t.Fatalf("import: exit %d\n%s", code, errs)
			}
			window = time.Since(start)
			t.Logf("a whole import takes %s", window)
			continue
		}
		delay := time.Duration(rng.Int63n(int64(window))) + 20*time.Millisecond
		_, exited, code, errs := killRun(t, args, delay)
		if exited {
			if code != 0 {
				t.Fatalf("run %d: exit %d\n%s", run, code, errs)
			}
			continue
		}
		kills++
		// Resume.
		out, _ := mustCLI(t, 0, args...)
		if !strings.Contains(out, "3000 documents read") {
			t.Fatalf("resume: %s", out)
		}
		if !strings.Contains(out, ", 0 already stored") {
			resumed++
		}
		got, n := storeContents(t, dst)
		if n != len(want) || !maps.Equal(got, want) {
			t.Fatalf("run %d (killed after %s): the resumed import holds %d documents, want %d", run, delay, n, len(want))
		}
		t.Logf("run %d killed after %s; resumed: %s", run, delay, strings.TrimSpace(out))
	}
	if kills == 0 {
		t.Skip("no import was killed before it finished: the machine is faster than the window")
	}
	if resumed == 0 {
		t.Fatalf("%d imports were killed and none had stored anything to skip on resume", kills)
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
