package chunker

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenBudget is small so that the test files exercise splitting and merging.
const goldenBudget = 400

func TestGolden(t *testing.T) {
	if !treeSitterAvailable {
		t.Skip("built without cgo: no tree-sitter")
	}
	files, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Fatalf("found %d test files, want one per language", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := Code(filepath.Base(f), src, CodeOptions{Budget: goldenBudget})
			if err != nil {
				t.Fatal(err)
			}
			checkLossless(t, f, src, chunks)
			for i := range chunks {
				chunks[i].Content = ""
			}
			got, err := json.MarshalIndent(chunks, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join("testdata", "golden", filepath.Base(f)+".json"), got, "TestGolden")
		})
	}
}

// TestGoldenShape checks facts about the golden files that must hold whatever the exact
// boundaries: every language yields named definitions with qualified names and docs.
func TestGoldenShape(t *testing.T) {
	if !treeSitterAvailable {
		t.Skip("built without cgo: no tree-sitter")
	}
	tests := []struct {
		file, kind, qname, doc string
	}{
		{"ratelimit.go", KindMethod, "Bucket.Allow", "Allow reports whether one event may happen now"},
		{"ratelimit.go", KindStruct, "Bucket", "Bucket is a token bucket."},
		{"ratelimit.go", KindInterface, "Clock", "Clock abstracts time for tests."},
		{"inventory.py", KindMethod, "Inventory.reserve", "Reserve units for an order."},
		{"inventory.py", KindClass, "OutOfStock", "Raised when a reservation exceeds"},
		{"router.js", KindMethod, "Router.use", "Register middleware run before every handler."},
		{"router.js", KindFunction, "logger", ""},
		{"cache.ts", KindInterface, "CacheOptions", "Options for an LRU cache."},
		{"cache.ts", KindMethod, "LRUCache.set", "Stores a value"},
		{"cache.ts", KindFunction, "memoize", "Memoizes an async function"},
		{"TodoList.tsx", KindFunction, "TodoItem", "Renders one todo with a checkbox."},
		{"OrderService.java", KindMethod, "OrderService.cancel", "Cancels an order that has not shipped yet."},
		{"lexer.rs", KindMethod, "Lexer.number", "Reads a number starting with `first`."},
		{"lexer.rs", KindEnum, "Token", "A token of the expression language."},
		{"ringbuf.c", KindFunction, "rb_read", "Reads up to n bytes into dst"},
		{"ringbuf.c", KindStruct, "ringbuf", ""},
		{"matrix.cpp", KindMethod, "linalg.Matrix.identity", "Returns the identity matrix of size n."},
		{"matrix.cpp", KindFunction, "linalg.transpose", "Transposes a matrix."},
		{"AccountController.cs", KindMethod, "Bank.Api.Controllers.AccountController.GetBalance", "Returns the balance of an account."},
		{"shipping.rb", KindMethod, "Shipping.Quoter.cheapest", "Returns the cheapest quote"},
	}
	for _, tt := range tests {
		t.Run(tt.file+"/"+tt.qname, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			chunks, err := Code(tt.file, src, CodeOptions{Budget: goldenBudget, NoMergeDefinitions: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range chunks {
				if c.QualifiedName != tt.qname {
					continue
				}
				if c.Kind != tt.kind {
					t.Errorf("kind %q, want %q", c.Kind, tt.kind)
				}
				if !strings.HasPrefix(c.Doc, tt.doc) {
					t.Errorf("doc %q, want prefix %q", c.Doc, tt.doc)
				}
				if tt.doc != "" && !strings.Contains(c.Content, strings.Fields(tt.doc)[0]) {
					t.Errorf("the doc comment is not in the chunk:\n%s", c.Content)
				}
				return
			}
			t.Errorf("no chunk named %q", tt.qname)
		})
	}
}

func TestBudgetAndMerge(t *testing.T) {
	src, err := os.ReadFile("testdata/ratelimit.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{20, 50, 100, 400, 1500, 100000} {
		chunks, err := Code("ratelimit.go", src, CodeOptions{Budget: budget})
		if err != nil {
			t.Fatal(err)
		}
		checkLossless(t, "ratelimit.go", src, chunks)
		for _, c := range chunks {
			if c.Size > budget && strings.Count(strings.TrimSpace(c.Content), "\n") > 0 {
				t.Errorf("budget %d: chunk of %d characters over %d lines", budget, c.Size, c.EndLine-c.StartLine+1)
			}
		}
		if budget == 100000 && treeSitterAvailable {
			// everything fits: one chunk (cAST), unless definitions are kept apart
			if len(chunks) != 1 {
				t.Errorf("budget %d: %d chunks, want 1", budget, len(chunks))
			}
			apart, err := Code("ratelimit.go", src, CodeOptions{Budget: budget, NoMergeDefinitions: true})
			if err != nil {
				t.Fatal(err)
			}
			checkLossless(t, "ratelimit.go", src, apart)
			if len(apart) < 12 {
				t.Errorf("NoMergeDefinitions: %d chunks, want one per definition", len(apart))
			}
		}
		if budget == 400 && treeSitterAvailable {
			// merged chunks list the definitions they hold
			found := false
			for _, c := range chunks {
				if len(c.Defs) > 1 {
					found = true
					if c.QualifiedName != c.Defs[0] && c.Part == 0 {
						t.Errorf("chunk named %q, first definition %q", c.QualifiedName, c.Defs[0])
					}
					if !strings.Contains(c.EmbeddingText(), "# defines: "+strings.Join(c.Defs, ", ")) {
						t.Errorf("EmbeddingText lacks the definitions:\n%s", c.EmbeddingText())
					}
				}
			}
			if !found {
				t.Error("no chunk holds several definitions")
			}
		}
		if budget == 20 && len(chunks) < 40 {
			t.Errorf("budget 20: only %d chunks", len(chunks))
		}
	}
}

func TestDropWhitespaceGaps(t *testing.T) {
	src := []byte("package p\n\n\nfunc A() {}\n\n\n\nfunc B() {}\n\n")
	chunks, err := Code("p.go", src, CodeOptions{DropWhitespaceGaps: true, NoMergeDefinitions: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if strings.TrimSpace(c.Content) != c.Content || c.Content == "" {
			t.Errorf("chunk %q has whitespace at its edges", c.Content)
		}
		if c.Content != string(src[c.StartByte:c.EndByte]) {
			t.Errorf("offsets do not match content %q", c.Content)
		}
	}
	if treeSitterAvailable && len(chunks) != 3 {
		t.Errorf("got %d chunks, want 3", len(chunks))
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name string
		src  []byte
		opts CodeOptions
		want error
	}{
		{"binary", []byte("ELF\x00\x01\x02"), CodeOptions{}, ErrBinary},
		{"invalid utf8", []byte("func f() { \xff\xfe }"), CodeOptions{}, ErrInvalidUTF8},
		{"unknown language", []byte("x"), CodeOptions{Language: "cobol"}, ErrUnknownLanguage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Code("a.go", tt.src, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestFallback(t *testing.T) {
	para := strings.Repeat("some words here\n", 10)
	src := []byte(para + "\n" + para + "\n" + para)
	tests := []struct {
		name, path string
		src        []byte
		opts       CodeOptions
	}{
		{"unknown extension", "notes.xyz", src, CodeOptions{Budget: 300}},
		{"no tree-sitter", "a.go", src, CodeOptions{Budget: 300, NoTreeSitter: true}},
		{"syntax errors at the root", "a.go", []byte("}}}} func ((( {{\n" + para), CodeOptions{Budget: 300}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := Code(tt.path, tt.src, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			checkLossless(t, tt.path, tt.src, chunks)
			for _, c := range chunks {
				if c.Kind != KindLines {
					t.Errorf("kind %q, want %q", c.Kind, KindLines)
				}
				if c.Size > 300 {
					t.Errorf("chunk of %d characters over budget", c.Size)
				}
			}
		})
	}
	// Paragraph breaks are preferred: with a budget of two paragraphs, no chunk starts
	// in the middle of a paragraph.
	chunks, _ := Code("notes.xyz", src, CodeOptions{Budget: 300})
	for _, c := range chunks {
		if c.StartByte > 0 && src[c.StartByte-1] != '\n' {
			t.Errorf("chunk starts mid-line at %d", c.StartByte)
		}
		if c.StartByte > 0 && !bytes.HasPrefix(src[c.StartByte:], []byte("some")) && !bytes.HasPrefix(src[c.StartByte:], []byte("\n")) {
			t.Errorf("chunk starts at %q", src[c.StartByte:c.StartByte+10])
		}
	}
}

func TestLongLine(t *testing.T) {
	line := strings.Repeat("x", 1000) + "é" + strings.Repeat("y", 1000) + "\n"
	src := []byte("a\n" + line + "b\n")
	chunks, err := Code("a.txt", src, CodeOptions{Budget: 300})
	if err != nil {
		t.Fatal(err)
	}
	checkLossless(t, "a.txt", src, chunks)
	for _, c := range chunks {
		if c.Size > 300 {
			t.Errorf("chunk of %d characters", c.Size)
		}
	}
}

func TestEmbeddingText(t *testing.T) {
	if !treeSitterAvailable {
		t.Skip("built without cgo: no tree-sitter")
	}
	src, _ := os.ReadFile("testdata/inventory.py")
	chunks, err := Code("shop/inventory.py", src, CodeOptions{Budget: goldenBudget, NoMergeDefinitions: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chunks {
		if c.QualifiedName != "Inventory.reserve" {
			continue
		}
		got := c.EmbeddingText()
		want := "# shop/inventory.py\n# method Inventory.reserve\n# in: class Inventory:\n# doc: Reserve units for an order.\n\ndef reserve("
		if !strings.HasPrefix(got, want) {
			t.Fatalf("EmbeddingText:\n%s\nwant prefix:\n%s", got, want)
		}
		return
	}
	t.Fatal("no Inventory.reserve chunk")
}

func TestLanguageOverride(t *testing.T) {
	if !treeSitterAvailable {
		t.Skip("built without cgo: no tree-sitter")
	}
	src := []byte("def f():\n    return 1\n")
	chunks, err := Code("script", src, CodeOptions{Language: "py"})
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) != 1 || chunks[0].Language != "python" || chunks[0].Kind != KindFunction || chunks[0].Name != "f" {
		t.Fatalf("got %+v", chunks)
	}
}

func TestConcurrentCode(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.*")
	want := map[string][]Chunk{}
	for _, f := range files {
		src, _ := os.ReadFile(f)
		want[f], _ = Code(f, src, CodeOptions{Budget: 300})
	}
	done := make(chan error)
	for w := 0; w < 4; w++ {
		go func() {
			for i := 0; i < 3; i++ {
				for _, f := range files {
					src, _ := os.ReadFile(f)
					got, err := Code(f, src, CodeOptions{Budget: 300})
					if err != nil || len(got) != len(want[f]) {
						done <- fmt.Errorf("%s: %d chunks, want %d (err %v)", f, len(got), len(want[f]), err)
						return
					}
				}
			}
			done <- nil
		}()
	}
	for w := 0; w < 4; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
