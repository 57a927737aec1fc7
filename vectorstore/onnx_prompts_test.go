//go:build cgo

package vectorstore

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmem/memory/internal/onnx/onnxtest"
	"github.com/agentmem/memory/models"
)

// tinyModelCopy copies the tiny encoder's folder (model included) to <tmp>/tiny-bert-encoder,
// keeping its name so IDs compare, and writes config_sentence_transformers.json when stConfig
// is not empty.
func tinyModelCopy(t *testing.T, stConfig string) string {
	t.Helper()
	_, src := loadEncoderGolden(t)
	dst := filepath.Join(t.TempDir(), "tiny-bert-encoder")
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		copyFile(t, path, filepath.Join(dst, rel))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stConfig != "" {
		if err := os.WriteFile(filepath.Join(dst, "config_sentence_transformers.json"), []byte(stConfig), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func newEmbedderAt(t *testing.T, dir string, opts ONNXOptions) *ONNXEmbedder {
	t.Helper()
	opts.LibraryPath = onnxtest.Library(t)
	opts.Threads = 1
	e, err := NewONNXEmbedder(context.Background(), dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func embedOne(t *testing.T, e *ONNXEmbedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func strPtr(s string) *string { return &s }

// TestONNXEmbedderPrompts checks the query and passage prefixes: read from
// config_sentence_transformers.json (E5, BGE and Nomic prompt names), overridden or turned
// off by the options, applied by Embed (passage) and EmbedQuery (query) exactly as if the
// text carried them, and recorded in the ID only when the passage prefix is not empty.
func TestONNXEmbedderPrompts(t *testing.T) {
	ctx := context.Background()
	const text = "how do I deploy a release"
	plain := newTinyEmbedder(t, ONNXOptions{})
	baseID := plain.ID()
	if plain.QueryPrefix() != "" || plain.PassagePrefix() != "" {
		t.Fatalf("fixture without prompts has prefixes %q / %q", plain.QueryPrefix(), plain.PassagePrefix())
	}
	q, err := plain.EmbedQuery(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q, embedOne(t, plain, text)) {
		t.Fatal("without prefixes EmbedQuery differs from Embed")
	}

	const bge = "Represent this sentence for searching relevant passages: "
	cases := []struct {
		name          string
		config        string
		opts          ONNXOptions
		query, pass   string
		idHasPassage  bool
		wantIDUnmoved bool
	}{
		{name: "e5", config: `{"prompts": {"query": "query: ", "passage": "passage: "}, "default_prompt_name": null}`,
			query: "query: ", pass: "passage: ", idHasPassage: true},
		{name: "bge query only", config: `{"prompts": {"query": "` + bge + `", "text": ""}}`,
			query: bge, pass: "", wantIDUnmoved: true},
		{name: "document wins over passage", config: `{"prompts": {"query": "q: ", "document": "d: ", "passage": "p: "}}`,
			query: "q: ", pass: "d: ", idHasPassage: true},
		{name: "nomic", config: `{"prompts": {"search_query": "search_query: ", "search_document": "search_document: ", "clustering": "clustering: "}}`,
			query: "search_query: ", pass: "search_document: ", idHasPassage: true},
		{name: "options override the folder", config: `{"prompts": {"query": "query: ", "passage": "passage: "}}`,
			opts: ONNXOptions{QueryPrefix: strPtr(""), PassagePrefix: strPtr("doc: ")}, query: "", pass: "doc: ", idHasPassage: true},
		{name: "options turn prompts off", config: `{"prompts": {"query": "query: ", "passage": "passage: "}}`,
			opts: ONNXOptions{QueryPrefix: strPtr(""), PassagePrefix: strPtr("")}, wantIDUnmoved: true},
		{name: "options without a config", opts: ONNXOptions{QueryPrefix: strPtr("query: ")}, query: "query: ", wantIDUnmoved: true},
		{name: "config without prompts", config: `{"__version__": {"sentence_transformers": "3.0.1"}}`, wantIDUnmoved: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEmbedderAt(t, tinyModelCopy(t, c.config), c.opts)
			if e.QueryPrefix() != c.query || e.PassagePrefix() != c.pass {
				t.Fatalf("prefixes %q / %q, want %q / %q", e.QueryPrefix(), e.PassagePrefix(), c.query, c.pass)
			}
			if c.wantIDUnmoved && e.ID() != baseID {
				t.Fatalf("ID %q, want the unprefixed %q (existing stores must still open)", e.ID(), baseID)
			}
			if c.idHasPassage {
				if e.ID() == baseID || !strings.HasPrefix(e.ID(), baseID) || !strings.Contains(e.ID(), c.pass) {
					t.Fatalf("ID %q does not record the passage prefix %q", e.ID(), c.pass)
				}
			}
			// Embed = the plain model on prefix+text; EmbedQuery likewise with the query prefix.
			if got, want := embedOne(t, e, text), embedOne(t, plain, c.pass+text); !slices.Equal(got, want) {
				t.Fatal("Embed is not the plain embedding of passage prefix + text")
			}
			got, err := e.EmbedQuery(ctx, text)
			if err != nil {
				t.Fatal(err)
			}
			if want := embedOne(t, plain, c.query+text); !slices.Equal(got, want) {
				t.Fatal("EmbedQuery is not the plain embedding of query prefix + text")
			}
			batch, err := e.EmbedQueries(ctx, []string{text, "a much longer second query so the batch is padded"})
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if d := math.Abs(float64(batch[0][i] - got[i])); d > goldenTol {
					t.Fatalf("EmbedQueries[0][%d] = %v, EmbedQuery %v", i, batch[0][i], got[i])
				}
			}
			if c.query != c.pass && slices.Equal(got, embedOne(t, e, text)) {
				t.Fatal("query and passage embeddings are equal although the prefixes differ")
			}
		})
	}

	// Two passage prefixes are two embedders.
	a := newEmbedderAt(t, tinyModelCopy(t, ""), ONNXOptions{PassagePrefix: strPtr("passage: ")})
	b := newEmbedderAt(t, tinyModelCopy(t, ""), ONNXOptions{PassagePrefix: strPtr("document: ")})
	if a.ID() == b.ID() {
		t.Fatalf("different passage prefixes share the ID %q", a.ID())
	}
}

func TestONNXEmbedderPromptsBadConfig(t *testing.T) {
	dir := tinyModelCopy(t, `{"prompts": {"query": 42}}`)
	_, err := NewONNXEmbedder(context.Background(), dir, ONNXOptions{LibraryPath: onnxtest.Library(t), Threads: 1})
	if !errors.Is(err, models.ErrBadModel) || !strings.Contains(err.Error(), "config_sentence_transformers.json") {
		t.Fatalf("error %v, want models.ErrBadModel naming the file", err)
	}
	// Both prefixes given: the file is not read, so a broken one does not matter.
	e := newEmbedderAt(t, dir, ONNXOptions{QueryPrefix: strPtr("q: "), PassagePrefix: strPtr("")})
	if e.QueryPrefix() != "q: " {
		t.Fatalf("query prefix %q", e.QueryPrefix())
	}
}
