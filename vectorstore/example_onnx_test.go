//go:build cgo

package vectorstore_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentmem/memory/internal/onnx"
	"github.com/agentmem/memory/internal/onnx/onnxtest"
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

// Embed texts with a sentence-transformers style ONNX folder (all-MiniLM-L6-v2 from `memory
// models pull`, or any BERT-family bi-encoder exported to ONNX). It needs the ONNX Runtime
// library: $MEMORY_ORT_LIB, or `memory runtime pull` once. TestONNXEmbedderExample runs the
// same code on the tiny fixture and checks its output.
func ExampleNewONNXEmbedder() {
	ctx := context.Background()
	e, err := vectorstore.NewONNXEmbedder(ctx, "models/all-MiniLM-L6-v2", vectorstore.ONNXOptions{Threads: 1})
	if err != nil {
		fmt.Println(err) // onnx.ErrLibrary names MEMORY_ORT_LIB and `memory runtime pull`
		return
	}
	defer e.Close()
	vecs, err := e.Embed(ctx, []string{"A man is eating food.", "A man is riding a horse."})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.ID(), e.Dim(), len(vecs))
}

// TestONNXEmbedderExample is the example above on the synthetic tiny BERT fixture. It skips
// without the fixtures or the ONNX Runtime library, and fails instead when
// MEMORY_REQUIRE_FIXTURES=1.
func TestONNXEmbedderExample(t *testing.T) {
	dir := modelDir("tiny-bert-encoder")
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		onnxtest.Missing(t, "model %s", dir)
	}
	ctx := context.Background()
	e, err := vectorstore.NewONNXEmbedder(ctx, dir, vectorstore.ONNXOptions{Threads: 1})
	if errors.Is(err, onnx.ErrLibrary) {
		onnxtest.Missing(t, "ONNX Runtime: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	vecs, err := e.Embed(ctx, []string{"A man is eating food.", "A man is riding a horse."})
	if err != nil {
		t.Fatal(err)
	}
	if e.ID() != "tiny-bert-encoder@sha256:de64992dd8f2ae65" || e.Dim() != 32 || len(vecs) != 2 {
		t.Fatalf("got %s %d %d", e.ID(), e.Dim(), len(vecs))
	}
	if math.Abs(float64(vecs[0][0])-0.1535) > 1e-4 || math.Abs(float64(vecs[0][1])-0.0149) > 1e-4 {
		t.Fatalf("vector starts %.4f %.4f, want 0.1535 0.0149", vecs[0][0], vecs[0][1])
	}
}
