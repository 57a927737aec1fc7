package memorygk_test

import (
	"context"
	"fmt"

	"github.com/agentmem/memory"
	memorygk "github.com/agentmem/memory/adapters/genkit"
	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"
)

// A Genkit retriever on a memory store; in a flow, genkit.Generate with ai.WithDocs takes
// the documents it returns.
func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store; BM25 only without an embedder
	if err != nil {
		panic(err)
	}
	defer m.Close()

	_, err = memorygk.Index(ctx, m, "", []*ai.Document{
		ai.DocumentFromText("Deploys go to the staging cluster first.", map[string]any{"id": "deploy", "team": "ops"}),
		ai.DocumentFromText("The cafeteria serves soup on Fridays.", map[string]any{"id": "soup", "team": "food"}),
	})
	if err != nil {
		panic(err)
	}

	g := genkit.Init(ctx)
	r, err := memorygk.DefineRetriever(g, "memory/kb", m, memorygk.Config{K: 3})
	if err != nil {
		panic(err)
	}
	resp, err := genkit.Retrieve(ctx, g, ai.WithRetriever(r), ai.WithTextDocs("where do deploys go"),
		ai.WithConfig(&memorygk.RetrieverOptions{K: 1, Where: memory.Where{"team": "ops"}}))
	if err != nil {
		panic(err)
	}
	d := resp.Documents[0]
	fmt.Println(d.Metadata[memorygk.IDKey], d.Content[0].Text)
	// Output:
	// deploy Deploys go to the staging cluster first.
}
