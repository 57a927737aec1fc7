package memory

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"hash/fnv"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/memory/chunker"
	"github.com/agentmem/memory/internal/memtest"
)

func TestAddCode(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		".gitignore": "ignored.go\n",
		"geo/geo.go": `package geo

import "math"

// Haversine returns the great-circle distance in kilometres between two points.
func Haversine(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371
	dLat := (lat2 - lat1) * math.Pi / 180
	dLon := (lon2 - lon1) * math.Pi / 180
	a := math.Sin(dLat/2)*math.Sin(dLat/2) + math.Cos(lat1*math.Pi/180)*math.Cos(lat2*math.Pi/180)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * r * math.Asin(math.Sqrt(a))
}

// Point is a position on Earth.
type Point struct{ Lat, Lon float64 }
`,
		"py/tokenize.py": "def tokenize(text):\n    \"\"\"Split text into lowercase words.\"\"\"\n    return text.lower().split()\n",
		"ignored.go":     "package ignored\n\nfunc Haversine() {}\n",
	}
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	m, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var progress []CodeProgress
	sum, err := m.AddCode(ctx, root, CodeOptions{BatchSize: 2, Progress: func(p CodeProgress) { progress = append(progress, p) }})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != 2 || sum.Skipped[chunker.SkipIgnored] != 1 {
		t.Fatalf("summary %+v", sum)
	}
	if memtest.Count(t, m) != sum.Chunks || sum.Chunks != 2 {
		t.Fatalf("stored %d documents, summary says %d chunks", memtest.Count(t, m), sum.Chunks)
	}
	if len(progress) == 0 || progress[len(progress)-1].Chunks != sum.Chunks {
		t.Fatalf("progress %+v", progress)
	}
	doc, err := m.Get(ctx, "geo/geo.go#L1-L15")
	if err != nil {
		t.Fatalf("Haversine chunk: %v", err)
	}
	if doc.Title != "geo/geo.go Haversine" || doc.Metadata["kind"] != "function" || doc.Metadata["language"] != "go" ||
		doc.Metadata["start_line"] != float64(1) || doc.Metadata["path"] != "geo/geo.go" {
		t.Fatalf("document %+v", doc)
	}
	if !strings.HasPrefix(doc.Text, "# geo/geo.go\n# function Haversine\n# defines: Haversine, Point\n# doc: Haversine returns") {
		t.Fatalf("text:\n%s", doc.Text)
	}
	res, err := m.Search(ctx, "great-circle distance kilometres", WithMode(BM25), TopK(3))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) == 0 || res[0].ID != "geo/geo.go#L1-L15" {
		t.Fatalf("search results %+v", res)
	}
	res, err = m.Search(ctx, "lowercase words", WithMode(BM25), TopK(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Metadata["qualified_name"] != "tokenize" {
		t.Fatalf("search results %+v", res)
	}
	// Indexing again replaces: same ids, same count.
	n := memtest.Count(t, m)
	if _, err := m.Collection("").AddCode(ctx, root, CodeOptions{}); err != nil {
		t.Fatal(err)
	}
	if memtest.Count(t, m) != n {
		t.Fatalf("re-indexing changed the count from %d to %d", n, memtest.Count(t, m))
	}
	if _, err := m.AddCode(ctx, filepath.Join(root, "missing"), CodeOptions{}); err == nil {
		t.Fatal("missing root: no error")
	}
}

func TestCodeDocumentsUniqueIDs(t *testing.T) {
	// Two statements on one line that are split apart share their line span.
	src := []byte(strings.Repeat("x", 40) + "; " + strings.Repeat("y", 40) + "\n")
	chunks, err := chunker.Code("a.txt", src, chunker.CodeOptions{Budget: 30})
	if err != nil {
		t.Fatal(err)
	}
	docs := CodeDocuments("a.txt", chunks)
	seen := map[string]bool{}
	for _, d := range docs {
		if seen[d.ID] {
			t.Fatalf("duplicate id %q", d.ID)
		}
		seen[d.ID] = true
	}
	if len(docs) < 3 {
		t.Fatalf("%d documents", len(docs))
	}
}

// BenchmarkCodeSearch compares AST chunks with fixed line chunks for code search over the
// Go standard library (BENCHMARKS.md, "Code search: AST (cAST) chunks vs fixed line
// chunks", for the protocol): one sub-benchmark per variant, reporting its chunks and, per
// rule, R@5 and MRR@10 (run it with -benchtime 1x: minutes). MEMORY_CODESEARCH_N sets the
// number of queries, MEMORY_CODESEARCH_ONLY=substring keeps the matching variants.
func BenchmarkCodeSearch(b *testing.B) {
	n := 2000
	if v := os.Getenv("MEMORY_CODESEARCH_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	ctx := context.Background()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	root := filepath.Join(strings.TrimSpace(string(out)), "src")
	files, queries := codeSearchCorpus(b, root, n)
	b.Logf("corpus: %d files; %d queries", len(files), len(queries))

	type variant struct {
		name string
		docs func(path string, src []byte) []Document
	}
	astDocs := func(opts chunker.CodeOptions, header bool) func(string, []byte) []Document {
		return func(p string, src []byte) []Document {
			chunks, err := chunker.Code(p, src, opts)
			if err != nil {
				b.Fatal(err)
			}
			docs := CodeDocuments(p, chunks)
			if !header {
				for i, d := range docs {
					docs[i].Title = p
					_, body, _ := strings.Cut(d.Text, "\n\n")
					docs[i].Text = "# " + p + "\n\n" + body
				}
			}
			return docs
		}
	}
	variants := []variant{
		{"ast (cAST, budget 1500)", astDocs(chunker.CodeOptions{}, true)},
		{"ast (cAST, budget 1250)", astDocs(chunker.CodeOptions{Budget: 1250}, true)},
		{"ast, one definition per chunk", astDocs(chunker.CodeOptions{NoMergeDefinitions: true}, true)},
		{"ast 1500, code only (no header)", astDocs(chunker.CodeOptions{}, false)},
		{"fixed 40-line chunks", fixedLineDocs(40)},
		{"fixed 47-line chunks", fixedLineDocs(47)},
	}
	if v := os.Getenv("MEMORY_CODESEARCH_ONLY"); v != "" {
		var keep []variant
		for _, x := range variants {
			if strings.Contains(x.name, v) {
				keep = append(keep, x)
			}
		}
		variants = keep
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			for range b.N {
				codeSearchVariant(b, ctx, v.docs, files, queries)
			}
		})
	}
}

// codeSearchVariant indexes files chunked by docs in a fresh in-memory store, runs the
// queries and reports the chunk count and, per rule, R@5 and MRR@10.
func codeSearchVariant(b *testing.B, ctx context.Context, docs func(path string, src []byte) []Document, files []csFile, queries []csQuery) {
	m, err := Open("")
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	type span struct{ lo, hi int }
	spans := map[string]span{}
	ndocs := 0
	var batch []Document
	for _, f := range files {
		for _, d := range docs(f.path, f.src) {
			spans[d.ID] = span{int(d.Metadata["start_line"].(float64)), int(d.Metadata["end_line"].(float64))}
			batch = append(batch, d)
			ndocs++
		}
		if len(batch) >= 1024 {
			if err := m.Add(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := m.Add(ctx, batch...); err != nil {
		b.Fatal(err)
	}
	indexTime := time.Since(start)
	// Three rules for "the chunk holding the function": it overlaps the function's
	// lines (lenient: a function cut in two by fixed chunks has two chances), it holds
	// the declaration line ("func ..."), it holds the whole function.
	rules := []struct {
		name string
		ok   func(s span, q csQuery) bool
	}{
		{"overlap", func(s span, q csQuery) bool { return s.lo <= q.hi && s.hi >= q.lo }},
		{"decl-line", func(s span, q csQuery) bool { return s.lo <= q.lo && s.hi >= q.lo }},
		{"whole", func(s span, q csQuery) bool { return s.lo <= q.lo && s.hi >= q.hi }},
	}
	hit5 := make([]float64, len(rules))
	mrr := make([]float64, len(rules))
	start = time.Now()
	for _, q := range queries {
		res, err := m.Search(ctx, q.query, WithMode(BM25), TopK(10))
		if err != nil {
			b.Fatal(err)
		}
		for ri, rule := range rules {
			for rank, r := range res {
				if r.Metadata["path"] == q.path && rule.ok(spans[r.ID], q) {
					if rank < 5 {
						hit5[ri]++
					}
					mrr[ri] += 1 / float64(rank+1)
					break
				}
			}
		}
	}
	nq := float64(len(queries))
	b.ReportMetric(float64(ndocs), "chunks")
	for ri, rule := range rules {
		b.ReportMetric(hit5[ri]/nq, rule.name+"-R@5")
		b.ReportMetric(mrr[ri]/nq, rule.name+"-MRR@10")
	}
	b.ReportMetric(indexTime.Seconds(), "index-s")
	b.ReportMetric(time.Since(start).Seconds(), "query-s")
	m.Close()
}

type csFile struct {
	path string
	src  []byte
}

type csQuery struct {
	path, name, query string
	lo, hi            int // lines of the function (from "func" to its closing brace)
}

// codeSearchCorpus reads the Go files of the standard library (no tests, testdata, vendor or
// cmd), picks n documented functions deterministically, and blanks the doc comments of the
// picked functions (newlines kept, so line numbers do not move) in the returned sources.
func codeSearchCorpus(t testing.TB, root string, n int) ([]csFile, []csQuery) {
	var paths []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == "vendor" || rel == "cmd" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			paths = append(paths, rel)
		}
		return nil
	})
	sort.Strings(paths)
	type cand struct {
		q      csQuery
		file   int
		lo, hi int // byte range of the doc comment
		key    uint64
	}
	var cands []cand
	var files []csFile
	for _, rel := range paths {
		src, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		rel = filepath.ToSlash(rel)
		files = append(files, csFile{rel, src})
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
		if err != nil {
			continue
		}
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Doc == nil || fd.Body == nil {
				continue
			}
			q := firstSentence(fd.Doc.Text())
			if len(strings.Fields(q)) < 4 {
				continue
			}
			h := fnv.New64a()
			fmt.Fprintf(h, "%s:%s:%d", rel, fd.Name.Name, fset.Position(fd.Pos()).Line)
			cands = append(cands, cand{
				q: csQuery{path: rel, name: fd.Name.Name, query: q,
					lo: fset.Position(fd.Pos()).Line, hi: fset.Position(fd.End()).Line},
				file: len(files) - 1,
				lo:   fset.Position(fd.Doc.Pos()).Offset, hi: fset.Position(fd.Doc.End()).Offset,
				key: h.Sum64(),
			})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].key < cands[j].key })
	if len(cands) > n {
		cands = cands[:n]
	}
	var queries []csQuery
	for _, c := range cands {
		src := files[c.file].src
		for i := c.lo; i < c.hi; i++ {
			if src[i] != '\n' {
				src[i] = ' '
			}
		}
		queries = append(queries, c.q)
	}
	return files, queries
}

// firstSentence returns the first sentence of a doc comment on one line.
func firstSentence(doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	if i := strings.Index(doc, ". "); i >= 0 {
		doc = doc[:i+1]
	}
	return doc
}

// fixedLineDocs cuts files into chunks of n lines (the baseline), with the path as header.
func fixedLineDocs(n int) func(path string, src []byte) []Document {
	return func(path string, src []byte) []Document { return fixedLines(path, src, n) }
}

func fixedLines(path string, src []byte, n int) []Document {
	lines := strings.SplitAfter(string(src), "\n")
	var out []Document
	for i := 0; i < len(lines); i += n {
		j := min(i+n, len(lines))
		body := strings.Join(lines[i:j], "")
		if strings.TrimSpace(body) == "" {
			continue
		}
		out = append(out, Document{
			ID:    fmt.Sprintf("%s#L%d-L%d", path, i+1, j),
			Title: path,
			Text:  "# " + path + "\n\n" + strings.TrimSpace(body),
			Metadata: map[string]any{
				"path": path, "start_line": float64(i + 1), "end_line": float64(j),
			},
		})
	}
	return out
}

// TestAddCodeReplacesChangedFiles re-indexes a tree whose files changed: the chunk ids are
// line based, so a changed file's earlier chunks must go in the transaction that stores its
// new ones (issue 21: AddCode left them behind). Both paths are covered: files batched
// together, and a file with more chunks than a batch (a Replacement).
func TestAddCodeReplacesChangedFiles(t *testing.T) {
	funcs := func(names ...string) string {
		var b strings.Builder
		b.WriteString("package p\n")
		for _, n := range names {
			b.WriteString("\n// " + n + " does " + n + ".\nfunc " + n + "(x int) int {\n\treturn x + len(\"" + n + "\")\n}\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		name  string
		batch int
	}{
		{"batched", 256},
		{"streamed", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(p, content string) {
				full := filepath.Join(root, p)
				must(t, os.MkdirAll(filepath.Dir(full), 0o755))
				must(t, os.WriteFile(full, []byte(content), 0o644))
			}
			write("a/a.go", funcs("Alpha", "Beta", "Gamma", "Delta", "Epsilon"))
			write("b/b.go", funcs("Zeta", "Eta"))
			m := openT(t, "")
			opts := CodeOptions{BatchSize: tc.batch, Walk: chunker.WalkOptions{Code: chunker.CodeOptions{NoMergeDefinitions: true}}}
			if _, err := m.AddCode(bg, root, opts); err != nil {
				t.Fatal(err)
			}
			first := memtest.IDs(t, m.Collection(""))
			// a.go: a comment shifts every line, Gamma and Epsilon go; b.go is unchanged.
			write("a/a.go", "// Package p is edited.\n"+funcs("Alpha", "Beta", "Delta"))
			if _, err := m.AddCode(bg, root, opts); err != nil {
				t.Fatal(err)
			}
			var want []string
			_, err := chunker.Walk(bg, root, opts.Walk, func(path string, chunks []chunker.Chunk) error {
				for _, d := range CodeDocuments(path, chunks) {
					want = append(want, d.ID)
				}
				return nil
			})
			must(t, err)
			slices.Sort(want)
			got := memtest.IDs(t, m.Collection(""))
			if !slices.Equal(got, want) {
				t.Fatalf("after re-indexing a changed file:\n got %q\nwant %q\n(first run: %q)", got, want, first)
			}
			if memtest.Count(t, m) != len(want) {
				t.Fatalf("count %d, want %d", memtest.Count(t, m), len(want))
			}
			if res := searchT(t, m, "Gamma", WithMode(BM25)); len(res) != 0 {
				t.Fatalf("a removed function is still found: %v", res)
			}
		})
	}
}
