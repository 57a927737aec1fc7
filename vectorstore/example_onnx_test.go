//go:build cgo

package vectorstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentmem/memory/vectorstore"
)

// modelDir is a folder of the shared fixtures ($MEMORY_MODELS, else ../../shared/models).
func modelDir(name string) string {
	root := os.Getenv("MEMORY_MODELS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "models")
	}
	return filepath.Join(root, name)
}

// Embed texts with a sentence-transformers style ONNX folder (here the synthetic tiny BERT
// fixture; all-MiniLM-L6-v2 from `memory models pull` works the same way).
func ExampleNewONNXEmbedder() {
	ctx := context.Background()
	e, err := vectorstore.NewONNXEmbedder(ctx, modelDir("tiny-bert-encoder"), vectorstore.ONNXOptions{Threads: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	vecs, err := e.Embed(ctx, []string{"A man is eating food.", "A man is riding a horse."})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.ID(), e.Dim(), len(vecs))
	fmt.Printf("%.4f %.4f\n", vecs[0][0], vecs[0][1])
	// Output:
	// tiny-bert-encoder@sha256:de64992dd8f2ae65 32 2
	// 0.1535 0.0149
}
