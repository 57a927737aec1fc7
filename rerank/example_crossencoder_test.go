//go:build cgo

package rerank_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem/memory/rerank"
)

// Rerank passages with a cross-encoder ONNX folder (here the synthetic tiny BERT fixture,
// whose scores carry no meaning; ms-marco-MiniLM-L-6-v2 from `memory models pull` works the
// same way).
func ExampleCrossEncoder_Rerank() {
	root := os.Getenv("MEMORY_MODELS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "models")
	}
	ctx := context.Background()
	ce, err := rerank.NewCrossEncoder(ctx, filepath.Join(root, "tiny-bert-cross-encoder"), rerank.CrossEncoderOptions{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ce.Close()
	ranked, err := ce.Rerank(ctx, "How many people live in Berlin?", []string{
		"Berlin is well known for its museums.",
		"Berlin had a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
	}, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range ranked {
		fmt.Printf("%d %.4f %.4f\n", r.Index, r.Logit, r.Prob)
	}
	// Output:
	// 1 -1.1533 0.2399
	// 0 -1.4218 0.1944
}
