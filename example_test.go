package memory_test

import (
	"context"
	"fmt"
	"log"

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
