package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/memory/internal/bm25"
	"github.com/agentmem/memory/internal/parallel"
	"github.com/agentmem/memory/vectorstore"
)

// maxBatchQueries caps the queries of one SearchBatch call.
const maxBatchQueries = 1 << 16

// SearchBatch runs Search for every query over GOMAXPROCS workers (one query per worker at
// a time) and returns the results in input order: out[i] answers queries[i]. The options
// apply to every query; WithStats is refused (the queries run concurrently: use
// WithStatsFunc, called once per query). It stops at
// the first failing query and returns its error, naming the query's index; cancelling ctx
// stops every worker.
func (c *Collection) SearchBatch(ctx context.Context, queries []string, opts ...SearchOption) ([][]Result, error) {
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
	if c.m.remote != nil {
		return c.remoteBatch(ctx, queries, opts)
	}
	dense, err := c.denseBatch(ctx, queries, so)
	if err != nil {
		return nil, err
	}
	return parallel.Map(ctx, len(queries), 0, func(ctx context.Context, i int) ([]Result, error) {
		qopts := opts
		if dense != nil {
			qopts = append(opts[:len(opts):len(opts)], func(s *SearchOptions) { s.dense = &dense[i] })
		}
		return c.Search(ctx, queries[i], qopts...)
	})
}

// denseBatch is one query's share of a batch's dense retrieval.
type denseBatch struct {
	vec  []float32         // the query's embedding
	k    int               // hits asked for
	hits []vectorstore.Hit // the index's answer for vec at k, no filter

	embedShare, denseShare time.Duration // the batch's embedding and vector search time per query
}

// denseBatch embeds the queries of a dense or hybrid batch together and asks the vector
// index for all of them at once (the flat index reads its vectors once per batch, not once
// per query). It returns nil when there is nothing to share: BM25 only, no embedder,
// filters (each query's filter is applied on its own), or several collections (a cascade
// too).
func (c *Collection) denseBatch(ctx context.Context, queries []string, so SearchOptions) ([]denseBatch, error) {
	e := c.m.opts.Embedder
	if !c.m.em.queryModel() || so.Where != nil || so.WhereDocument != nil || len(so.Collections) > 0 || len(so.Cascade) > 0 || len(queries) < 2 {
		return nil, nil
	}
	if err := so.normalise(); err != nil {
		return nil, err
	}
	if so.Mode == BM25 { // asked for, or a hybrid search with dense weight 0
		return nil, nil
	}
	s, err := c.state(false)
	if err != nil || s == nil {
		return nil, err // a missing collection is reported by each query
	}
	t := time.Now()
	vecs, err := vectorstore.EmbedQueries(ctx, e, queries)
	embed := time.Since(t)
	if err != nil {
		return nil, fmt.Errorf("memory: embed queries: %w", err)
	}
	for _, v := range vecs {
		if err := checkVec(v, e.Dim()); err != nil {
			return nil, err
		}
	}
	k := so.retrieverWindow(so.Mode)
	unlock, err := c.m.reg.rlockOpen(s)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if s.vec == nil {
		return nil, nil
	}
	t = time.Now()
	hits, err := vectorstore.SearchBatch(ctx, s.vec, vecs, k, nil)
	if err != nil {
		return nil, err
	}
	n := time.Duration(len(queries))
	embedShare, denseShare := embed/n, time.Since(t)/n
	out := make([]denseBatch, len(queries))
	for i := range out {
		out[i] = denseBatch{vec: vecs[i], k: k, hits: hits[i], embedShare: embedShare, denseShare: denseShare}
	}
	return out, nil
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

// bm25Options are the keyword index options of this store.
func (dv derivedIndexes) bm25Options() bm25.Options {
	m := dv.m
	return bm25.Options{
		K1:                  m.opts.BM25K1,
		B:                   m.opts.BM25B,
		MaxQueryTerms:       m.opts.MaxQueryTerms,
		MaxQueryBytes:       m.opts.MaxQueryBytes,
		SegmentWorkers:      m.opts.QueryWorkers,
		PostingsCacheBytes:  m.opts.PostingsCacheBytes,
		MappedResidentBytes: m.opts.MappedResidentBytes,
		AlsoTrim:            m.dx.dropStoreResident,
		ReadOnly:            m.opts.ReadOnly,
	}
}

// dropStoreResident drops the store file's resident mapped pages (MappedResidentBytes).
func (dv derivedIndexes) dropStoreResident() {
	m := dv.m
	if m.db != nil {
		m.db.DropResident()
	}
}

// bm25Error maps the keyword index's query errors to the store's sentinels.
func bm25Error(err error) error {
	if errors.Is(err, bm25.ErrQueryTooLong) || errors.Is(err, bm25.ErrQueryTooManyTerms) {
		return fmt.Errorf("%w: %w", ErrQueryTooLarge, err)
	}
	if errors.Is(err, bm25.ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}
