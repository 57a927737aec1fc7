package memory

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/chunker"
)

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
			first := idsOf(t, m.Collection(""))
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
			got := idsOf(t, m.Collection(""))
			if !slices.Equal(got, want) {
				t.Fatalf("after re-indexing a changed file:\n got %q\nwant %q\n(first run: %q)", got, want, first)
			}
			if countOf(t, m) != len(want) {
				t.Fatalf("count %d, want %d", countOf(t, m), len(want))
			}
			if res := searchT(t, m, "Gamma", WithMode(BM25)); len(res) != 0 {
				t.Fatalf("a removed function is still found: %v", res)
			}
		})
	}
}
