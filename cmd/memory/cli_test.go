package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/memtest"
)

// cli runs the CLI with args and returns its exit status, stdout and stderr.
func cli(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runMain(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// mustCLI runs the CLI and fails the test unless it exits with want.
func mustCLI(t *testing.T, want int, args ...string) (string, string) {
	t.Helper()
	code, out, errs := cli(t, args...)
	if code != want {
		t.Fatalf("memory %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, want, out, errs)
	}
	return out, errs
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsonl writes n good documents ("d0".."d{n-1}") with the given lines replaced (1-based).
func jsonl(t *testing.T, path string, n int, replace map[int]string) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < n; i++ {
		line, ok := replace[i+1]
		if !ok {
			j, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("d%d", i), "title": fmt.Sprintf("Doc %d", i),
				"text": fmt.Sprintf("document number %d about otters", i), "metadata": map[string]any{"n": i}})
			line = string(j)
		}
		b.WriteString(line + "\n")
	}
	writeFile(t, path, b.String())
}

// openTest opens a store the CLI wrote, for checks.
func openTest(t *testing.T, dir string) *memory.Memory {
	t.Helper()
	m, err := memory.OpenExisting(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}

func TestIndexSkipsBadLinesWithTrueLineNumbers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 300, map[int]string{151: ""})
	store := filepath.Join(dir, "s")
	out, errs := mustCLI(t, 0, "index", "--store", store, file)
	if !strings.Contains(out, "stored 299 documents") || !strings.Contains(out, "skipped 1") {
		t.Fatalf("summary: %s", out)
	}
	if !strings.Contains(errs, "c.jsonl:151: empty line") || strings.Count(errs, "skip ") != 1 {
		t.Fatalf("bad line not named exactly once: %s", errs)
	}
	if n := memtest.Count(t, openTest(t, store)); n != 299 {
		t.Fatalf("stored %d", n)
	}
}

func TestIndexEachKindOfBadLine(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.jsonl")
	bad := map[int]string{
		3:  "   ",
		10: `{"id": "x", "text": `,
		20: `{"title": "no id", "text": "nothing to call it"}`,
		30: `{"id": "notext", "metadata": {"a": 1}}`,
		40: `{"id": "d1", "title": "again", "text": "a duplicate of line 2"}`,
		50: `{"id": "meta", "text": "t", "metadata": {"nested": {"no": 1}}}`,
		60: `[1, 2, 3]`,
		70: `{"id": 1.5, "text": "a fractional id"}`,
		80: `{"id": 8080, "text": "an integer id is fine"}`,
	}
	jsonl(t, file, 100, bad)
	store := filepath.Join(dir, "s")
	out, errs := mustCLI(t, 0, "index", "--store", store, "--batch", "7", file)
	nBad := len(bad) - 1
	if !strings.Contains(out, fmt.Sprintf("stored %d documents", 100-nBad)) || !strings.Contains(out, fmt.Sprintf("skipped %d", nBad)) {
		t.Fatalf("summary: %s\n%s", out, errs)
	}
	for _, want := range []string{
		"c.jsonl:3: empty line",
		"c.jsonl:10: invalid JSON",
		"c.jsonl:20: no id",
		`c.jsonl:30: document "notext" has no text`,
		`c.jsonl:40: duplicate id "d1" (first read at ` + file + ":2)",
		`c.jsonl:50: memory: invalid metadata`,
		"c.jsonl:60: invalid JSON",
		"c.jsonl:70: invalid JSON: id 1.5 is not an integer",
	} {
		if !strings.Contains(errs, "skip "+filepath.Join(dir, want)) {
			t.Errorf("missing %q in:\n%s", want, errs)
		}
	}
	m := openTest(t, store)
	if n := memtest.Count(t, m); n != 100-nBad {
		t.Fatalf("stored %d", n)
	}
	if _, err := m.Get(context.Background(), "8080"); err != nil {
		t.Fatalf("integer id: %v", err)
	}
	if d, err := m.Get(context.Background(), "d1"); err != nil || d.Title != "Doc 1" {
		t.Fatalf("first d1 not kept: %+v %v", d, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// --strict: the good ones are stored, and the exit status says something was skipped.
	_, errs = mustCLI(t, 1, "index", "--store", filepath.Join(dir, "strict"), "--strict", file)
	if !strings.Contains(errs, "skipped (--strict)") {
		t.Fatalf("strict: %s", errs)
	}
	// Nothing good: exit 1.
	allBad := filepath.Join(dir, "bad.jsonl")
	writeFile(t, allBad, "\n{oops\n")
	_, errs = mustCLI(t, 1, "index", "--store", filepath.Join(dir, "bad"), allBad)
	if !strings.Contains(errs, "nothing stored") || !strings.Contains(errs, "bad.jsonl:1: empty line") || !strings.Contains(errs, "bad.jsonl:2: invalid JSON") {
		t.Fatalf("all bad: %s", errs)
	}
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", maxLineBytes+10)
	in := "a\r\n\nb\n" + long + "\nc"
	var got []string
	err := readLines(strings.NewReader(in), func(n int, line []byte, tooLong bool) error {
		s := string(line)
		if tooLong {
			s = "<long>"
		}
		got = append(got, fmt.Sprintf("%d:%s", n, s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"1:a", "2:", "3:b", "4:<long>", "5:c"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestIndexReindexReplacesSourceAndSync(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	writeFile(t, filepath.Join(docs, "a.md"), "# Alpha\nThe alpha text mentions walruses.")
	writeFile(t, filepath.Join(docs, "b.txt"), "Beta\nThe beta text mentions narwhals.")
	writeFile(t, filepath.Join(docs, "sub", "c.jsonl"),
		`{"id": "c1", "text": "first line doc about penguins"}`+"\n"+`{"id": "c2", "text": "second line doc about puffins"}`+"\n")
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, docs)
	m := openTest(t, store)
	if n := memtest.Count(t, m); n != 4 {
		t.Fatalf("count %d", n)
	}
	d, err := m.Get(context.Background(), filepath.ToSlash(filepath.Join(docs, "a.md")))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.ToSlash(filepath.Join(docs, "a.md")); d.Source != want || d.Title != "Alpha" {
		t.Fatalf("a.md: %+v", d)
	}
	c1, _ := m.Get(context.Background(), "c1")
	if c1.Source != filepath.ToSlash(filepath.Join(docs, "sub", "c.jsonl")) {
		t.Fatalf("c1 source %q", c1.Source)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// Edit: c2 leaves the JSONL, c3 arrives, a.md changes. Re-indexing just those files
	// replaces their documents: no stale ones.
	writeFile(t, filepath.Join(docs, "sub", "c.jsonl"),
		`{"id": "c1", "text": "first line doc about penguins, edited"}`+"\n"+`{"id": "c3", "text": "third doc about gannets"}`+"\n")
	writeFile(t, filepath.Join(docs, "a.md"), "# Alpha 2\nNow about seals only.")
	out, _ := mustCLI(t, 0, "index", "--store", store, filepath.Join(docs, "sub", "c.jsonl"), filepath.Join(docs, "a.md"))
	if !strings.Contains(out, "removed 1 stale documents of re-indexed sources") { // c2; c1 and a.md replaced in place
		t.Fatalf("summary: %s", out)
	}
	m = openTest(t, store)
	ids := memtest.IDs(t, m.Collection(""))
	slices.Sort(ids)
	wantIDs := []string{"c1", "c3", filepath.ToSlash(filepath.Join(docs, "a.md")), filepath.ToSlash(filepath.Join(docs, "b.txt"))}
	slices.Sort(wantIDs)
	if !slices.Equal(ids, wantIDs) {
		t.Fatalf("ids %v want %v", ids, wantIDs)
	}
	res, err := m.Search(context.Background(), "walruses", memory.WithMode(memory.BM25))
	if err != nil || len(res) != 0 {
		t.Fatalf("stale text still found: %v %v", res, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// --sync after b.txt disappears: its documents go, the rest stay; from another working
	// directory with a relative root, since sources are absolute.
	if err := os.Remove(filepath.Join(docs, "b.txt")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	out, errs := mustCLI(t, 0, "index", "--store", store, "--sync", "docs")
	if !strings.Contains(out, "removed 1 documents of 1 vanished sources") || !strings.Contains(errs, "b.txt is gone") {
		t.Fatalf("sync: %s\n%s", out, errs)
	}
	m = openTest(t, store)
	if n := memtest.Count(t, m); n != 3 {
		t.Fatalf("after sync: %d %v", n, memtest.IDs(t, m.Collection("")))
	}
	// The ids of a.md differ (relative now), but its source is the same: one document.
	if _, err := m.Get(context.Background(), filepath.ToSlash(filepath.Join(docs, "a.md"))); err == nil {
		t.Fatal("old id of the re-indexed a.md kept beside the new one")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	// A root that is gone as a whole: --sync empties what came from it; without --sync
	// it is an error.
	if err := os.RemoveAll(filepath.Join(docs, "sub")); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, 1, "index", "--store", store, filepath.Join("docs", "sub"))
	out, _ = mustCLI(t, 0, "index", "--store", store, "--sync", filepath.Join("docs", "sub"))
	if !strings.Contains(out, "removed 2 documents of 1 vanished sources") {
		t.Fatalf("sync of a gone root: %s", out)
	}
	if n := memtest.Count(t, openTest(t, store)); n != 1 {
		t.Fatalf("after syncing the gone root: %d", n)
	}
}

func TestReadCommandsNeverCreate(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "typo")
	for _, args := range [][]string{
		{"search", "--store", missing, "q"},
		{"get", "--store", missing, "id"},
		{"count", "--store", missing},
		{"collections", "--store", missing},
		{"delete", "--store", missing, "id"},
		{"eval", "--data", filepath.Join(dir, "nodata"), "--store", missing},
		{"serve", "--store", missing, "--retrieve", "127.0.0.1:0"},
	} {
		code, _, errs := cli(t, args...)
		if code != 1 || !strings.Contains(errs, missing) && args[0] != "eval" {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("%v created %s", args, missing)
		}
	}
	// eval --store on a missing store with real BEIR data fails naming the store.
	beirDir := filepath.Join(dir, "beir")
	writeFile(t, filepath.Join(beirDir, "corpus.jsonl"), `{"_id":"1","title":"t","text":"x"}`+"\n")
	writeFile(t, filepath.Join(beirDir, "queries.jsonl"), `{"_id":"q","text":"x"}`+"\n")
	writeFile(t, filepath.Join(beirDir, "qrels", "test.tsv"), "query-id\tcorpus-id\tscore\nq\t1\t1\n")
	// serve on an existing store with a mistyped collection fails naming it, creating nothing.
	existing := filepath.Join(dir, "real")
	mustCLI(t, 0, "index", "--store", existing, filepath.Join(beirDir, "corpus.jsonl"))
	if _, errs := mustCLI(t, 1, "serve", "--store", existing, "--collection", "typo", "--retrieve", "127.0.0.1:0"); !strings.Contains(errs, `"typo"`) {
		t.Fatalf("serve --collection typo: %s", errs)
	}
	if out, _ := mustCLI(t, 0, "collections", "--store", existing); strings.Contains(out, "typo") {
		t.Fatalf("serve created the collection: %s", out)
	}
	_, errs := mustCLI(t, 1, "eval", "--data", beirDir, "--store", missing)
	if !strings.Contains(errs, missing) {
		t.Fatalf("eval: %s", errs)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("eval created the store")
	}

	// An existing store with a mistyped collection: named in the error, not created.
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 3, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--collection", "notes", file)
	for _, args := range [][]string{
		{"search", "--store", store, "--collection", "nots", "q"},
		{"get", "--store", store, "--collection", "nots", "d0"},
		{"count", "--store", store, "--collection", "nots"},
		{"delete", "--store", store, "--collection", "nots", "d0"},
		{"collections", "--store", store, "--delete", "nots"},
		{"collections", "--store", store, "--rename", "nots", "x"},
	} {
		_, errs := mustCLI(t, 1, args...)
		if !strings.Contains(errs, `"nots"`) || !strings.Contains(errs, "collection not found") || !strings.Contains(errs, `"notes"`) {
			t.Errorf("%v: %s", args, errs)
		}
	}
	m := openTest(t, store)
	if got := memtest.Collections(t, m); !slices.Equal(got, []string{"notes"}) {
		t.Fatalf("collections %v", got)
	}
	// A folder that is not a store is not touched either.
	other := filepath.Join(dir, "other")
	writeFile(t, filepath.Join(other, "x.txt"), "hello")
	_, errs = mustCLI(t, 1, "count", "--store", other)
	if !strings.Contains(errs, other) {
		t.Fatalf("not a store: %s", errs)
	}
}

func TestBareSearchUsesRecordedEmbedder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 20, nil)
	store := filepath.Join(dir, "s")
	mustCLI(t, 0, "index", "--store", store, "--embedder", "hash:64", file)
	// Later writes and searches need no --embedder.
	more := filepath.Join(dir, "more.jsonl")
	writeFile(t, more, `{"id": "m1", "text": "an extra otter document"}`+"\n")
	mustCLI(t, 0, "index", "--store", store, more)

	out, errs := mustCLI(t, 0, "search", "--store", store, "--json", "--k", "3", "otters")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 {
		t.Fatalf("results: %s\n%s", out, errs)
	}
	for _, l := range lines {
		var r memory.Result
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatal(err)
		}
		if r.Explain.Mode != memory.Hybrid || r.Explain.Dense == nil {
			t.Fatalf("not a hybrid result: %s", l)
		}
	}
	m := openTest(t, store)
	if id, dim, ok := m.StoredEmbedder(); !ok || id != "hash-bigram-v1/64" || dim != 64 {
		t.Fatalf("recorded embedder %q %d %v", id, dim, ok)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	// The extra document got a vector: a dense search finds it.
	out, _ = mustCLI(t, 0, "search", "--store", store, "--json", "--mode", "dense", "--k", "1", "an extra otter document")
	if !strings.Contains(out, `"id":"m1"`) {
		t.Fatalf("dense: %s", out)
	}
	// Another embedder is a mismatch, with the CLI's way out.
	_, errs = mustCLI(t, 1, "search", "--store", store, "--embedder", "hash:32", "otters")
	if !strings.Contains(errs, "--reembed") {
		t.Fatalf("mismatch: %s", errs)
	}
}

func TestSearchFallsBackToBM25WhenEmbedderMissing(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MEMORY_MODELS", filepath.Join(dir, "models"))
	t.Setenv("MEMORY_CACHE", filepath.Join(dir, "cache"))
	store := filepath.Join(dir, "s")
	m, err := memory.Open(store, memory.WithEmbedder(fakeEmbedder{id: "gone-model@sha256:0123456789abcdef", dim: 8}))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(context.Background(), memory.Document{ID: "1", Text: "otters hold hands"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	out, errs := mustCLI(t, 0, "search", "--store", store, "otters")
	if !strings.Contains(out, "otters hold hands") || !strings.Contains(errs, "BM25 only") || !strings.Contains(errs, "gone-model") {
		t.Fatalf("fallback: %s\n%s", out, errs)
	}
	// An explicit mode is not changed behind the user's back.
	_, errs = mustCLI(t, 1, "search", "--store", store, "--mode", "hybrid", "otters")
	if !strings.Contains(errs, "gone-model") {
		t.Fatalf("explicit hybrid: %s", errs)
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, inv := range everyInvocation(t) {
		for _, h := range []string{"-h", "--help", "-help"} {
			code, out, errs := cli(t, append(slices.Clone(inv), h)...)
			if code != 0 || !strings.Contains(out+errs, "usage") {
				t.Errorf("%s %s: exit %d\n%s%s", inv, h, code, out, errs)
			}
		}
	}
	for _, args := range [][]string{{"models", "pull", "-h"}, {"sop", "match", "-h"}, {"runtime", "pull", "-h"}, {"runtime", "help"}, {"index", "help"}} {
		mustCLI(t, 0, args...)
	}
	_, errs := mustCLI(t, 0, "index", "-h")
	for _, want := range []string{".jsonl", ".md", `"_id"`, `"contents"`, "--strict", "--sync", "line number"} {
		if !strings.Contains(errs, want) {
			t.Errorf("index -h lacks %q", want)
		}
	}
	_, errs = mustCLI(t, 0, "search", "--store", "x", "-h")
	if !strings.Contains(errs, "$gte") {
		t.Errorf("search -h lacks the filter format")
	}
	mustCLI(t, 0, "help")
	mustCLI(t, 2)
	mustCLI(t, 2, "index", "--no-such-flag")
}

func TestSearchTableEscapesAndSnippets(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	m, err := memory.Open(store)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("filler words here and there. ", 40) + "The \x1b[2J kraken \x1b[0m surfaced near the pier." + strings.Repeat(" More filler text follows.", 40)
	if err := m.Add(context.Background(),
		memory.Document{ID: "evil\x1b]0;title\x07", Title: "red \x1b[31mALERT\x1b[0m \u202eexe", Text: long},
	); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	out, _ := mustCLI(t, 0, "search", "--store", store, "kraken")
	if strings.ContainsAny(out, "\x1b\x07\u202e") {
		t.Fatalf("raw control characters in the table: %q", out)
	}
	for _, want := range []string{`red \x1b[31mALERT\x1b[0m \u202eexe`, `evil\x1b]0;title\x07`, `\x1b[2J kraken \x1b[0m surfaced`} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	// The snippet is the part around the match, not the start of the text.
	if !regexp.MustCompile(`(?m)^\s+.*kraken.*surfaced`).MatchString(out) {
		t.Errorf("no snippet line:\n%s", out)
	}
	// get escapes too, keeping newlines.
	out, _ = mustCLI(t, 0, "get", "--store", store, "evil\x1b]0;title\x07")
	if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b[2J kraken`) {
		t.Fatalf("get: %q", out)
	}
	// JSON output keeps the stored bytes (JSON escapes them itself).
	out, _ = mustCLI(t, 0, "get", "--store", store, "--json", "evil\x1b]0;title\x07")
	var d memory.Document
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Text != long {
		t.Fatalf("get --json: %v", err)
	}
}

func TestGetDeleteCountCollections(t *testing.T) {
	dir := t.TempDir()
	store := filepath.Join(dir, "s")
	file := filepath.Join(dir, "c.jsonl")
	jsonl(t, file, 10, nil)
	mustCLI(t, 0, "index", "--store", store, file)
	mustCLI(t, 0, "index", "--store", store, "--collection", "other", file)

	out, _ := mustCLI(t, 0, "count", "--store", store)
	if strings.TrimSpace(out) != "10" {
		t.Fatalf("count %q", out)
	}
	out, _ = mustCLI(t, 0, "collections", "--store", store)
	if !regexp.MustCompile(`(?m)^default\s+10\s+en\s+-$`).MatchString(out) || !regexp.MustCompile(`(?m)^other\s+10\s+en\s+-$`).MatchString(out) {
		t.Fatalf("collections:\n%s", out)
	}
	// Rename: the collection answers under its new name, not the old one.
	before, _ := mustCLI(t, 0, "search", "--store", store, "--collection", "other", "--json", "otters")
	out, _ = mustCLI(t, 0, "collections", "--store", store, "--rename", "other", "renamed")
	if !strings.Contains(out, `renamed collection "other" to "renamed" (10 documents)`) {
		t.Fatalf("collections --rename: %s", out)
	}
	if after, _ := mustCLI(t, 0, "search", "--store", store, "--collection", "renamed", "--json", "otters"); strings.ReplaceAll(after, `"collection":"renamed"`, `"collection":"other"`) != before || !strings.Contains(before, `"d9"`) {
		t.Fatalf("search of the new name:\n%s\nbefore:\n%s", after, before)
	}
	if _, errs := mustCLI(t, 1, "search", "--store", store, "--collection", "other", "otters"); !strings.Contains(errs, "collection not found") {
		t.Fatalf("search of the old name: %s", errs)
	}
	if _, errs := mustCLI(t, 1, "collections", "--store", store, "--rename", "renamed", "--to", "default"); !strings.Contains(errs, "collection already exists") {
		t.Fatalf("rename onto an existing collection: %s", errs)
	}
	mustCLI(t, 2, "collections", "--store", store, "--rename", "renamed")                       // no new name
	mustCLI(t, 2, "collections", "--store", store, "--rename", "renamed", "a", "b")             // two new names
	mustCLI(t, 2, "collections", "--store", store, "--rename", "renamed", "x", "--delete", "y") // two things at once
	mustCLI(t, 0, "collections", "--store", store, "--rename", "renamed", "--to", "other")

	out, _ = mustCLI(t, 0, "get", "--store", store, "d3")
	if !strings.Contains(out, "title:  Doc 3") || !strings.Contains(out, "document number 3 about otters") || !strings.Contains(out, "meta:   n = 3") {
		t.Fatalf("get:\n%s", out)
	}
	out, errs := mustCLI(t, 1, "get", "--store", store, "d3", "nope")
	if !strings.Contains(out, "Doc 3") || !strings.Contains(errs, `"nope"`) {
		t.Fatalf("get missing: %s %s", out, errs)
	}

	out, _ = mustCLI(t, 0, "delete", "--store", store, "d0", "d1")
	if !strings.Contains(out, "deleted 2") {
		t.Fatalf("delete ids: %s", out)
	}
	out, _ = mustCLI(t, 0, "delete", "--store", store, "--where", `{"n": {"$gte": 8}}`)
	if !strings.Contains(out, "deleted 2") {
		t.Fatalf("delete where: %s", out)
	}
	out, _ = mustCLI(t, 0, "delete", "--store", store, "--collection", "other", "--source", file)
	if !strings.Contains(out, "deleted 10") {
		t.Fatalf("delete source: %s", out)
	}
	out, _ = mustCLI(t, 0, "count", "--store", store)
	if strings.TrimSpace(out) != "6" {
		t.Fatalf("count after deletes %q", out)
	}
	mustCLI(t, 2, "delete", "--store", store)                             // nothing to delete by
	mustCLI(t, 2, "delete", "--store", store, "--where", `{"n":1}`, "d5") // two ways at once

	out, _ = mustCLI(t, 0, "collections", "--store", store, "--delete", "other")
	if !strings.Contains(out, `deleted collection "other"`) {
		t.Fatalf("collections --delete: %s", out)
	}
	out, _ = mustCLI(t, 0, "collections", "--store", store, "--json")
	if strings.TrimSpace(out) != `{"name":"default","count":6,"analyzer":"en","metadata":{}}` {
		t.Fatalf("collections --json: %s", out)
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		out, _ := mustCLI(t, 0, args...)
		first, _, _ := strings.Cut(out, "\n")
		if first != "memory       "+memory.Version {
			t.Errorf("%s: first line %q, want memory.Version %q", args[0], first, memory.Version)
		}
		for _, want := range []string{"go", "onnxruntime  1.30.0"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s lacks %q:\n%s", args[0], want, out)
			}
		}
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(memory.Version) {
		t.Errorf("memory.Version %q is not MAJOR.MINOR.PATCH", memory.Version)
	}
}

func TestLoadEmbedderHash(t *testing.T) {
	for _, tc := range []struct {
		name string
		dim  int
		ok   bool
	}{{"hash", 256, true}, {"hash:48", 48, true}, {"hash:0", 0, false}, {"hash:abc", 0, false}} {
		e, err := loadEmbedder(tc.name)
		if (err == nil) != tc.ok || (tc.ok && e.Dim() != tc.dim) {
			t.Errorf("%s: %v %v", tc.name, e, err)
		}
	}
}

// fakeEmbedder is an embedder of a model the CLI cannot find.
type fakeEmbedder struct {
	id  string
	dim int
}

func (f fakeEmbedder) ID() string { return f.id }
func (f fakeEmbedder) Dim() int   { return f.dim }
func (f fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = make([]float32, f.dim)
		out[i][i%f.dim] = 1
	}
	return out, nil
}

// tinyBEIR writes a two-document BEIR folder in dir/beir whose one query ("sleeping
// otters") has document "1" as its answer, and returns the folder.
func tinyBEIR(t *testing.T, dir string) string {
	t.Helper()
	beirDir := filepath.Join(dir, "beir")
	writeFile(t, filepath.Join(beirDir, "corpus.jsonl"),
		`{"_id":"1","title":"Otters","text":"Sea otters hold hands while sleeping."}`+"\n"+
			`{"_id":"2","title":"Walrus","text":"Walruses use their tusks to haul out."}`+"\n")
	writeFile(t, filepath.Join(beirDir, "queries.jsonl"), `{"_id":"q1","text":"sleeping otters"}`+"\n")
	writeFile(t, filepath.Join(beirDir, "qrels", "test.tsv"), "query-id\tcorpus-id\tscore\nq1\t1\t1\n")
	return beirDir
}

func TestEvalStoreAndKeep(t *testing.T) {
	dir := t.TempDir()
	beirDir := tinyBEIR(t, dir)
	out, _ := mustCLI(t, 0, "eval", "--data", beirDir)
	if !strings.Contains(out, "nDCG@10      1.0000") {
		t.Fatalf("eval:\n%s", out)
	}
	kept := filepath.Join(dir, "kept")
	mustCLI(t, 0, "eval", "--data", beirDir, "--keep", kept)
	out, _ = mustCLI(t, 0, "eval", "--data", beirDir, "--store", kept)
	if !strings.Contains(out, "nDCG@10      1.0000") {
		t.Fatalf("eval --store:\n%s", out)
	}
	out, _ = mustCLI(t, 0, "count", "--store", kept)
	if strings.TrimSpace(out) != "2" {
		t.Fatalf("kept store holds %q", out)
	}
	mustCLI(t, 2, "eval", "--data", beirDir, "--keep", kept, "--store", kept)
}

func FuzzReadLines(f *testing.F) {
	f.Add("a\nb\n")
	f.Add("\n\n{}\nlast")
	f.Fuzz(func(t *testing.T, in string) {
		in = strings.ReplaceAll(in, "\r", "")
		var lines []string
		next := 1
		err := readLines(strings.NewReader(in), func(n int, line []byte, tooLong bool) error {
			if n != next || tooLong {
				t.Fatalf("line %d (want %d) tooLong %v", n, next, tooLong)
			}
			next++
			lines = append(lines, string(line))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(lines, "\n"); got != strings.TrimSuffix(in, "\n") {
			t.Fatalf("lines %q do not rebuild %q", lines, in)
		}
	})
}

func FuzzJSONLDocument(f *testing.F) {
	f.Add(`{"id": 7, "contents": "\"T\"\nbody"}`)
	f.Add(`{"_id": "x", "title": "t", "text": "y", "metadata": {"a": [1]}}`)
	f.Fuzz(func(t *testing.T, line string) {
		var j jsonlDoc
		if err := json.Unmarshal([]byte(line), &j); err != nil {
			return
		}
		d := j.document()
		if j.ID != "" && d.ID != string(j.ID) {
			t.Fatalf("id %q lost: %q", j.ID, d.ID)
		}
	})
}
