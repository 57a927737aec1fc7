package memoryeino_test

import (
	"context"
	"fmt"

	"github.com/agentmem/memory"
	memoryeino "github.com/agentmem/memory/adapters/eino"
	"github.com/cloudwego/eino/components/retriever"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"
)

// An eino chain that retrieves from a memory store; in an application a chat template and a
// chat model follow the retriever node.
func Example() {
	ctx := context.Background()
	m, err := memory.Open("") // a temporary store; BM25 only without an embedder
	if err != nil {
		panic(err)
	}
	defer m.Close()

	ix, _ := memoryeino.NewIndexer(m, nil)
	_, err = ix.Store(ctx, []*schema.Document{
		{ID: "deploy", Content: "Deploys go to the staging cluster first.", MetaData: map[string]any{"team": "ops"}},
		{ID: "soup", Content: "The cafeteria serves soup on Fridays.", MetaData: map[string]any{"team": "food"}},
	})
	if err != nil {
		panic(err)
	}

	r, _ := memoryeino.NewRetriever(m, &memoryeino.RetrieverConfig{TopK: 3})
	cite := compose.InvokableLambda(func(_ context.Context, docs []*schema.Document) (string, error) {
		if len(docs) == 0 {
			return "no answer", nil
		}
		return fmt.Sprintf("%s [%s]", docs[0].Content, docs[0].ID), nil
	})
	run, err := compose.NewChain[string, string]().AppendRetriever(r).AppendLambda(cite).Compile(ctx)
	if err != nil {
		panic(err)
	}
	answer, err := run.Invoke(ctx, "where do deploys go",
		compose.WithRetrieverOption(retriever.WithTopK(1), memoryeino.WithWhere(memory.Where{"team": "ops"})))
	if err != nil {
		panic(err)
	}
	fmt.Println(answer)
	// Output:
	// Deploys go to the staging cluster first. [deploy]
}
