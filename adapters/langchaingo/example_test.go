package memorylc_test

import (
	"context"
	"fmt"

	"github.com/agentmem/memory"
	memorylc "github.com/agentmem/memory/adapters/langchaingo"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/schema"
	"github.com/tmc/langchaingo/vectorstores"
)

// A langchaingo RetrievalQA chain answering from a memory store.
func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store; BM25 only without an embedder
	if err != nil {
		panic(err)
	}
	defer m.Close()

	store := memorylc.New(m)
	_, err = store.AddDocuments(ctx, []schema.Document{
		{PageContent: "Deploys go to the staging cluster first.", Metadata: map[string]any{"id": "deploy", "team": "ops"}},
		{PageContent: "The cafeteria serves soup on Fridays.", Metadata: map[string]any{"id": "soup", "team": "food"}},
	})
	if err != nil {
		panic(err)
	}

	docs, err := store.SimilaritySearch(ctx, "where do deploys go", 1,
		vectorstores.WithFilters(memory.Where{"team": "ops"}))
	if err != nil {
		panic(err)
	}
	fmt.Println(docs[0].Metadata[memorylc.IDKey], docs[0].PageContent)

	llm := fake.NewFakeLLM([]string{"To staging first."}) // a real model in production
	qa := chains.NewRetrievalQAFromLLM(llm, store.Retriever(2))
	answer, err := chains.Run(ctx, qa, "where do deploys go")
	if err != nil {
		panic(err)
	}
	fmt.Println(answer)
	// Output:
	// deploy Deploys go to the staging cluster first.
	// To staging first.
}
