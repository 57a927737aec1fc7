package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory"
)

// docsOf returns the documents of the default collection of a store the CLI wrote, by id
// (the store is closed again, for the CLI to write it next).
func docsOf(t *testing.T, store string) map[string]memory.Document {
	t.Helper()
	m, err := memory.OpenExisting(store)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := m.Collection("").Find(context.Background(), memory.FindOptions{})
	if cerr := m.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]memory.Document, len(docs))
	for _, d := range docs {
		out[d.ID] = d
	}
	return out
}

// copyFixture copies a file of another package's testdata to dst.
func copyFixture(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, string(b))
}

// skipLine is the "skipped ..." summary line of stderr ("" when there is none).
func skipLine(stderr string) string {
	return regexp.MustCompile(`(?m)^skipped .*$`).FindString(stderr)
}

// TestIndexSkipReport: index reports every file and folder it does not read at the end of
// the run, grouped by type and reason, most first, and with -v (or --verbose) each one
// (issue #42 point 6: two .go files and a PDF were skipped without a word).
func TestIndexSkipReport(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	writeFile(t, filepath.Join(docs, "a.md"), "# Otters\nOtters hold hands while they sleep.\n")
	writeFile(t, filepath.Join(docs, "b.txt"), "Kelp\nKelp forests shelter otters.\n")
	writeFile(t, filepath.Join(docs, ".notes.md"), "Hidden notes\nA hidden .md file is read, as before.\n")
	writeFile(t, filepath.Join(docs, "data.bin"), "\x00\x01\x02binary")
	writeFile(t, filepath.Join(docs, "blob.bin"), "\xff\xfe\x00\x00")
	writeFile(t, filepath.Join(docs, "notes.xyz"), "plain text of an unknown type\n")
	writeFile(t, filepath.Join(docs, "Makefile"), "all:\n\techo hi\n")
	writeFile(t, filepath.Join(docs, ".git", "config"), "[core]\n")
	writeFile(t, filepath.Join(docs, ".hidden", "x.md"), "Inside\na hidden folder\n")
	writeFile(t, filepath.Join(docs, ".eslintrc.js"), "module.exports = {};\n")
	writeFile(t, filepath.Join(docs, "vendor", "dep", "dep.go"), "package dep\n\nfunc Dep() {}\n")
	writeFile(t, filepath.Join(docs, "gen.go"), "package gen\n\n// "+strings.Repeat("x", maxCodeFileBytes)+"\n")
	writeFile(t, filepath.Join(docs, "script.html"), "<html><script>only()</script></html>")
	writeFile(t, filepath.Join(docs, "fake.pdf"), "this is not a PDF")
	copyFixture(t, "../../textextract/testdata/encrypted.pdf", filepath.Join(docs, "locked.pdf"))
	if err := os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(docs, "dangling.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "other"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "other"), filepath.Join(docs, "linked")); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(docs, "store") // inside the folder indexed: not walked into

	// The store exists from the second run on.
	summary := func(first bool) string {
		folders, store := "4 folders", ", 1 folder (the store itself)"
		if first {
			folders, store = "3 folders", ""
		}
		return "skipped 11 files and " + folders + ": 2 .bin (binary), 2 folder (hidden), " +
			"1 .go (code under vendor/ or node_modules/), 1 .go (over 1 MiB), 1 .html (no text), 1 .js (hidden), " +
			"1 .md (broken symlink), 1 .pdf (damaged or not of its type), 1 .pdf (encrypted), " +
			"1 .xyz (unknown type), 1 folder (symlink to a folder, not followed)" + store + ", 1 no extension (unknown type)"
	}
	tests := []struct {
		name    string
		args    []string
		verbose bool
	}{
		{"summary", nil, false},
		{"-v lists each", []string{"-v"}, true},
		{"--verbose lists each", []string{"--verbose"}, true},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs := mustCLI(t, 0, append([]string{"index", "--store", store, docs}, tt.args...)...)
			if !strings.Contains(out, "stored 3 documents from 6 files") {
				t.Errorf("stdout: %s", out)
			}
			want := summary(i == 0)
			if !tt.verbose {
				want += " (-v lists them)"
			}
			if got := skipLine(errs); got != want {
				t.Errorf("summary\n got %q\nwant %q\nstderr:\n%s", got, want, errs)
			}
			lines := []string{
				"  skipped " + filepath.Join(docs, "data.bin") + ": binary",
				"  skipped " + filepath.Join(docs, ".git") + "/: hidden",
				"  skipped " + filepath.Join(docs, "linked") + "/: symlink to a folder, not followed",
				"  skipped " + filepath.Join(docs, "gen.go") + ": over 1 MiB: ",
				"  skipped " + filepath.Join(docs, "locked.pdf") + ": encrypted: the PDF needs a password",
				"  skipped " + filepath.Join(docs, "dangling.md") + ": broken symlink: ",
			}
			for _, l := range lines {
				if strings.Contains(errs, l) != tt.verbose {
					t.Errorf("stderr has %q: %v, want %v", l, !tt.verbose, tt.verbose)
				}
			}
			// The files read but not stored are named as they are met, as before.
			for _, l := range []string{"skip " + filepath.Join(docs, "fake.pdf") + ": damaged", "skip " + filepath.Join(docs, "script.html") + ": no text"} {
				if !strings.Contains(errs, l) {
					t.Errorf("stderr lacks %q:\n%s", l, errs)
				}
			}
		})
	}
	got := slices.Sorted(maps.Keys(docsOf(t, store)))
	want := []string{filepath.Join(docs, ".notes.md"), filepath.Join(docs, "a.md"), filepath.Join(docs, "b.txt")}
	if !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

// TestIndexSkipReportStrict: --strict fails on the documents skipped (a file read but not
// stored), not on the files the walk leaves out (a hidden folder, a binary file).
func TestIndexSkipReportStrict(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  int
	}{
		{"files left out by the walk", map[string]string{"a.md": "A\ntext", "x.bin": "\x00", ".git/HEAD": "ref"}, 0},
		{"a file read and not stored", map[string]string{"a.md": "A\ntext", "bad.pdf": "not a pdf"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tt.files {
				writeFile(t, filepath.Join(dir, "in", name), content)
			}
			_, errs := mustCLI(t, tt.want, "index", "--strict", "--store", filepath.Join(dir, "s"), filepath.Join(dir, "in"))
			if skipLine(errs) == "" {
				t.Errorf("no summary:\n%s", errs)
			}
		})
	}
}

// TestIndexNothingToIndex: a folder with nothing index reads fails, naming what it skipped.
func TestIndexNothingToIndex(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "in", "photo.jpg"), "\xff\xd8\xff\xe0\x00\x10JFIF")
	_, errs := mustCLI(t, 1, "index", "--store", filepath.Join(dir, "s"), filepath.Join(dir, "in"))
	for _, want := range []string{"skipped 1 file: 1 .jpg (binary)", "no file to index under"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

const autoCodeGo = `package geo

// Point is a place on a plane.
type Point struct{ X, Y float64 }

// Dist is the distance between two points.
func Dist(a, b Point) float64 {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx*dx + dy*dy
}
`

// TestIndexAutoCode: code files among the paths are chunked with tree-sitter without
// --code, a document per chunk as --code makes; --auto-code=false skips them and says so;
// --code DIR keeps its behaviour (ids relative to DIR, the PATH arguments not read).
func TestIndexAutoCode(t *testing.T) {
	tests := []struct {
		name      string
		flags     []string
		codeIDs   string // the ids of the chunks of geo.go start so ("": none stored)
		wantOut   string
		wantSkips string
	}{
		{"auto", nil, "SRC/geo.go#L", "stored", ""},
		{"auto on, said", []string{"--auto-code=true"}, "SRC/geo.go#L", "stored", ""},
		{"auto off", []string{"--auto-code=false"}, "", "stored 1 documents from 1 files", "skipped 2 files: 1 .go (code, --auto-code=false), 1 .py (code, --auto-code=false)"},
		{"--code DIR", []string{"--code", "SRC"}, "geo.go#L", "indexed 3 files", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			writeFile(t, filepath.Join(src, "geo.go"), autoCodeGo)
			writeFile(t, filepath.Join(src, "util.py"), "def twice(x):\n    \"\"\"Twice x.\"\"\"\n    return 2 * x\n")
			writeFile(t, filepath.Join(src, "README.md"), "Geo\nA small geometry package.\n")
			store := filepath.Join(dir, "s")
			args := []string{"index", "--store", store}
			for _, f := range tt.flags {
				args = append(args, strings.ReplaceAll(f, "SRC", src))
			}
			if !slices.Contains(tt.flags, "--code") {
				args = append(args, src)
			}
			out, errs := mustCLI(t, 0, args...)
			if !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout lacks %q:\n%s", tt.wantOut, out)
			}
			if got := skipLine(errs); !strings.HasPrefix(got, tt.wantSkips) || (tt.wantSkips == "") != (got == "") {
				t.Errorf("summary %q, want %q", got, tt.wantSkips)
			}
			prefix := strings.ReplaceAll(tt.codeIDs, "SRC", src)
			var code []memory.Document
			for id, d := range docsOf(t, store) {
				if prefix != "" && strings.HasPrefix(id, prefix) {
					code = append(code, d)
				}
			}
			if prefix == "" {
				return
			}
			if len(code) == 0 {
				t.Fatalf("no document id starts with %q", prefix)
			}
			text := ""
			for _, d := range code {
				if d.Metadata["language"] != "go" || d.Metadata["kind"] == nil || d.Metadata["start_line"] == nil {
					t.Errorf("%s: metadata %v", d.ID, d.Metadata)
				}
				text += d.Text
			}
			if !strings.Contains(text, "func Dist(a, b Point) float64") {
				t.Errorf("the chunks lack the code: %q", text)
			}
		})
	}
}

// TestIndexAutoCodeReindex: re-indexing a changed code file replaces its chunks: the
// chunks whose lines moved are removed, as for any re-indexed source.
func TestIndexAutoCodeReindex(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	file := filepath.Join(src, "geo.go")
	store := filepath.Join(dir, "s")
	writeFile(t, file, autoCodeGo)
	mustCLI(t, 0, "index", "--store", store, src)
	before := docsOf(t, store)
	writeFile(t, file, "package geo\n\n// Added moves every line down.\nconst Added = 1\n\n"+autoCodeGo)
	mustCLI(t, 0, "index", "--store", store, src)
	after := docsOf(t, store)
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("%d documents, then %d", len(before), len(after))
	}
	text := ""
	for id, d := range after {
		if _, kept := before[id]; kept && d.Text == before[id].Text && strings.Contains(d.Text, "Dist") {
			t.Errorf("%s: a stale chunk stayed", id)
		}
		text += d.Text
	}
	if !strings.Contains(text, "const Added = 1") || strings.Count(text, "func Dist(") != 1 {
		t.Errorf("chunks after the change: %q", text)
	}
}

// TestIndexHTMLAndPDF: HTML files are stored as their title and visible text, PDF files as
// a document per page with text, with the page in the id and the metadata.
func TestIndexHTMLAndPDF(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	copyFixture(t, "../../textextract/testdata/sample.html", filepath.Join(in, "otters.html"))
	copyFixture(t, "../../textextract/testdata/sample.pdf", filepath.Join(in, "coast.pdf"))
	writeFile(t, filepath.Join(in, "untitled.htm"), "<p>A page without a title about herons.</p>")
	store := filepath.Join(dir, "s")
	out, _ := mustCLI(t, 0, "index", "--store", store, in)
	if !strings.Contains(out, "stored 4 documents from 3 files") {
		t.Errorf("stdout: %s", out)
	}
	docs := docsOf(t, store)
	tests := []struct {
		id, title, text string
		notText         string
		meta            map[string]any
	}{
		{filepath.Join(in, "otters.html"), "River Otters & Their Dens", "River otters build dens in the banks of streams", "tracking",
			map[string]any{"format": "html"}},
		{filepath.Join(in, "untitled.htm"), "untitled", "A page without a title about herons.", "",
			map[string]any{"format": "html"}},
		{filepath.Join(in, "coast.pdf") + "#page=1", "Otters of the Northern Coast", "Sea otters float on their backs", "census",
			map[string]any{"format": "pdf", "page": 1.0, "pages": 2.0}},
		{filepath.Join(in, "coast.pdf") + "#page=2", "Otters of the Northern Coast", "a census counted 3,000 otters", "Sea otters",
			map[string]any{"format": "pdf", "page": 2.0, "pages": 2.0}},
	}
	for _, tt := range tests {
		d, ok := docs[tt.id]
		if !ok {
			t.Errorf("no document %q (have %v)", tt.id, slices.Sorted(maps.Keys(docs)))
			continue
		}
		if d.Title != tt.title || !strings.Contains(d.Text, tt.text) || (tt.notText != "" && strings.Contains(d.Text, tt.notText)) {
			t.Errorf("%s: title %q, text %q", tt.id, d.Title, d.Text)
		}
		if !strings.HasSuffix(d.Source, "/"+filepath.Base(strings.Split(tt.id, "#")[0])) || !filepath.IsAbs(d.Source) {
			t.Errorf("%s: source %q", tt.id, d.Source)
		}
		for k, v := range tt.meta {
			if d.Metadata[k] != v {
				t.Errorf("%s: metadata %s = %v, want %v", tt.id, k, d.Metadata[k], v)
			}
		}
	}
}

func TestSkipReportWrite(t *testing.T) {
	type e = skippedEntry
	tests := []struct {
		name    string
		entries []e
		verbose bool
		want    string
	}{
		{"nothing", nil, false, ""},
		{"one file", []e{{path: "a/x.bin", reason: skipBinary}}, false, "skipped 1 file: 1 .bin (binary) (-v lists them)\n"},
		{"grouped, most first, then by type and reason", []e{
			{path: "x.xyz", reason: skipUnknown}, {path: "a.bin", reason: skipBinary}, {path: "b.BIN", reason: skipBinary},
			{path: ".git", dir: true, reason: skipHidden}, {path: "LICENSE", reason: skipUnknown}, {path: ".env", reason: skipUnknown},
		}, false, "skipped 5 files and 1 folder: 2 .bin (binary), 2 no extension (unknown type), 1 .xyz (unknown type), 1 folder (hidden) (-v lists them)\n"},
		{"verbose", []e{{path: "a.pdf", reason: skipEncrypted, detail: "needs a password"}, {path: "d", dir: true, reason: skipHidden}},
			true, "skipped 1 file and 1 folder: 1 .pdf (encrypted), 1 folder (hidden)\n  skipped a.pdf: encrypted: needs a password\n  skipped d/: hidden\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			r := skipReport{entries: tt.entries}
			r.write(&b, tt.verbose)
			if b.String() != tt.want {
				t.Errorf("got\n%q\nwant\n%q", b.String(), tt.want)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	tests := []struct {
		path string
		want fileKind
	}{
		{"a.txt", kindProse}, {"a.MD", kindProse}, {"a.jsonl", kindJSONL}, {"a.go", kindCode}, {"a.py", kindCode},
		{"a.tsx", kindCode}, {"a.html", kindHTML}, {"a.htm", kindHTML}, {"a.pdf", kindPDF}, {"a.bin", kindUnknown},
		{"Makefile", kindUnknown}, {"a.json", kindUnknown},
	}
	for _, tt := range tests {
		if got := kindOf(tt.path); got != tt.want {
			t.Errorf("kindOf(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
}
