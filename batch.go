package memory

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentmem/memory/hybrid"
)

// MaxBatchQueries caps the queries of one SearchBatch call.
const MaxBatchQueries = 1 << 16

// SearchBatch runs Search for every query over GOMAXPROCS workers (one query per worker at
// a time) and returns the results in input order: out[i] answers queries[i]. The options
// apply to every query; WithStats is refused (the queries run concurrently). It stops at
// the first failing query and returns its error, naming the query's index; cancelling ctx
// stops every worker.
func (c *Collection) SearchBatch(ctx context.Context, queries []string, opts ...SearchOption) ([][]Result, error) {
	if len(queries) > MaxBatchQueries {
		return nil, fmt.Errorf("%w: %d queries in one batch, the cap is %d", ErrQueryTooLarge, len(queries), MaxBatchQueries)
	}
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	if so.stats != nil {
		return nil, fmt.Errorf("%w: WithStats cannot be used with SearchBatch", ErrInvalidOption)
	}
	out := make([][]Result, len(queries))
	err := hybrid.ParallelFor(ctx, len(queries), 0, func(ctx context.Context, i int) error {
		res, err := c.Search(ctx, queries[i], opts...)
		if err != nil {
			return fmt.Errorf("query %d: %w", i, err)
		}
		out[i] = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SearchBatch runs a batch of searches over the default collection; see
// [Collection.SearchBatch].
func (m *Memory) SearchBatch(ctx context.Context, queries []string, opts ...SearchOption) ([][]Result, error) {
	return m.Collection("").SearchBatch(ctx, queries, opts...)
}

// bm25Options are the keyword index options of this store.
func (m *Memory) bm25Options() hybrid.BM25Options {
	return hybrid.BM25Options{
		K1:             m.opts.BM25K1,
		B:              m.opts.BM25B,
		MaxQueryTerms:  m.opts.MaxQueryTerms,
		MaxQueryBytes:  m.opts.MaxQueryBytes,
		SegmentWorkers: m.opts.QueryWorkers,
	}
}

// bm25Error maps the keyword index's query errors to the store's sentinels.
func bm25Error(err error) error {
	if errors.Is(err, hybrid.ErrQueryTooLong) || errors.Is(err, hybrid.ErrQueryTooManyTerms) {
		return fmt.Errorf("%w: %w", ErrQueryTooLarge, err)
	}
	return err
}
