package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/vecmath"
	"github.com/agentmem/memory/vectorstore"
)

// denseRetriever is vector recall: the collection's vector index, asked for the units
// nearest the query's embedding among those the filter allows; a batch of queries is
// embedded and searched together (denseBatch).
func init() { addRetriever(&denseRetriever) }

var denseRetriever = retriever{
	name:   "dense",
	mode:   Dense,
	order:  20,
	weight: func(w *Weights) float64 { return w.Dense },
	search: func(ctx context.Context, s *colState, q *retrieval, k int) ([]hybrid.Hit, error) {
		return s.denseSearch(ctx, q.vec, k, q.so.denseFocus(k), q.scope, q.so.dense)
	},
	elapsed: func(st *SearchStats) *time.Duration { return &st.Dense },
	shared: func(so *SearchOptions) time.Duration {
		if so.dense == nil {
			return 0
		}
		return so.dense.denseShare // its share of the batch's vector search
	},
	explain: func(ex *Explanation) **StageScore { return &ex.Dense },
	norm:    cosineScore,
	cosine:  true,
	rescore: storedCosine,
	rescoreAll: func(m *Memory) bool {
		return m.opts.Index.Metric != "" && m.opts.Index.Metric != vectorstore.Cosine // recall scores inner products
	},
	embeds:    true,
	filterIDs: true,
	plan: func(s *colState) (string, bool) {
		if sp, ok := s.vec.(vectorstore.SearchPlanner); ok {
			return sp.SearchPlan() // approximate recall: quantized codes, then exact rescoring
		}
		return "", false
	},
	batch: func(ctx context.Context, c *Collection, queries []string, so SearchOptions) ([]SearchOption, error) {
		shares, err := c.denseBatch(ctx, queries, so)
		if err != nil || shares == nil {
			return nil, err
		}
		out := make([]SearchOption, len(shares))
		for i := range shares {
			b := &shares[i]
			out[i] = func(s *SearchOptions) { s.dense = b }
		}
		return out, nil
	},
}

// denseSearch asks the vector index for the k nearest units to qv among those sc allows
// (all without a filter), or takes them from the query's batch when it asked for as many
// without a filter. An index that resolves an id list itself (vectorstore.AllowSearcher:
// a bitmap over its ordinals) gets the list; others a Filter over the allowed set.
func (s *colState) denseSearch(ctx context.Context, qv []float32, k, focus int, sc *searchScope, batch *denseBatch) ([]hybrid.Hit, error) {
	allow := sc.allowSet
	if batch != nil && sc.allowIDs == nil && allow == nil && k <= batch.k && focus <= batch.focus { // answered with its batch
		return batch.hits[:min(k, len(batch.hits))], nil
	}
	if as, ok := s.vec.(vectorstore.AllowSearcher); ok && sc.allowIDs != nil {
		return as.SearchAllowed(ctx, qv, k, sc.allowIDs)
	}
	var f vectorstore.Filter
	if allow != nil {
		f = func(id string) bool { return allow[id] }
	}
	return vectorstore.SearchFocus(ctx, s.vec, qv, k, focus, f)
}

// denseFocus is how many of dense recall's k hits an approximate index picks its
// candidates for (vectorstore.FocusSearcher): the results the search keeps, and at least a
// quarter of the window (their fused ranks lean on the dense hits below them too), or k
// with FullDenseWindow. The quarter was chosen on 200 queries of a 1M x 768 int8 store
// (hybrid nDCG@10 against the whole window 0.1726: focus 10 0.1685, 25 0.1712, 50 0.1729;
// the code scan costs the same for 10 and 25) and checked on 100 others (BENCHMARKS §0zd).
func (so *SearchOptions) denseFocus(k int) int {
	if so.FullDenseWindow {
		return k
	}
	return min(k, max(so.keep(), k/4))
}

// denseBatch is one query's share of a batch's dense retrieval.
type denseBatch struct {
	vec   []float32         // the query's embedding
	k     int               // hits asked for
	focus int               // the hits the candidates were picked for (denseFocus)
	hits  []vectorstore.Hit // the index's answer for vec at k, no filter

	embedShare, denseShare time.Duration // the batch's embedding and vector search time per query
}

// denseBatch embeds the queries of a dense or hybrid batch together and asks the vector
// index for all of them at once (the flat index reads its vectors once per batch, not once
// per query). The caller's query vectors (WithQueryVectors, WithQueryVector) are searched
// as they are; only the other queries are embedded. It returns nil when there is nothing
// to share: BM25 only, no embedder for queries without a vector, filters (each query's
// filter is applied on its own), or several collections (a cascade too).
func (c *Collection) denseBatch(ctx context.Context, queries []string, so SearchOptions) ([]denseBatch, error) {
	e := c.m.opts.Embedder
	var texts []string // the queries to embed: those without the caller's vector
	var at []int
	for i, q := range queries {
		if so.queryVectorOf(i) == nil {
			texts, at = append(texts, q), append(at, i)
		}
	}
	if len(texts) > 0 && !c.m.em.queryModel() || so.Where != nil || so.WhereDocument != nil || len(so.Collections) > 0 || len(so.Cascade) > 0 || len(queries) < 2 {
		return nil, nil
	}
	if err := so.normalise(); err != nil {
		return nil, err
	}
	if so.Mode != Hybrid && so.Mode != Dense { // dense recall does not run (bm25 asked for, or hybrid with dense weight 0)
		return nil, nil
	}
	s, err := c.state(false)
	if err != nil || s == nil {
		return nil, err // a missing collection is reported by each query
	}
	vecs := make([][]float32, len(queries))
	for i := range queries {
		vecs[i] = so.queryVectorOf(i) // the caller's, checked by SearchBatch
	}
	t := time.Now()
	if len(texts) > 0 {
		embedded, err := vectorstore.EmbedQueries(ctx, e, texts)
		if err != nil {
			return nil, fmt.Errorf("memory: embed queries: %w", err)
		}
		for j, v := range embedded {
			if err := checkVec(v, e.Dim()); err != nil {
				return nil, err
			}
			vecs[at[j]] = v
		}
	}
	embed := time.Since(t)
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
	focus := so.denseFocus(k)
	hits, err := vectorstore.SearchBatchFocus(ctx, s.vec, vecs, k, focus, nil)
	if err != nil {
		return nil, err
	}
	n := time.Duration(len(queries))
	embedShare, denseShare := embed/n, time.Since(t)/n
	out := make([]denseBatch, len(queries))
	for i := range out {
		out[i] = denseBatch{vec: vecs[i], k: k, focus: focus, hits: hits[i], embedShare: embedShare, denseShare: denseShare}
	}
	return out, nil
}

// storedCosine is the cosine similarity of the query's embedding qv and the stored vector
// of unit uid (ok false when it has none, or one of another dimension): dense recall's
// share of Relevance for a result it did not return.
func storedCosine(tx *store.Tx, col, uid string, qv []float32) (float64, bool, error) {
	v, err := tx.Vector(col, uid)
	if err != nil || len(v) != len(qv) || len(v) == 0 {
		return 0, false, err
	}
	return vecmath.Cosine(qv, v), true, nil
}
