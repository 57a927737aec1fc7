package memory

import (
	"context"
	"fmt"

	"github.com/agentmem/memory/internal/parallel"
)

// maxBatchQueries caps the queries of one SearchBatch call.
const maxBatchQueries = 1 << 16

// SearchBatch runs Search for every query over GOMAXPROCS workers (one query per worker at
// a time) and returns the results in input order: out[i] answers queries[i]. The options
// apply to every query; WithStats is refused (the queries run concurrently: use
// WithStatsFunc, called once per query). WithQueryVectors gives each query its own vector
// (see there); they are checked before any query is searched. It stops at
// the first failing query and returns its error, naming the query's index; cancelling ctx
// stops every worker.
func (c *Collection) SearchBatch(ctx context.Context, queries []string, opts ...SearchOption) ([][]Result, error) {
	if c.m.cluster != nil {
		return c.m.cluster.searchBatch(ctx, c.m, c.name, queries, opts)
	}
	if len(queries) > maxBatchQueries {
		return nil, fmt.Errorf("%w: %d queries in one batch, the cap is %d", ErrQueryTooLarge, len(queries), maxBatchQueries)
	}
	var so SearchOptions
	for _, fn := range opts {
		fn(&so)
	}
	if so.stats != nil {
		return nil, fmt.Errorf("%w: WithStats cannot be used with SearchBatch", ErrInvalidOption)
	}
	if err := c.checkBatchVectors(queries, so); err != nil {
		return nil, err
	}
	if c.m.remote != nil {
		if so.QueryVector != nil {
			return nil, errRemoteVector
		}
		return c.remoteBatch(ctx, queries, opts)
	}
	var shares [][]SearchOption
	err := c.m.dx.retryRepaired(c.name, func() (err error) {
		shares, err = c.batchOptions(ctx, queries, so)
		return err
	})
	if err != nil {
		return nil, err
	}
	return parallel.Map(ctx, len(queries), 0, func(ctx context.Context, i int) ([]Result, error) {
		qopts := opts
		if shares != nil {
			qopts = append(opts[:len(opts):len(opts)], shares[i]...)
		}
		if vs := so.QueryVectors; vs != nil { // this query's vector alone
			qopts = append(qopts[:len(qopts):len(qopts)], func(s *SearchOptions) { s.QueryVectors, s.QueryVector = nil, vs[i] })
		}
		return c.Search(ctx, queries[i], qopts...)
	})
}

// retrieverWindow is how many hits each retriever is asked for: the fusion window, or
// just k when a single retriever answers without rerank or collapse.
func (so *SearchOptions) retrieverWindow(mode Mode) int {
	if mode != Hybrid && !so.Rerank && so.CollapseThreshold == 0 && !so.SourceDedup && !so.windowSet {
		return so.TopK
	}
	return so.Window
}

// SearchBatch runs a batch of searches over the default collection; see
// [Collection.SearchBatch].
func (m *Memory) SearchBatch(ctx context.Context, queries []string, opts ...SearchOption) ([][]Result, error) {
	return m.Collection("").SearchBatch(ctx, queries, opts...)
}
