//go:build cgo

package rerank_test

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
	"github.com/agentmem/memory/rerank"
)

// Rerank passages with a cross-encoder ONNX folder (ms-marco-MiniLM-L-6-v2 from `memory
// models pull`, or any sentence-transformers CrossEncoder exported to ONNX). It needs the
// ONNX Runtime library: $MEMORY_ORT_LIB, or `memory runtime pull` once.
// TestCrossEncoderExample runs the same code on the tiny fixture and checks its output.
func ExampleCrossEncoder_Rerank() {
	ctx := context.Background()
	ce, err := rerank.NewCrossEncoder(ctx, "models/ms-marco-MiniLM-L-6-v2", rerank.CrossEncoderOptions{Threads: 1})
	if err != nil {
		fmt.Println(err) // onnx.ErrLibrary names MEMORY_ORT_LIB and `memory runtime pull`
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
}

// TestCrossEncoderExample is the example above on the synthetic tiny BERT fixture (whose
// scores carry no meaning). It skips without the fixtures or the ONNX Runtime library, and
// fails instead when MEMORY_REQUIRE_FIXTURES=1.
func TestCrossEncoderExample(t *testing.T) {
	root := os.Getenv("MEMORY_MODELS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "models")
	}
	dir := filepath.Join(root, "tiny-bert-cross-encoder")
	if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
		onnxtest.Missing(t, "model %s", dir)
	}
	ctx := context.Background()
	ce, err := rerank.NewCrossEncoder(ctx, dir, rerank.CrossEncoderOptions{Threads: 1})
	if errors.Is(err, onnx.ErrLibrary) {
		onnxtest.Missing(t, "ONNX Runtime: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer ce.Close()
	ranked, err := ce.Rerank(ctx, "How many people live in Berlin?", []string{
		"Berlin is well known for its museums.",
		"Berlin had a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.",
	}, 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		index       int
		logit, prob float64
	}{{1, -1.1533, 0.2399}, {0, -1.4218, 0.1944}}
	if len(ranked) != len(want) {
		t.Fatalf("got %d results", len(ranked))
	}
	for i, w := range want {
		r := ranked[i]
		if r.Index != w.index || math.Abs(float64(r.Logit)-w.logit) > 1e-4 || math.Abs(float64(r.Prob)-w.prob) > 1e-4 {
			t.Errorf("#%d: got %d %.4f %.4f, want %d %.4f %.4f", i, r.Index, r.Logit, r.Prob, w.index, w.logit, w.prob)
		}
	}
}
