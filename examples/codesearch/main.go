// Command codesearch indexes a source tree with tree-sitter chunks into an in-memory store
// and runs a few keyword (BM25) queries over it.
//
//	go run ./examples/codesearch [-dir DIR] [QUERY...]
//
// Without -dir it indexes the repository it is run from (found by walking up to go.mod).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/agentmem/memory"
)

func main() {
	dir := flag.String("dir", "", "directory to index (default: the enclosing Go module)")
	k := flag.Int("k", 3, "results per query")
	flag.Parse()
	root := *dir
	if root == "" {
		root = moduleRoot()
	}
	queries := flag.Args()
	if len(queries) == 0 {
		queries = []string{
			"split a large syntax node into chunks within the budget",
			"match a path against gitignore patterns",
			"reciprocal rank fusion of keyword and vector results",
		}
	}
	ctx := context.Background()
	m, err := memory.Open("")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	start := time.Now()
	sum, err := m.AddCode(ctx, root, memory.CodeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("indexed %s in %.1fs: %s\n", root, time.Since(start).Seconds(), sum)
	for _, q := range queries {
		res, err := m.Search(ctx, q, memory.WithMode(memory.BM25), memory.TopK(*k))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("\nquery: %s\n", q)
		for i, r := range res {
			fmt.Printf("  %d. %-50s %-9v %v (score %.2f)\n", i+1, r.ID, r.Metadata["kind"], r.Metadata["qualified_name"], r.Score)
		}
	}
}

// moduleRoot returns the nearest directory above the working directory holding go.mod.
func moduleRoot() string {
	d, err := os.Getwd()
	if err != nil {
		log.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			log.Fatal("no go.mod above the working directory; pass -dir")
		}
		d = parent
	}
}
