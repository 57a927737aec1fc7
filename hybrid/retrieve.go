package hybrid

import "context"

// Retriever is one source of ranked lists in a hybrid search over queries of type Q: BM25,
// dense vectors, a sparse model, a remote engine. The store builds one per retriever of its
// table for each search; any caller can compose its own.
type Retriever[Q any] struct {
	// Name names its list in fusion and in each fused result's contributions.
	Name string
	// Weight is its list's weight in fusion (0 means 1; see List).
	Weight float64
	// Search returns its k best hits for q, best first.
	Search func(ctx context.Context, q Q, k int) ([]Hit, error)
}

// Retrieve runs each retriever for q, asking for k hits, one after the other, and returns
// their lists in order, ready for a FusionFunc (RRF, WeightedScore or your own): the
// composition step of a hybrid search. The first error stops it and is returned as it is.
func Retrieve[Q any](ctx context.Context, q Q, k int, rs ...Retriever[Q]) ([]List, error) {
	lists := make([]List, 0, len(rs))
	for _, r := range rs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hits, err := r.Search(ctx, q, k)
		if err != nil {
			return nil, err
		}
		lists = append(lists, List{Name: r.Name, Weight: r.Weight, Hits: hits})
	}
	return lists, nil
}
