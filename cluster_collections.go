package memory

import (
	"context"

	"github.com/agentmem/memory/internal/store"
)

// Searches of several collections on a cluster. A multi-collection search (InCollections)
// and a cascade (WithCascade) are built from searches of one collection each, by the same
// code as the embedded store's (searchMany, searchCascade): on a cluster each of those is
// the cluster's search of that collection (Weaviate's BM25 and nearVector, fused here), so
// the collection weights, the fused scores, Explain (CollectionWeight, Cascade and the
// cascade's note) and the order of the results mean the same on both backends.

// WithCollapse on a cluster is the embedded store's collapse (searcher.collapse) with the
// candidates' stored vectors read from the cluster, all at once per collection.

// searchCollection is the search of one collection of a multi-collection search: the
// embedded store's, or the cluster's on a store on a cluster.
func (sr searcher) searchCollection(ctx context.Context, col, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	if cs := sr.m.cluster; cs != nil {
		return cs.searchOne(ctx, sr.m, col, query, so, st)
	}
	return sr.searchOne(ctx, col, query, so, st)
}

// candidateVectors reads the stored vectors of the candidates' units (at the store's
// consistency level) and returns the lookup collapse uses: a unit without a vector has
// nil, as in the embedded store.
func (cs *clusterStore) candidateVectors(ctx context.Context, cands []candidate) (func(candidate) ([]float32, error), error) {
	parents := map[string][]string{} // by collection
	seen := map[string]bool{}
	for _, c := range cands {
		p, _ := store.SplitUnit(c.id)
		if k := c.res.Collection + "\x00" + p; !seen[k] {
			seen[k] = true
			parents[c.res.Collection] = append(parents[c.res.Collection], p)
		}
	}
	vecs := map[string][]float32{} // collection NUL unit id
	for col, ids := range parents {
		cc, err := cs.existing(ctx, col)
		if err != nil {
			return nil, err
		}
		if cc == nil {
			continue
		}
		err = cs.unitVectors(ctx, cc, ids, clusterMaxResults, func(uid string, v []float32) {
			if len(v) > 0 {
				vecs[col+"\x00"+uid] = v
			}
		})
		if err != nil {
			return nil, err
		}
	}
	return func(c candidate) ([]float32, error) { return vecs[c.res.Collection+"\x00"+c.id], nil }, nil
}
