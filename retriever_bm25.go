package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/bm25"
)

// bm25Retriever is keyword recall: the collection's BM25 index, filtered in its metadata
// terms when the Where runs there, else restricted to the units the filter allows.
func init() { addRetriever(&bm25Retriever) }

var bm25Retriever = retriever{
	name:   "bm25",
	mode:   BM25,
	order:  10,
	weight: func(w *Weights) float64 { return w.BM25 },
	search: func(ctx context.Context, s *colState, q *retrieval, k int) ([]hybrid.Hit, error) {
		var hits []hybrid.Hit
		var err error
		if q.scope.indexed {
			hits, err = s.bm25.SearchFiltered(ctx, q.query, k, q.scope.meta)
		} else {
			hits, err = s.bm25.Search(ctx, q.query, k, q.scope.allow)
		}
		if err != nil {
			return nil, bm25Error(err)
		}
		return hits, nil
	},
	elapsed: func(st *SearchStats) *time.Duration { return &st.BM25 },
	explain: func(ex *Explanation) **StageScore { return &ex.BM25 },
	norm:    relativeScore, // BM25 has no fixed scale: relative to the search's best
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
