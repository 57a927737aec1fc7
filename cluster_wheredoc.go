package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"github.com/agentmem/memory/hybrid"
	"github.com/agentmem/memory/internal/docfilter"
	"github.com/agentmem/memory/internal/store"
	"github.com/agentmem/memory/internal/weaviate"
)

// where_document on a cluster. Weaviate's text filters match tokens, not substrings (nor
// regular expressions), so the filter runs here, exactly as in the embedded store: before
// ranking, every document the Where leaves is read (its record, from the cluster, in pages)
// and checked with the same compiled predicate ($contains and $not_contains substrings,
// $regex and $not_regex, $and, $or, over the title and the text). The retrievers then rank
// only those documents: with at most maxScopeIDs of them, Weaviate's own filter restricts
// each retriever to their ids; with more, each retriever's list is filtered here, asking
// Weaviate for more candidates until the list is full or Weaviate has no more. Either way
// each retriever's list is its best matching units, as the embedded store's is, so the
// fused results are the same. The cost is a read of every record the Where leaves, per
// search (the embedded store reads them from its disk): narrow with a Where when the
// collection is large. A list that would need more than clusterMaxResults candidates
// (Weaviate's QUERY_MAXIMUM_RESULTS) is ErrNotSupported, never a shorter list.

// maxScopeIDs is the most document ids a retriever's filter lists (a variable for tests).
var maxScopeIDs = 2000

// clusterMaxResults is the most results Weaviate returns for one query (its default
// QUERY_MAXIMUM_RESULTS; a variable for tests).
var clusterMaxResults = 10000

// docScope is the documents a where_document leaves.
type docScope struct {
	pred     docfilter.Pred
	allowed  map[string]bool // document ids
	inFilter bool            // the ids are in the retrievers' Weaviate filter
}

// documentScope reads the records of the documents wf matches and keeps those pred
// accepts (nil, nil when the search has no where_document).
func (cs *clusterStore) documentScope(ctx context.Context, cc *clusterClass, wf clusterFilter, whereDoc WhereDocument) (*docScope, error) {
	if len(whereDoc) == 0 {
		return nil, nil
	}
	pred, err := docfilter.CompileDocument(whereDoc)
	if err != nil || pred == nil {
		return nil, err
	}
	ds := &docScope{pred: pred, allowed: map[string]bool{}}
	f := headFilter
	if !wf.all {
		f = weaviate.AllOf(headFilter, wf.f)
	}
	if err := cs.eachHead(ctx, cc, f, []string{propRec}, func(h weaviate.Hit) error {
		r, err := decodeRec(h.ID, h.Props[propRec])
		if err != nil {
			return err
		}
		if pred(r) {
			ds.allowed[h.ID] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	ds.inFilter = len(ds.allowed) <= maxScopeIDs
	return ds, nil
}

// narrow is wf restricted to the scope's documents when their ids fit in a filter.
func (ds *docScope) narrow(wf clusterFilter) clusterFilter {
	if ds == nil || !ds.inFilter || len(ds.allowed) == 0 {
		return wf
	}
	ids := make([]string, 0, len(ds.allowed))
	for id := range ds.allowed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	in := weaviate.Where(weaviate.PropID, weaviate.ContainsAny, ids)
	if wf.all {
		return clusterFilter{f: in}
	}
	return clusterFilter{f: weaviate.AllOf(wf.f, in)}
}

// recall wraps a retriever's run (its k best units) so that it returns the best k units of
// the scope's documents: when the ids are not in Weaviate's filter, it asks for more until
// k of them came back or Weaviate has no more. A list shorter than k is returned only when
// Weaviate ran out (searchUnits reads it so).
func (ds *docScope) recall(run func(k int) ([]hybrid.Hit, error)) func(k int) ([]hybrid.Hit, error) {
	if ds == nil || ds.inFilter {
		return run
	}
	return func(k int) ([]hybrid.Hit, error) {
		for ask := min(k, clusterMaxResults); ; ask = min(ask*4, clusterMaxResults) {
			hits, err := run(ask)
			if err != nil {
				return nil, err
			}
			out := make([]hybrid.Hit, 0, k)
			for _, h := range hits {
				if p, _ := store.SplitUnit(h.ID); ds.allowed[p] {
					out = append(out, h)
					if len(out) == k {
						return out, nil
					}
				}
			}
			if len(hits) < ask {
				return out, nil // Weaviate has no more
			}
			if ask == clusterMaxResults {
				return nil, unsupported(fmt.Sprintf("WithWhereDocument here: %d of its %d documents are among the first %d candidates, fewer than the %d the search needs (narrow it with a Where)",
					len(out), len(ds.allowed), clusterMaxResults, k))
			}
		}
	}
}

// keep drops the candidates whose records the where_document does not accept (a document
// changed since the scope was read).
func (ds *docScope) keep(cands []candidate) []candidate {
	if ds == nil {
		return cands
	}
	return slices.DeleteFunc(cands, func(c candidate) bool { return !ds.pred(c.rec) })
}
