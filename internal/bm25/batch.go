package bm25

import (
	"context"

	"github.com/agentmem/memory/internal/parallel"
)

// SearchBatch runs Search for every query of qs over GOMAXPROCS workers (one query per
// worker at a time) and returns the hits in input order. It stops at the first failing
// query and returns that error, naming the query's index; a cancelled ctx stops every
// worker.
func (b *Index) SearchBatch(ctx context.Context, qs []string, k int, allow []string) ([][]Hit, error) {
	return parallel.Map(ctx, len(qs), 0, func(ctx context.Context, i int) ([]Hit, error) {
		return b.Search(ctx, qs[i], k, allow)
	})
}
