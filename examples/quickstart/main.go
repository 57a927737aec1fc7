// Quickstart: build an on-disk store from a small bundled corpus, close it, reopen it, search
// it three ways, and print each result with its score breakdown. Runs with no model files:
// dense recall uses the model-free hashing embedder (see vectorstore.NewHashEmbedder); swap in
// an ONNX or Model2Vec embedder for semantic recall.
//
//	go run ./examples/quickstart [STORE_DIR]   (default: a temporary directory, removed after)
package main

import (
	"context"
	"embed"
	"fmt"
	"log"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

//go:embed corpus/*.md
var corpus embed.FS

func main() {
	dir := ""
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	if err := run(context.Background(), dir); err != nil {
		log.Fatal(err)
	}
}

// run builds the store in dir (a temporary directory when empty), reopens it and searches it.
func run(ctx context.Context, dir string) (err error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "memory-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = filepath.Join(tmp, "store")
	}
	emb := vectorstore.NewHashEmbedder(256)
	m, err := memory.Open(dir, memory.WithEmbedder(emb))
	if err != nil {
		return err
	}
	docs, err := loadCorpus()
	if err != nil {
		m.Close()
		return err
	}
	if err := m.Upsert(ctx, docs...); err != nil {
		m.Close()
		return err
	}
	n, err := m.Count(ctx)
	if err != nil {
		m.Close()
		return err
	}
	fmt.Printf("indexed %d documents into %s\n", n, dir)
	// The store is a directory: close it and open it again, as the next run of an agent would.
	if err := m.Close(); err != nil {
		return err
	}
	if m, err = memory.Open(dir, memory.WithEmbedder(emb)); err != nil {
		return err
	}
	defer func() {
		if cerr := m.Close(); err == nil {
			err = cerr
		}
	}()
	if n, err = m.Count(ctx); err != nil {
		return err
	}
	fmt.Printf("reopened: %d documents, embedder %s\n", n, emb.ID())

	for _, q := range []struct {
		label, query string
		opts         []memory.SearchOption
	}{
		{"hybrid (BM25 + dense, RRF k=60)", "how does rank fusion combine keyword and vector search", []memory.SearchOption{memory.TopK(3)}},
		{"bm25 only", "garbage collector pause", []memory.SearchOption{memory.WithMode(memory.BM25), memory.TopK(3)}},
		{"hybrid, filtered to topic=systems", "crash safe writes", []memory.SearchOption{memory.TopK(3),
			memory.WithWhere(memory.Where{"topic": "systems"})}},
	} {
		if err := show(ctx, m, q.label, q.query, q.opts...); err != nil {
			return err
		}
	}
	return nil
}

// loadCorpus reads the bundled Markdown files: the first line is the title, the file name
// the id, and a topic goes into the metadata.
func loadCorpus() ([]memory.Document, error) {
	entries, err := corpus.ReadDir("corpus")
	if err != nil {
		return nil, err
	}
	var docs []memory.Document
	for _, e := range entries {
		b, err := corpus.ReadFile(path.Join("corpus", e.Name()))
		if err != nil {
			return nil, err
		}
		title, text, _ := strings.Cut(string(b), "\n")
		topic := "search"
		if strings.Contains(e.Name(), "garbage") || strings.Contains(e.Name(), "bbolt") {
			topic = "systems"
		}
		docs = append(docs, memory.Document{
			ID:       strings.TrimSuffix(e.Name(), ".md"),
			Title:    strings.TrimPrefix(title, "# "),
			Text:     strings.TrimSpace(text),
			Metadata: map[string]any{"topic": topic},
		})
	}
	return docs, nil
}

// show searches m and prints each result with its BM25 and dense ranks and scores.
func show(ctx context.Context, m *memory.Memory, label, query string, opts ...memory.SearchOption) error {
	res, err := m.Search(ctx, query, opts...)
	if err != nil {
		return err
	}
	fmt.Printf("\n%s: %q\n", label, query)
	tw := tabwriter.NewWriter(os.Stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tid\tscore\tbm25 (rank, score)\tdense (rank, cosine)")
	for i, r := range res {
		bm, de := "-", "-"
		if s := r.Explain.BM25; s != nil {
			bm = fmt.Sprintf("#%d  %.3f", s.Rank, s.Score)
		}
		if s := r.Explain.Dense; s != nil {
			de = fmt.Sprintf("#%d  %.3f", s.Rank, s.Score)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%.4f\t%s\t%s\n", i+1, r.ID, r.Score, bm, de)
	}
	return tw.Flush()
}
