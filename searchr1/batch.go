package searchr1

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentmem/memory"
	"github.com/agentmem/memory/internal/parallel"
)

// BatchSearcher is an optional upgrade of [Searcher] for searchers that answer many
// queries at once faster than one by one (for example by reading each index structure
// once for the whole batch). [SearchQueries] and the /retrieve handler use SearchBatch
// when the searcher implements it, and their own worker pool over Search otherwise.
//
// SearchBatch returns one result list per query, in the order of queries. A query given
// to it is blank only when the caller sent a vector for it ("query_vectors", passed as
// memory.WithQueryVectors), which then stands for the text.
type BatchSearcher interface {
	Searcher
	SearchBatch(ctx context.Context, queries []string, opts ...memory.SearchOption) ([][]memory.Result, error)
}

var (
	_ BatchSearcher = (*memory.Memory)(nil)
	_ BatchSearcher = (*memory.Collection)(nil)
)

// SearchQueries searches every query of queries and returns the result lists in input
// order; a blank query gets an empty list. When s implements [BatchSearcher] the whole
// batch goes to SearchBatch; otherwise up to workers searches run at once (workers <= 0:
// GOMAXPROCS). The first failing search cancels the others; its error names the index of
// its query and wraps the searcher's error.
func SearchQueries(ctx context.Context, s Searcher, queries []string, workers int, opts ...memory.SearchOption) ([][]memory.Result, error) {
	return searchQueries(ctx, s, queries, nil, workers, opts)
}

// searchQueries is SearchQueries and, with vectors (one per query, nil where a query has
// none), SearchQueryVectors: a query is searched when it has a text or a vector.
func searchQueries(ctx context.Context, s Searcher, queries []string, vectors [][]float32, workers int, opts []memory.SearchOption) ([][]memory.Result, error) {
	searched := func(i int) bool {
		return (vectors != nil && vectors[i] != nil) || strings.TrimSpace(queries[i]) != ""
	}
	out := make([][]memory.Result, len(queries))
	if bs, ok := s.(BatchSearcher); ok {
		var idx []int
		var qs []string
		var vs [][]float32
		for i, q := range queries {
			if searched(i) {
				idx, qs = append(idx, i), append(qs, q)
				if vectors != nil {
					vs = append(vs, vectors[i])
				}
			}
		}
		if len(qs) == 0 {
			return out, nil
		}
		bopts := opts
		if vectors != nil {
			bopts = append(opts[:len(opts):len(opts)], memory.WithQueryVectors(vs))
		}
		res, err := bs.SearchBatch(ctx, qs, bopts...)
		if err != nil {
			return nil, err
		}
		if len(res) != len(qs) {
			return nil, fmt.Errorf("searchr1: batch search returned %d lists for %d queries", len(res), len(qs))
		}
		for j, i := range idx {
			out[i] = res[j]
		}
		return out, nil
	}
	err := parallel.For(ctx, len(queries), workers, func(ctx context.Context, i int) error {
		if !searched(i) {
			return nil
		}
		qopts := opts
		if vectors != nil && vectors[i] != nil {
			qopts = append(opts[:len(opts):len(opts)], memory.WithQueryVector(vectors[i]))
		}
		res, err := s.Search(ctx, queries[i], qopts...)
		if err != nil {
			return fmt.Errorf("queries[%d]: %w", i, err)
		}
		out[i] = res
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
