//go:build faiss

package vectorstore_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/agentmem/memory/vectorstore"
)

// A FAISS index is built through the registry like any backend (build tag "faiss"); with a
// Dir it persists itself on Commit and Close and reports the committed sequence on reopening.
func ExampleNewIndex_faiss() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "faiss-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	cfg := vectorstore.IndexConfig{Backend: "faiss", Dim: 3, Factory: "Flat", Dir: dir}
	idx, err := vectorstore.NewIndex(cfg)
	if err != nil {
		panic(err)
	}
	if err := idx.Add(ctx, []string{"a", "b", "c"}, [][]float32{{1, 0, 0}, {0, 1, 0}, {1, 1, 0}}); err != nil {
		panic(err)
	}
	show := func(hits []vectorstore.Hit) {
		var parts []string
		for _, h := range hits {
			parts = append(parts, fmt.Sprintf("%s %.3f", h.ID, h.Score))
		}
		fmt.Println(strings.Join(parts, ", "))
	}
	hits, _ := idx.Search(ctx, []float32{1, 0.1, 0}, 2, nil)
	show(hits)
	notA := func(id string) bool { return id != "a" }
	hits, _ = idx.Search(ctx, []float32{1, 0.1, 0}, 2, notA)
	show(hits)

	idx.(vectorstore.Durable).Commit(42)
	idx.Close()
	re, _ := vectorstore.NewIndex(cfg)
	defer re.Close()
	fmt.Println(re.Len(), re.(vectorstore.Durable).Seq())
	// Output:
	// a 0.995, c 0.774
	// c 0.774, b 0.100
	// 3 42
}
