package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/vectorstore"
)

func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // "" = a temporary store; pass a directory to keep it
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.Add(ctx,
		memory.Document{ID: "a", Title: "Go", Text: "Go has a concurrent garbage collector."},
		memory.Document{ID: "b", Title: "Rust", Text: "Rust manages memory without a garbage collector."},
		memory.Document{ID: "c", Title: "Bleve", Text: "Bleve is a full-text search library for Go."},
	)
	res, _ := m.Search(ctx, "full-text search in go", memory.WithMode(memory.BM25), memory.TopK(2))
	for _, r := range res {
		fmt.Printf("%s bm25 rank %d\n", r.ID, r.Explain.BM25.Rank)
	}
	// Output:
	// c bm25 rank 1
	// a bm25 rank 2
}

func Example_hybridWithFilter() {
	ctx := context.Background()
	m, err := memory.Open("", memory.WithEmbedder(vectorstore.NewHashEmbedder(64)))
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	m.Add(ctx,
		memory.Document{ID: "q1", Text: "reset your password from the account page", Metadata: map[string]any{"kind": "faq", "year": 2024}},
		memory.Document{ID: "q2", Text: "password reset emails can take five minutes", Metadata: map[string]any{"kind": "faq", "year": 2021}},
		memory.Document{ID: "d1", Text: "the account page lists your password settings", Metadata: map[string]any{"kind": "doc", "year": 2024}},
	)
	res, _ := m.Search(ctx, "how do I reset my password",
		memory.WithWhere(memory.Where{"kind": "faq", "year": map[string]any{"$gte": 2022}}))
	for _, r := range res {
		fmt.Printf("%s bm25=%v dense=%v\n", r.ID, r.Explain.BM25 != nil, r.Explain.Dense != nil)
	}
	// Output:
	// q1 bm25=true dense=true
}

func ExampleMemory_Collection() {
	ctx := context.Background()
	m, _ := memory.Open("")
	defer m.Close()
	m.Collection("qna").Add(ctx, memory.Document{ID: "1", Text: "Q: where are logs? A: in /var/log/app"})
	m.Collection("docs").Add(ctx, memory.Document{ID: "1", Text: "The app writes logs to /var/log/app by default."})
	res, _ := m.Search(ctx, "where are the app logs",
		memory.InCollections(map[string]float64{"qna": 2, "docs": 1}))
	for _, r := range res {
		fmt.Println(r.Collection, r.ID)
	}
	// Output:
	// qna 1
	// docs 1
}

// wordOverlap is a stand-in cross-encoder for the examples: it scores a passage by the
// query words it holds (a real one is rerank.NewCrossEncoder).
type wordOverlap struct{}

func (wordOverlap) Score(ctx context.Context, query string, passages []string) ([]float32, error) {
	out := make([]float32, len(passages))
	for i, p := range passages {
		for _, w := range strings.Fields(strings.ToLower(query)) {
			if strings.Contains(strings.ToLower(p), w) {
				out[i]++
			}
		}
	}
	return out, nil
}

// Example_readme is the README's first example, as written there (with a stand-in embedder
// and reranker).
func Example_readme() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "agent-memory-*")
	defer os.RemoveAll(dir)
	emb, rr := vectorstore.NewHashEmbedder(64), wordOverlap{}

	m, err := memory.Open(dir, memory.WithEmbedder(emb), memory.WithReranker(rr)) // emb: ONNX, Model2Vec or your own; rr: a cross-encoder
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	err = m.Add(ctx, memory.Document{ID: "1", Title: "Deploys", Text: "Deploy with make release.", Source: "docs/deploy.md",
		Metadata: map[string]any{"team": "infra", "year": 2024}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := m.Search(ctx, "how do I ship a release", memory.TopK(5),
		memory.WithWhere(memory.Where{"team": "infra", "year": map[string]any{"$gte": 2020}}), memory.WithRerank(50), memory.WithSnippets())
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range res {
		fmt.Println(r.ID, r.Source, r.Snippet, r.Explain.BM25 != nil, r.Explain.Dense != nil, r.Explain.Rerank != nil) // per-stage breakdown
	}
	// Output:
	// 1 docs/deploy.md Deploy with make release. true true true
}

// ExampleCollection_DeleteWhere re-indexes a source: the chunks of its old version go, the
// new version is added, and sources that disappeared are deleted.
func ExampleCollection_DeleteWhere() {
	ctx := context.Background()
	m, _ := memory.Open("")
	defer m.Close()
	docs, _ := m.CreateCollection("docs")
	docs.Add(ctx,
		memory.Document{ID: "a.md", Text: "old text of a", Source: "a.md"},
		memory.Document{ID: "b.md", Text: "text of b", Source: "b.md"})
	// a.md changed: replace everything that came from it.
	docs.DeleteWhere(ctx, memory.Where{"source": "a.md"})
	docs.Add(ctx, memory.Document{ID: "a.md", Text: "new text of a", Source: "a.md"})
	// b.md is gone from the folder.
	present := map[string]bool{"a.md": true}
	srcs, _ := docs.Sources(ctx)
	for _, s := range srcs {
		if !present[s] {
			n, _ := docs.DeleteWhere(ctx, memory.Where{"source": s})
			fmt.Println("deleted", s, n)
		}
	}
	fmt.Println(docs.IDs())
	_, err := m.GetCollection("typo")
	fmt.Println(errors.Is(err, memory.ErrCollectionNotFound))
	// Output:
	// deleted b.md 1
	// [a.md]
	// true
}
