package memory

import "context"

// Searches of several collections on a cluster. A multi-collection search (InCollections)
// and a cascade (WithCascade) are built from searches of one collection each, by the same
// code as the embedded store's (searchMany, searchCascade): on a cluster each of those is
// the cluster's search of that collection (Weaviate's BM25 and nearVector, fused here), so
// the collection weights, the fused scores, Explain (CollectionWeight, Cascade and the
// cascade's note) and the order of the results mean the same on both backends.

// searchCollection is the search of one collection of a multi-collection search: the
// embedded store's, or the cluster's on a store on a cluster.
func (sr searcher) searchCollection(ctx context.Context, col, query string, so SearchOptions, st *SearchStats) ([]Result, error) {
	if cs := sr.m.cluster; cs != nil {
		return cs.searchOne(ctx, sr.m, col, query, so, st)
	}
	return sr.searchOne(ctx, col, query, so, st)
}
