package hybrid

import (
	"context"
	"fmt"

	"github.com/agentmem/memory/internal/parallel"
)

// SearchBatch runs Search for every query of qs over GOMAXPROCS workers (one query per
// worker at a time) and returns the hits in input order. It stops at the first failing
// query and returns that error, naming the query's index; a cancelled ctx stops every
// worker.
func (b *BM25Index) SearchBatch(ctx context.Context, qs []string, k int, allow []string) ([][]Hit, error) {
	out := make([][]Hit, len(qs))
	err := parallel.For(ctx, len(qs), 0, func(ctx context.Context, i int) error {
		hits, err := b.Search(ctx, qs[i], k, allow)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		out[i] = hits
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
